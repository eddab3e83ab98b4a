"""Llama-family checkpoints in our decoder (lesson 28): equal to Hugging Face's `LlamaForCausalLM` and `Qwen2ForCausalLM`
on tiny random models built offline (full context, cached steps, a left-padded batch, greedy `generate`, every tensor,
parameter counts); one-line errors; the KV cache of grouped-query attention, measured."""
import json, re, sys
from dataclasses import replace
import pytest, torch
try: import torchvision                      # noqa: F401  (the CPU test machine has a torchvision built for CUDA...)
except Exception: sys.modules['torchvision'] = None   # ...so transformers must treat it as absent; nothing of ours needs it
from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM
from safetensors.torch import load_file, save_file
from transformers_scratch.models import GenerationTransformer
from transformers_scratch.generate import KVCache, generate
from transformers_scratch.hub import PretrainedError
from transformers_scratch.llama import load_pretrained, llama_name, config_from_llama

pytestmark = pytest.mark.usefixtures('one_thread')
CONFIGS = {   # name: (config class, model class, sizes)
    'llama-gqa': (LlamaConfig, LlamaForCausalLM, dict(vocab_size=101, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, intermediate_size=48, max_position_embeddings=40, rms_norm_eps=1e-6, tie_word_embeddings=False)),
    'llama-tied': (LlamaConfig, LlamaForCausalLM, dict(vocab_size=67, hidden_size=24, num_hidden_layers=3, num_attention_heads=3,
                   num_key_value_heads=1, intermediate_size=40, max_position_embeddings=32, rope_theta=100000., tie_word_embeddings=True)),
    'llama-mha': (LlamaConfig, LlamaForCausalLM, dict(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                  num_key_value_heads=2, intermediate_size=24, max_position_embeddings=24, tie_word_embeddings=True)),
    'qwen2': (Qwen2Config, Qwen2ForCausalLM, dict(vocab_size=90, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, intermediate_size=56, max_position_embeddings=40, rope_theta=1e6, rms_norm_eps=1e-6,
              tie_word_embeddings=True))}

def save_hf(folder, cfg_cls, model_cls, seed=0, **sizes):
    "A random Hugging Face model with norms and biases that are not 1 and 0, saved as `save_pretrained` saves it"
    torch.manual_seed(seed)
    hf = model_cls(cfg_cls(initializer_range=0.2, bos_token_id=None, eos_token_id=None, pad_token_id=None, **sizes)).eval()
    with torch.no_grad():
        for n, p in hf.named_parameters():
            if 'norm' in n: p.uniform_(0.5, 1.5)
            elif n.endswith('bias'): p.normal_(0, 0.3)
    hf.save_pretrained(folder)
    assert (folder/'model.safetensors').is_file() and not list(folder.glob('*.bin'))
    return hf

@pytest.fixture(scope='module', params=list(CONFIGS))
def pair(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    hf = save_hf(folder, *CONFIGS[request.param][:2], **CONFIGS[request.param][2])
    return hf, load_pretrained(folder), folder

def test_config_and_parameters(pair):
    hf, ours, folder = pair
    c, hc = ours.config, hf.config
    assert (c.emb, c.heads, c.kv_heads, c.depth, c.hidden, c.n_tokens, c.seq_len, c.tied) == (hc.hidden_size, hc.num_attention_heads,
        hc.num_key_value_heads, hc.num_hidden_layers, hc.intermediate_size, hc.vocab_size, hc.max_position_embeddings, hc.tie_word_embeddings)
    assert (c.pos, c.norm, c.mlp, c.bias, c.qkv_bias) == ('rope', 'rms', 'swiglu', False, hc.model_type == 'qwen2')
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in hf.parameters())
    used = {llama_name(k) for k in ours.state_dict()}                      # every tensor of the file feeds one of ours
    assert set(load_file(str(folder/'model.safetensors'))) <= used

def test_full_context_logits(pair):
    hf, ours, _ = pair
    x = torch.randint(0, hf.config.vocab_size, (3, hf.config.max_position_embeddings))
    with torch.no_grad(): torch.testing.assert_close(ours(x), hf(x).logits, atol=1e-4, rtol=0)

def test_cached_steps(pair):
    hf, ours, _ = pair
    x = torch.randint(0, hf.config.vocab_size, (2, 17))
    kv = KVCache(ours)
    with torch.no_grad():
        steps = torch.cat([ours(x[:, :6], cache=kv)] + [ours(x[:, i:i + 1], cache=kv) for i in range(6, 17)], 1)
        torch.testing.assert_close(steps, hf(x).logits, atol=1e-4, rtol=0)
    assert kv[0].k.shape == (2, hf.config.num_key_value_heads, ours.seq_len, ours.config.head_size)   # only the key/value heads

def test_left_padded_batch(pair):
    "Rows padded at the front: Hugging Face counts positions from each row's first real token; our logits at the real tokens agree"
    hf, ours, _ = pair
    padded = GenerationTransformer(replace(ours.config, pad_idx=0)).eval()
    padded.load_state_dict(ours.state_dict())
    x = torch.randint(1, hf.config.vocab_size, (3, 12))
    front = [0, 3, 7]
    mask = torch.ones_like(x)
    for r, n in enumerate(front): x[r, :n], mask[r, :n] = 0, 0
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        ref, out = hf(x, attention_mask=mask, position_ids=pos).logits, padded(x)
        for r, n in enumerate(front): torch.testing.assert_close(out[r, n:], ref[r, n:], atol=1e-4, rtol=0)
        torch.testing.assert_close(out[2, 7:], ours(x[2:, 7:])[0], atol=1e-5, rtol=0)   # the same row unpadded

@pytest.mark.parametrize('cache', [True, False])
def test_greedy_generate(pair, cache):
    hf, ours, _ = pair
    torch.manual_seed(1)
    n, prompt = 12, torch.randint(0, hf.config.vocab_size, (7,))
    ref = hf.generate(prompt[None], max_new_tokens=n, do_sample=False, pad_token_id=0, use_cache=cache)[0]
    assert torch.equal(generate(ours, prompt, n, greedy=True, cache=cache), ref)

def test_kv_cache_memory_smollm2_shape():
    "SmolLM2-135M's cache at 2,048 positions: 3 key/value heads instead of 9 keep a third of the bytes"
    sizes = {}
    for kvh in (9, 3):
        kv = KVCache(30, seq_len=2048)
        kv.positions(torch.zeros(1, 1))                                                     # one token, at position 0
        for l in kv.layers: l.update(torch.zeros(1, kvh, 1, 64), torch.zeros(1, kvh, 1, 64))
        sizes[kvh] = sum(t.numel() * t.element_size() for l in kv.layers for t in (l.k, l.v))
    print(f"SmolLM2-135M KV cache at 2,048 positions (fp32): {sizes[9] / 2**20:.0f} MiB with 9 kv heads, "
          f"{sizes[3] / 2**20:.0f} MiB with 3 (saves {sizes[9] - sizes[3]:,} bytes)")
    assert sizes[9] == 3 * sizes[3] == 3 * 2 * 30 * 3 * 2048 * 64 * 4

def write(folder, config, sd):
    folder.mkdir(exist_ok=True)
    (folder/'config.json').write_text(json.dumps(config))
    save_file({k: v.contiguous() for k, v in sd.items()}, str(folder/'model.safetensors'))
    return folder

@pytest.fixture(scope='module')
def good(tmp_path_factory):
    folder = tmp_path_factory.mktemp('good')
    save_hf(folder, *CONFIGS['llama-gqa'][:2], **CONFIGS['llama-gqa'][2])
    return json.loads((folder/'config.json').read_text()), load_file(str(folder/'model.safetensors'))

@pytest.mark.parametrize('change, msg', [
    (dict(model_type='mistral'), "model_type is 'mistral', expected one of 'llama', 'qwen2'"),
    (dict(rope_scaling={'rope_type': 'llama3', 'factor': 8.0}), 'this llama variant is not supported: rope_scaling='),
    (dict(rope_parameters={'rope_type': 'llama3', 'factor': 8.0, 'rope_theta': 5e5}), "rope_parameters={'rope_type': 'llama3'"),
    (dict(hidden_act='gelu'), "hidden_act='gelu'"),
    (dict(attention_bias=True), 'attention_bias=True'),
    (dict(num_key_value_heads=3), 'config num_key_value_heads: 3 does not divide heads=4'),
    (dict(num_attention_heads=5, head_dim=None), 'config num_attention_heads: 5 does not divide emb=32'),
    (dict(head_dim=16), 'head_dim=16 (not hidden_size/num_attention_heads)'),
    (dict(num_hidden_layers=10**6), 'config num_hidden_layers: expected an integer in [1, 1,024]'),
    (dict(hidden_size=8 * 4096, head_dim=8 * 1024, num_hidden_layers=1000, vocab_size=10**6), 'of memory, more than')])
def test_bad_config(tmp_path, good, change, msg):
    cfg, sd = good
    with pytest.raises(PretrainedError) as e: load_pretrained(write(tmp_path/'m', {**cfg, **change}, sd))
    assert msg in str(e.value) and '\n' not in str(e.value), str(e.value)

@pytest.mark.parametrize('edit, msg', [
    (lambda sd: sd.pop('model.layers.1.mlp.up_proj.weight'), 'missing tensors model.layers.1.mlp.up_proj.weight'),
    (lambda sd: sd.pop('lm_head.weight'), 'missing tensors lm_head.weight'),
    (lambda sd: sd.update({'model.layers.1.self_attn.q_proj.bias': torch.zeros(32)}), 'unexpected tensors model.layers.1.self_attn.q_proj.bias'),
    (lambda sd: sd.update({'model.layers.0.self_attn.k_proj.weight': torch.zeros(32, 32)}),
     'tensors of the wrong shape for config.json: model.layers.0.self_attn.k_proj.weight (32, 32) (expected (16, 32))'),
    (lambda sd: sd.update({'model.norm.weight': torch.full((32,), float('nan'))}), 'NaN or infinite values in model.norm.weight')])
def test_bad_tensors(tmp_path, good, edit, msg):
    cfg, sd = good
    sd = dict(sd); edit(sd)
    with pytest.raises(PretrainedError) as e: load_pretrained(write(tmp_path/'m', cfg, sd))
    assert msg in str(e.value) and '\n' not in str(e.value), str(e.value)

def test_files_and_hub_name(tmp_path, good, monkeypatch):
    cfg, sd = good
    folder = write(tmp_path/'m', cfg, sd)
    (folder/'model.safetensors').rename(folder/'pytorch_model.bin')
    with pytest.raises(PretrainedError, match='pickled .bin/.pt files are not read'): load_pretrained(folder)
    monkeypatch.setenv('HF_HUB_OFFLINE', '1'); monkeypatch.setenv('HF_HOME', str(tmp_path/'hf'))
    with pytest.raises(PretrainedError, match='not in the Hugging Face cache'): load_pretrained('HuggingFaceTB/not-cached-here')
    with pytest.raises(PretrainedError, match='SmolLM2-135M'): load_pretrained('no/such/thing')

def test_seq_len_cap(tmp_path, good):
    cfg, sd = good
    m = load_pretrained(write(tmp_path/'m', cfg, sd), seq_len=16)
    assert m.seq_len == 16 and m.config == config_from_llama(cfg, seq_len=16)
    with pytest.raises(ValueError, match='seq_len=16'): m(torch.zeros(1, 17, dtype=torch.long))

# --- `tfs generate --pretrained`: a Llama-family folder, told from GPT-2 by its config.json --------------------------
from faultkit import tfs, one_line   # `tfs` in-process: (exit code, stdout, stderr)

CHARS = " abcdefghijklmnopqrstuvwxyz.,'"

def with_tokenizer(folder):
    "`folder` with a character-level tokenizer.json (ids 0..30, below every tiny model's vocabulary)"
    from tokenizers import Tokenizer, models, decoders
    bpe = Tokenizer(models.BPE(vocab={'<|endoftext|>': 0, **{c: i + 1 for i, c in enumerate(CHARS)}}, merges=[]))
    bpe.decoder = decoders.Fuse()
    bpe.save(str(folder/'tokenizer.json'))
    return bpe

@pytest.fixture(scope='module', params=['llama-gqa', 'qwen2'])
def cli_folder(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(f'cli-{request.param}')
    hf = save_hf(folder, *CONFIGS[request.param][:2], **CONFIGS[request.param][2])
    return hf, with_tokenizer(folder), folder

def test_cli_generate_pretrained(cli_folder, capsys):
    "`tfs generate --pretrained FOLDER` runs a Llama-family model: greedy (top-k 1) text equal to Hugging Face's `generate`, then the JSON line"
    hf, bpe, folder = cli_folder
    code, out, err = tfs(capsys, 'generate', '--pretrained', folder, '--prompt', 'the cat', '--n', '9', '--top-k', '1')
    assert code == 0 and err == '', err
    ids = torch.tensor([[CHARS.index(c) + 1 for c in 'the cat']])
    ref = hf.generate(ids, max_new_tokens=9, do_sample=False, pad_token_id=0)[0].tolist()
    text, line = out.rsplit('\n', 2)[:2]
    assert out == f"{text}\n{line}\n" and text == bpe.decode(ref) and text.startswith('the cat')
    res = json.loads(line)
    assert (res['model'], res['prompt_tokens'], res['new_tokens']) == (str(folder), 7, 9) and res['tokens_per_s'] > 0

def test_cli_generate_pretrained_compiled(tmp_path, capsys):
    "`--compile`: the same greedy text from the compiled decoding step; the JSON line adds the compile time and times decoding alone"
    folder = tmp_path/'gqa'; folder.mkdir()
    save_hf(folder, *CONFIGS['llama-gqa'][:2], **CONFIGS['llama-gqa'][2]); with_tokenizer(folder)
    args = ('generate', '--pretrained', folder, '--prompt', 'the cat', '--n', '9', '--top-k', '1')
    (c1, plain, _), (c2, compiled, err) = tfs(capsys, *args), tfs(capsys, *args, '--compile')
    assert c1 == c2 == 0 and 'decoding eagerly' not in err, err
    assert compiled.rsplit('\n', 2)[0] == plain.rsplit('\n', 2)[0]
    res = json.loads(compiled.rsplit('\n', 2)[1])
    assert res['compile_s'] > 0 and res['tokens_per_s'] > 0 and 'compile_s' not in json.loads(plain.rsplit('\n', 2)[1])

def test_cli_generate_pretrained_refusals(tmp_path, good, capsys, monkeypatch):
    "Bad input to `--pretrained`: one line naming the flag, exit 2, nothing on stdout"
    cfg, sd = good
    f = write(tmp_path/'m', cfg, sd)                                           # no tokenizer.json yet
    cases = [([f], rf"--pretrained: the folder {f} has no tokenizer\.json"),
             ([f, '--quick'], '--pretrained runs a pretrained model: drop --quick'),
             ([f, '--data', 'imdb_sample'], '--pretrained runs a pretrained model: drop --data'),
             ([tmp_path/'no-such-folder/x/y'], r"--pretrained: '.*no-such-folder/x/y' is not a folder here, nor a Hugging Face model name such as gpt2, "
                                                r"HuggingFaceTB/SmolLM2-135M"),
             ([f/'config.json'], r"--pretrained: .*config\.json is a file: give the folder"),
             (['HuggingFaceTB/not-cached-here'], r"--pretrained: 'HuggingFaceTB/not-cached-here' is not in the Hugging Face cache and huggingface\.co "
                                                 "cannot be reached")]
    g = write(tmp_path/'mistral', {**cfg, 'model_type': 'mistral', 'architectures': ['MistralForCausalLM']}, sd)
    cases.append(([g], rf"--pretrained: '{re.escape(str(g/'config.json'))}' is neither GPT-2's nor a Llama-family config\.json "
                       r"\(model_type is 'mistral', architectures \['MistralForCausalLM'\]; expected 'gpt2', 'llama', 'qwen2'\)"))
    h = write(tmp_path/'small', {**cfg, 'vocab_size': 20}, {k: v[:20] if v.shape[0] == 101 else v for k, v in sd.items()})
    with_tokenizer(h)                                                          # 31 ids, a model of 20
    cases.append(([h], rf"--pretrained: tokenizer: the tokenizer of '{re.escape(str(h))}' has 31 tokens and its model 20"))
    monkeypatch.setenv('HF_HUB_OFFLINE', '1'); monkeypatch.setenv('HF_HOME', str(tmp_path/'hf'))
    for args, pattern in cases:
        code, out, err = tfs(capsys, 'generate', '--pretrained', *args, '--n', '3')
        one_line(code, err, rf"^tfs generate: error: {pattern}")
        assert out == ''

# --- lesson 28's SmolLM2 cell, `llama_tour`, on tiny random folders standing in for the hub ---------------------------
from transformers_scratch.llama import llama_tour

def test_llama_tour(cli_folder, capsys):
    "The online cell's code path: our logits against `transformers`' model, `generate`, the KV cache with kv_heads vs one per query head"
    hf, bpe, folder = cli_folder
    res = llama_tour(folder, 'the cat', n=6, device='cpu', seq_len=30)
    out = capsys.readouterr().out.splitlines()
    c = hf.config
    assert res['logit_diff'] < 1e-4 and res['same_greedy'] is True, res
    ids = torch.tensor([[CHARS.index(ch) + 1 for ch in 'the cat']])
    assert res['greedy'] == bpe.decode(hf.generate(ids, max_new_tokens=6, do_sample=False, pad_token_id=0)[0].tolist())
    assert res['sampled'].startswith('the cat') and res['parameters'] == sum(p.numel() for p in hf.parameters())
    s = c.hidden_size // c.num_attention_heads                                          # 2 (k, v) · depth · 1 row · 30 positions · s · 4 bytes
    assert res['kv_bytes'] == 2 * c.num_hidden_layers * c.num_key_value_heads * 30 * s * 4
    assert res['kv_bytes_mha'] == res['kv_bytes'] * c.num_attention_heads // c.num_key_value_heads
    assert len(out) == 5 and out[3].startswith("transformers' ") and 'largest logit difference' in out[3], out
    assert out[4].startswith('KV cache for 30 positions (float32): ') and 'KiB with 2 key/value heads' in out[4], out

def test_llama_tour_without_transformers(cli_folder, capsys, monkeypatch):
    "Without `transformers` the comparison is one line saying so; the rest runs"
    _, _, folder = cli_folder
    monkeypatch.setitem(sys.modules, 'transformers', None)
    res = llama_tour(folder, 'the cat', n=3, device='cpu', seq_len=20)
    out = capsys.readouterr().out
    assert res['logit_diff'] is None and res['same_greedy'] is None and res['kv_bytes'] > 0
    assert sum(l.startswith('skipped: the comparison') for l in out.splitlines()) == 1, out
