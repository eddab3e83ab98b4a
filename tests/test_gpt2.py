"""GPT-2 in our decoder (lesson 24): equal to Hugging Face's on tiny random models, offline; one-line errors; `tfs generate --pretrained` on a GPT-2.
Its classifier (lesson 25, `gpt2_classify`): saved as weights plus plain data and read back; `tfs classify --gpt2`."""
import json, os, subprocess, sys, time, pathlib
from dataclasses import asdict, replace
import pytest, torch
try: import torchvision                      # noqa: F401  (the CPU test machine has a torchvision built for CUDA...)
except Exception: sys.modules['torchvision'] = None   # ...so transformers must treat it as absent; nothing of ours needs it
from transformers import GPT2Config, GPT2LMHeadModel
from safetensors.torch import load_file, save_file
from transformers_scratch.gpt2 import load_gpt2, save_gpt2, gpt2_tokenizer, config_from_gpt2, gpt2_config
from transformers_scratch.hub import PretrainedError
from transformers_scratch.generate import generate

ROOT = pathlib.Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.usefixtures('one_thread')
CONFIGS = {'small': dict(vocab_size=101, n_positions=24, n_embd=16, n_layer=2, n_head=4),
           'odd': dict(vocab_size=67, n_positions=17, n_embd=12, n_layer=3, n_head=3, n_inner=24, layer_norm_epsilon=1e-6,
                       activation_function='gelu')}

def save_hf(folder, seed=0, **cfg):
    torch.manual_seed(seed)
    hf = GPT2LMHeadModel(GPT2Config(initializer_range=0.2, bos_token_id=0, eos_token_id=0, **cfg)).eval()
    hf.save_pretrained(folder)
    return hf

@pytest.fixture(scope='module', params=list(CONFIGS))
def pair(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    hf = save_hf(folder, **CONFIGS[request.param])
    return hf, load_gpt2(folder), folder, CONFIGS[request.param]

def test_logits_equal(pair):
    hf, ours, _, cfg = pair
    assert not ours.training and ours.toprobs.weight is ours.token_emb.weight
    g = torch.Generator().manual_seed(1)
    for shape in ((1, 1), (3, cfg['n_positions'])):              # one token; a full-context batch
        x = torch.randint(0, cfg['vocab_size'], shape, generator=g)
        with torch.no_grad(): a, b = ours(x), hf(x).logits
        assert a.dtype == b.dtype == torch.float32
        assert (a - b).abs().max() < 1e-4, (shape, (a - b).abs().max())

def test_parameter_count(pair):
    hf, ours, _, _ = pair
    assert sum(p.numel() for p in ours.parameters()) == hf.num_parameters()

@pytest.mark.parametrize('cache', [True, False])
def test_greedy_equal(pair, cache):
    hf, ours, _, cfg = pair
    prompt = torch.randint(0, cfg['vocab_size'], (4,), generator=torch.Generator().manual_seed(2))
    n = cfg['n_positions'] - 4
    ref = hf.generate(prompt[None], max_new_tokens=n, do_sample=False, pad_token_id=0, use_cache=cache)[0]
    assert torch.equal(generate(ours, prompt, n, greedy=True, cache=cache), ref)

def test_weights_keep_conv1d_memory_order(pair):
    """load_gpt2 stores every 2-D parameter column-major: the Conv1D weights in the file's (in, out) order (the faster one
    for one-token steps on a CPU), the embeddings likewise (the tied head reads wte.T row after row); only the layout differs"""
    hf, ours, _, cfg = pair
    for n, w in ours.named_parameters():
        if w.dim() == 2: assert w.T.is_contiguous() and not w.is_contiguous(), n
    e = cfg['n_embd']
    assert torch.equal(ours.trunk.blocks[0].ff[0].weight, hf.transformer.h[0].mlp.c_fc.weight.T)
    assert torch.equal(ours.trunk.blocks[0].attention.tokeys.weight, hf.transformer.h[0].attn.c_attn.weight[:, e:2 * e].T)
    x = torch.randint(0, cfg['vocab_size'], (2, 5), generator=torch.Generator().manual_seed(5))
    with torch.no_grad(): torch.testing.assert_close(ours(x, last=True), ours(x)[:, -1:])   # the prefill's head at one position

def test_every_tensor_used(tmp_path):
    cfg = CONFIGS['small']
    save_hf(tmp_path/'base', **cfg)
    sd = load_file(str(tmp_path/'base'/'model.safetensors'))
    x = torch.randint(0, cfg['vocab_size'], (2, cfg['n_positions']), generator=torch.Generator().manual_seed(3))
    with torch.no_grad(): base = load_gpt2(tmp_path/'base')(x)
    (tmp_path/'p').mkdir(); (tmp_path/'p'/'config.json').write_text((tmp_path/'base'/'config.json').read_text())
    assert len(sd) == 4 + 12 * cfg['n_layer']
    for k in sd:
        save_file({**sd, k: sd[k] + 0.5 * torch.randn(sd[k].shape, generator=torch.Generator().manual_seed(4))}, str(tmp_path/'p'/'model.safetensors'))  # noise: LayerNorm hides a constant shift
        with torch.no_grad(): out = load_gpt2(tmp_path/'p')(x)
        assert (out - base).abs().max() > 1e-3, f"perturbing {k} changed nothing"

def one_line(e): return '\n' not in str(e.value) and len(str(e.value)) < 400

def test_errors(tmp_path):
    save_hf(tmp_path/'ok', **CONFIGS['small'])
    (tmp_path/'noweights').mkdir(); (tmp_path/'noweights'/'config.json').write_text((tmp_path/'ok'/'config.json').read_text())
    with pytest.raises(PretrainedError, match='has no model.safetensors') as e: load_gpt2(tmp_path/'noweights')
    assert one_line(e)
    (tmp_path/'noweights'/'pytorch_model.bin').write_bytes(b'x')
    with pytest.raises(PretrainedError, match='pickled'): load_gpt2(tmp_path/'noweights')
    (tmp_path/'empty').mkdir()
    with pytest.raises(PretrainedError, match='no config.json'): load_gpt2(tmp_path/'empty')
    bert = tmp_path/'bert'; bert.mkdir()
    (bert/'config.json').write_text(json.dumps({'model_type': 'bert'})); (bert/'model.safetensors').write_bytes(b'')
    with pytest.raises(PretrainedError, match="model_type is 'bert', expected 'gpt2'") as e: load_gpt2(bert)
    assert one_line(e)
    sd = load_file(str(tmp_path/'ok'/'model.safetensors'))
    for name, bad, pat in (('missing', {k: v for k, v in sd.items() if 'h.1.mlp.c_fc.weight' not in k}, 'missing tensors transformer.h.1|missing tensors h.1.mlp.c_fc.weight'),
                           ('extra', {**sd, 'transformer.h.7.ln_1.weight': torch.ones(16)}, 'unexpected tensors h.7.ln_1.weight'),
                           ('shape', {**sd, 'transformer.wpe.weight': torch.ones(5, 16)}, 'wrong shape')):
        d = tmp_path/name; d.mkdir()
        (d/'config.json').write_text((tmp_path/'ok'/'config.json').read_text()); save_file(bad, str(d/'model.safetensors'))
        with pytest.raises(PretrainedError, match=pat) as e: load_gpt2(d)
        assert one_line(e)

def test_hub_name_offline_fails_fast(monkeypatch, tmp_path):
    monkeypatch.setenv('HF_HOME', str(tmp_path))           # an empty cache
    monkeypatch.setenv('TFS_OFFLINE', '1')
    t0 = time.time()
    with pytest.raises(PretrainedError, match="'gpt2' is not in the Hugging Face cache and huggingface.co cannot be reached") as e: load_gpt2('gpt2')
    assert one_line(e) and time.time() - t0 < 5
    with pytest.raises(PretrainedError, match='not a folder here'): load_gpt2('./no/such/folder')

def test_config_refuses_variants():
    with pytest.raises(PretrainedError, match='tie_word_embeddings=False'): config_from_gpt2(dict(model_type='gpt2', n_embd=8, tie_word_embeddings=False))
    with pytest.raises(PretrainedError, match="activation_function='swish'"): config_from_gpt2(dict(model_type='gpt2', n_embd=8, activation_function='swish'))
    with pytest.raises(PretrainedError, match=r"n_inner=100 \(not a multiple of n_embd=768\)"): config_from_gpt2(dict(gpt2_config(), n_inner=100))

def test_config_names_config_json_keys():
    "`config_from_gpt2` is `config_from_dict` told config.json's names: one ModelConfig, errors that name the file's keys"
    c = config_from_gpt2(dict(gpt2_config('gpt2-medium'), n_inner=2048, layer_norm_epsilon=1e-6, activation_function='gelu'))
    assert (c.emb, c.heads, c.depth, c.seq_len, c.n_tokens, c.mult, c.eps, c.act) == (1024, 16, 24, 1024, 50257, 2, 1e-6, 'gelu')
    assert c.tied and c.qkv_bias and c.prenorm and c.pos == 'learned'
    for forged, pat in ((dict(n_layer=10**9), r"'x/config.json' is not a GPT-2 config.json \(damaged: config n_layer: expected an integer"),
                        (dict(n_head=7), 'config n_head: 7 does not divide'), (dict(vocab_size='big'), 'config vocab_size: '),
                        (dict(layer_norm_epsilon=0), 'config layer_norm_epsilon: '), (dict(n_embd=None), 'config n_embd: '),
                        (dict(n_embd=2**16, n_head=1, n_layer=1024), 'config n_embd: .* of memory')):
        with pytest.raises(PretrainedError, match=pat) as e: config_from_gpt2(dict(gpt2_config(), **forged), 'x/config.json')
        assert one_line(e)

def test_save_gpt2_writes_the_config(tmp_path):
    "`save_gpt2` writes config.json from `model.config` (n_inner, eps, activation), each file all-or-nothing; a non-GPT-2 shape is refused"
    from transformers_scratch.models import GenerationTransformer
    cfg = config_from_gpt2(dict(gpt2_config(), n_embd=12, n_head=3, n_layer=2, n_positions=8, vocab_size=20, n_inner=24,
                                layer_norm_epsilon=1e-6, activation_function='gelu'))
    lm = GenerationTransformer(cfg)
    save_gpt2(lm, tmp_path/'m')
    j = json.loads((tmp_path/'m'/'config.json').read_text())
    assert (j['n_inner'], j['layer_norm_epsilon'], j['activation_function'], j['n_layer']) == (24, 1e-6, 'gelu', 2)
    assert sorted(f.name for f in (tmp_path/'m').iterdir()) == ['config.json', 'model.safetensors']     # no temporary file left
    back = load_gpt2(tmp_path/'m')
    assert back.config == replace(cfg, fast=True)
    x = torch.randint(0, 20, (2, 8))
    with torch.no_grad(): torch.testing.assert_close(back(x), lm.eval()(x))
    hf = GPT2LMHeadModel.from_pretrained(tmp_path/'m').eval()                    # Hugging Face reads what we wrote
    with torch.no_grad(): torch.testing.assert_close(hf(x).logits, back(x), atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="GPT-2's files cannot hold a model with prenorm=False"):
        save_gpt2(GenerationTransformer(replace(cfg, prenorm=False)), tmp_path/'post')
    assert not (tmp_path/'post').exists() or not any((tmp_path/'post').iterdir())

def saved_with_tokenizer(folder):
    from tokenizers import ByteLevelBPETokenizer
    tok = ByteLevelBPETokenizer()
    tok.train_from_iterator(["the cat sat on the mat, and the dog sat on the log."] * 20, vocab_size=300, special_tokens=['<|endoftext|>'])
    folder.mkdir(parents=True, exist_ok=True)
    tok.save_model(str(folder))
    save_hf(folder, vocab_size=tok.get_vocab_size(), n_positions=32, n_embd=16, n_layer=1, n_head=2)
    return folder

def test_tokenizer_from_folder(tmp_path):
    tok = gpt2_tokenizer(saved_with_tokenizer(tmp_path/'m'))
    ids = tok.encode("the cat sat")
    assert tok.decode(ids) == "the cat sat" and tok.eos_id is not None and all(0 <= i < tok.n_vocab for i in ids)
    with pytest.raises(PretrainedError, match='no tokenizer files'): gpt2_tokenizer(tmp_path)

def tfs(*args, env=None):
    env = {**os.environ, 'PYTHONPATH': str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, '-c', 'from transformers_scratch.cli import main; main()', *args],
                          capture_output=True, text=True, env=env, timeout=300)

def test_cli_generate_gpt2(tmp_path):
    folder = saved_with_tokenizer(tmp_path/'m')
    r = tfs('generate', '--pretrained', str(folder), '--prompt', 'the cat', '--n', '8', '--top-k', '5', '--seed', '1')
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert lines[0].startswith('the cat')
    res = json.loads(lines[-1])
    assert res['new_tokens'] == 8 and res['model'] == str(folder) and res['tokens_per_s'] > 0
    r = tfs('generate', '--pretrained', 'gpt2', '--prompt', 'hi', env={'HF_HOME': str(tmp_path/'hf'), 'TFS_OFFLINE': '1'})
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and 'huggingface.co cannot be reached' in r.stderr, r.stderr
    r = tfs('generate', '--pretrained', str(folder), '--quick')
    assert r.returncode == 2 and '--pretrained runs a pretrained model: drop --quick' in r.stderr

def test_cli_classify_gpt2_quick():
    r = tfs('classify', '--gpt2', 'gpt2', '--quick', '--epochs', '1', env={'TFS_OFFLINE': '1'})
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res['quick'] and res['dataset'] == 'imdb_sample' and res['valid_rows'] == 200 and 0 <= res['accuracy'] <= 1
    assert 'tiny randomly initialised GPT-2-shaped model' in r.stderr
    r = tfs('classify', '--gpt2', 'gpt2', '--data', 'ag_news')
    assert r.returncode == 2 and '--gpt2 takes --data imdb_sample or imdb' in r.stderr

# --- the fine-tuned classifier: `--out`, weights plus plain data, loaded back with weights_only=True ----------------
from transformers_scratch.gpt2_classify import (GPT2Classifier, GPT2TextClassifier, save_gpt2_classifier, load_gpt2_classifier,
                                                is_gpt2_classifier, predict_gpt2_text)
from transformers_scratch.runs import run_gpt2_classify
import transformers_scratch.gpt2_classify as gpt2_classify
import transformers_scratch.gpt2 as gpt2   # where `run_gpt2_classify` takes its loaders from when it runs
FORMAT = 'transformers_scratch.gpt2_classify/2'

TEXTS = ["the cat sat on the mat", "a dog, and a log!", "the mat sat on the cat " * 5, "zebra quartz jumps", "é ü — 😀"]

def with_tokenizer_json(folder):
    "`saved_with_tokenizer`, its tokenizer rewritten as one tokenizer.json (the other kind of tokenizer folder)"
    from tokenizers import ByteLevelBPETokenizer
    saved_with_tokenizer(folder)
    tok = ByteLevelBPETokenizer.from_file(str(folder/'vocab.json'), str(folder/'merges.txt'))
    tok.save(str(folder/'tokenizer.json')); (folder/'vocab.json').unlink(); (folder/'merges.txt').unlink()
    return folder

@pytest.mark.parametrize('kind', ['vocab+merges', 'tokenizer.json'])
def test_gpt2_classifier_round_trip(tmp_path, kind):
    folder = (saved_with_tokenizer if kind == 'vocab+merges' else with_tokenizer_json)(tmp_path/'m')
    tok = gpt2_tokenizer(folder)
    from tokenizers import Tokenizer, ByteLevelBPETokenizer             # read from memory: the same ids as the library's own readers
    ref = (ByteLevelBPETokenizer.from_file(str(folder/'vocab.json'), str(folder/'merges.txt')) if kind == 'vocab+merges'
           else Tokenizer.from_file(str(folder/'tokenizer.json')))
    for t in TEXTS: assert tok.encode(t) == ref.encode(t).ids and tok.decode(tok.encode(t)) == t
    torch.manual_seed(5)
    m = GPT2Classifier(load_gpt2(folder), 3, tok.eos_id, pool='mean')
    with torch.no_grad(): m.head.weight.normal_()                      # a head far from its initialisation
    clf = GPT2TextClassifier(m, tok, ['neg', 'neutral', 'pos'], seq_len=6)
    f = save_gpt2_classifier(clf, tmp_path/'out'/'clf.pt', data='test')
    ck = torch.load(f, weights_only=True)                              # plain data and tensors: nothing to unpickle
    assert ck['format'] == FORMAT and ck['classes'] == ['neg', 'neutral', 'pos'] and ck['data'] == 'test'
    assert ck['config'] == asdict(m.config) and m.config.n_classes == 3 and m.config.emb == 16
    assert set(ck['tokenizer']) == ({'vocab.json', 'merges.txt'} if kind == 'vocab+merges' else {'tokenizer.json'})
    assert all(isinstance(v, str) for v in ck['tokenizer'].values()) and all(v.device.type == 'cpu' for v in ck['state_dict'].values())
    back = load_gpt2_classifier(f)
    assert not back.model.training and back.model.pool == 'mean' and back.seq_len == 6 and back.classes == clf.classes
    assert back.model.config == m.config
    assert torch.equal(back.probs(TEXTS), clf.probs(TEXTS))            # the same predictions, to the bit
    assert torch.allclose(back.probs(TEXTS, bs=2), back.probs(TEXTS), atol=1e-5)   # right padding changes nothing (but rounding)
    r = back(TEXTS[2])
    assert r['label'] in clf.classes and r['truncated'] and r['tokens'] > 6 and abs(sum(r['probabilities'].values()) - 1) < 1e-3
    assert is_gpt2_classifier(f) and predict_gpt2_text(f, TEXTS[2]) == r
    assert m.training                                                   # probs leaves the model's mode as it found it

def test_load_gpt2_classifier_errors(tmp_path):
    from transformers_scratch.checkpoints import save_checkpoint
    with pytest.raises(FileNotFoundError, match=r"no such file .*tfs classify --gpt2 NAME_OR_FOLDER --out") as e: load_gpt2_classifier(tmp_path/'no.pt')
    assert one_line(e)
    (tmp_path/'pickled.pt').write_bytes(__import__('pickle').dumps({'format': FORMAT}))
    with pytest.raises(ValueError, match='pickled Python objects'): load_gpt2_classifier(tmp_path/'pickled.pt')
    save_checkpoint(tmp_path/'other.pt', 'transformers_scratch.classify/1', torch.nn.Linear(2, 2), config={})
    with pytest.raises(ValueError, match=r"is not a GPT-2 classifier saved by `tfs classify --gpt2 \.\.\. --out`$"): load_gpt2_classifier(tmp_path/'other.pt')
    folder = saved_with_tokenizer(tmp_path/'m')
    tok = gpt2_tokenizer(folder)
    m = GPT2Classifier(load_gpt2(folder), 2, tok.eos_id)
    good = dict(config=asdict(m.config), tokenizer=tok.files, classes=['a', 'b'], seq_len=8, pool='last', pad_id=tok.eos_id)
    for name, bad, pat in (('classes', dict(classes=[]), 'damaged: classes'),
                           ('tok', dict(tokenizer={'vocab.json': '{'}), r"expected tokenizer.json, or vocab.json and merges.txt in '.*tok.pt'"),
                           ('tok2', dict(tokenizer={}), 'damaged: tokenizer'), ('len', dict(seq_len=-1), 'damaged: seq_len=-1'),
                           ('cfg', dict(config={'model_type': 'gpt2'}), r"cfg.pt' is not a GPT-2 classifier .* \(damaged: config has unknown keys \['model_type'\]\)"),
                           ('huge', dict(config={**good['config'], 'emb': 2**16, 'heads': 1}), r'damaged: config emb: .* GiB of memory'),
                           ('heads', dict(config={**good['config'], 'heads': 3}), r'damaged: config heads: 3 does not divide emb=16'),
                           ('classes3', dict(classes=['a', 'b', 'c']), r'damaged: config n_classes=2, but 3 classes'),
                           ('seq', dict(seq_len=33), r"damaged: seq_len=33 is more than the model's config seq_len=32"),
                           ('shape', dict(config={**good['config'], 'n_tokens': good['config']['n_tokens'] + 1}), r'damaged: weights: .*size mismatch')):
        save_checkpoint(tmp_path/f'{name}.pt', FORMAT, m, **{**good, **bad})
        with pytest.raises(ValueError, match=pat) as e: load_gpt2_classifier(tmp_path/f'{name}.pt')
        assert one_line(e), name
    for p in ('no.pt', 'pickled.pt', 'other.pt'): assert not is_gpt2_classifier(tmp_path/p)
    assert not is_gpt2_classifier(tmp_path)

def test_run_gpt2_classify_bad_out_fails_before_work(tmp_path, monkeypatch):
    (tmp_path/'file').write_text('x')
    def no_work(*a, **k): raise AssertionError("trained before checking --out")
    monkeypatch.setattr(gpt2, 'tiny_gpt2', no_work); monkeypatch.setattr(gpt2, 'load_gpt2', no_work)
    for out, pat in ((tmp_path/'file'/'m.pt', "is a file, not a folder"), (tmp_path, 'is a folder'), ('', 'empty')):
        with pytest.raises(ValueError, match=pat): run_gpt2_classify(str(tmp_path/'m'), 'imdb_sample', quick=True, out=out)

def test_run_gpt2_classify_folder_out(tmp_path):
    "Fine-tune a folder's GPT-2 (not the quick path's tiny stand-in) and save it: the file holds the folder's config and tokenizer"
    folder = saved_with_tokenizer(tmp_path/'m')
    res = run_gpt2_classify(str(folder), 'imdb_sample', gpt2_classify.GPT2_CLASSIFY_FULL.replace(epochs=1, seq_len=16), out=tmp_path/'clf.pt')
    assert res['model'] == str((tmp_path/'clf.pt').absolute()) and res['source'] == str(folder) and not res['quick'] and res['seq_len'] == 16
    clf = load_gpt2_classifier(tmp_path/'clf.pt')
    assert clf.model.config == replace(load_gpt2(folder).config, n_classes=2) and clf.classes == ['negative', 'positive'] and clf.seq_len == 16
    assert clf.tok.encode("the cat sat") == gpt2_tokenizer(folder).encode("the cat sat")
    assert run_gpt2_classify(str(folder), 'imdb_sample', gpt2_classify.GPT2_CLASSIFY_FULL.replace(epochs=1, seq_len=16))['model'] is None    # no --out: nothing saved

def test_cli_classify_gpt2_out(tmp_path):
    from transformers_scratch.data import imdb_sample_df
    folder, out = saved_with_tokenizer(tmp_path/'m'), tmp_path/'models'/'gpt2-clf.pt'
    r = tfs('classify', '--gpt2', str(folder), '--quick', '--epochs', '1', '--out', str(out), env={'TFS_OFFLINE': '1'})
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res['model'] == str(out.absolute()) and out.is_file() and res['source'] == 'tiny random GPT-2 shape (quick)'
    ck = torch.load(out, weights_only=True)
    assert ck['format'] == FORMAT and ck['data'] == 'imdb_sample'
    clf = load_gpt2_classifier(out)
    v = imdb_sample_df().query('is_valid')
    acc = (clf.probs(v.text.tolist()).argmax(1) == torch.tensor([clf.classes.index(l) for l in v.label])).float().mean().item()
    assert abs(acc - res['accuracy']) <= 1 / len(v) + 1e-4, (acc, res['accuracy'])   # other batches, other pads: one review may flip
    text = v.text.iloc[0]
    r = tfs('predict', '--model', str(out), text)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1]) == json.loads(json.dumps(clf(text)))
    assert 'tfs: note: the text has' in r.stderr                     # a review is longer than the 128 tokens read
    r = tfs('predict', '--model', str(out), '   ')
    assert r.returncode == 2 and 'empty' in r.stderr

def test_cli_classify_gpt2_bad_out(tmp_path):
    folder = saved_with_tokenizer(tmp_path/'m')
    (tmp_path/'file.txt').write_text('x')
    for out, pat in ((tmp_path/'file.txt'/'m.pt', 'is a file, not a folder'), (tmp_path, 'is a folder')):
        t0 = time.time()
        r = tfs('classify', '--gpt2', str(folder), '--quick', '--out', str(out), env={'TFS_OFFLINE': '1'})
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and pat in r.stderr and '--out' in r.stderr, r.stderr
        assert 'fine-tuning' not in r.stderr and not r.stdout.strip() and time.time() - t0 < 60
