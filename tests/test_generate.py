"Generation: argument checks, KV-cache equality, seeds, cropping, text errors, and `tfs generate` end to end."
import json, math, os, subprocess
from dataclasses import asdict, replace
import pytest, torch
from transformers_scratch.models import GenerationTransformer
from transformers_scratch.generate import generate, generate_text, next_token, Sampling, validate_new_tokens, MIN_TEMPERATURE, MAX_NEW_TOKENS
from transformers_scratch.config import ModelConfig
from transformers_scratch.lmdata import CharVocab, lm_dls
from transformers_scratch.lm import save_lm, load_lm, lm_learner, LM_QUICK, LM_FULL
from transformers_scratch.runs import run_generate
from transformers_scratch.cli import main

def model(seq_len=12, n_tokens=23, **kw):
    torch.manual_seed(0)
    return GenerationTransformer(ModelConfig(emb=32, heads=4, depth=2, seq_len=seq_len, n_tokens=n_tokens, **kw)).eval()

PROMPT = torch.tensor([3, 1, 4, 1, 5, 9, 2])

# --- arguments ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('kw, err, pat', [
    (dict(temperature=0), ValueError, r'temperature.*greedy=True'), (dict(temperature=-0.5), ValueError, 'temperature'),
    (dict(temperature=float('nan')), ValueError, 'temperature'), (dict(temperature=float('inf')), ValueError, 'temperature'),
    (dict(temperature='1'), TypeError, 'temperature'), (dict(temperature=MIN_TEMPERATURE / 2), ValueError, 'temperature'),
    (dict(top_k=0), ValueError, 'top_k'), (dict(top_k=-3), ValueError, 'top_k'), (dict(top_k=1.5), TypeError, 'top_k'),
    (dict(top_p=0), ValueError, r'top_p.*\(0, 1\]'), (dict(top_p=1.01), ValueError, 'top_p'), (dict(top_p=-0.1), ValueError, 'top_p'),
    (dict(min_p=1), ValueError, r'min_p.*\[0, 1\)'), (dict(min_p=-0.01), ValueError, 'min_p'),
    (dict(greedy='yes'), TypeError, 'greedy'), (dict(seed=1, generator=torch.Generator()), ValueError, 'seed'),
    (dict(exclude=[23]), ValueError, 'exclude'), (dict(exclude=[-1]), ValueError, 'exclude'),
    (dict(exclude=range(23)), ValueError, 'exclude'), (dict(exclude=[1.5]), TypeError, 'exclude'),
])
def test_bad_sampling_arguments(kw, err, pat):
    with pytest.raises(err, match=pat): generate(model(), PROMPT, 5, **kw)

@pytest.mark.parametrize('prompt, n, err, pat', [
    (torch.tensor([], dtype=torch.long), 5, ValueError, 'empty'), (PROMPT.float(), 5, TypeError, 'integers'),
    (PROMPT.bool(), 5, TypeError, 'integers'), (PROMPT[None], 5, ValueError, '1-D'), ([3, 1, 4], 5, TypeError, 'prompt'),
    (torch.tensor([3, 23]), 5, ValueError, r'\[0, 23\)'), (torch.tensor([-1]), 5, ValueError, r'\[0, 23\)'),
    (PROMPT, -1, ValueError, 'n:'), (PROMPT, 2.0, TypeError, 'n:'), (PROMPT, MAX_NEW_TOKENS + 1, ValueError, 'n:'),
])
def test_bad_prompt_or_n(prompt, n, err, pat):
    with pytest.raises(err, match=pat): generate(model(), prompt, n)

def test_one_validation_of_sampling_arguments():
    "`Sampling` holds the limits (`MIN_TEMPERATURE`) and checks them when made; `validate_new_tokens` checks `n`"
    Sampling(temperature=MIN_TEMPERATURE, top_k=1, top_p=1, min_p=0); validate_new_tokens(MAX_NEW_TOKENS)
    with pytest.raises(ValueError, match='temperature'): Sampling(temperature=MIN_TEMPERATURE * 0.99)
    for n in (MAX_NEW_TOKENS + 1, -1):
        with pytest.raises(ValueError, match='n:'): validate_new_tokens(n)
        with pytest.raises(ValueError, match='n:'): run_generate(quick=True, n=n)          # before any training
    with pytest.raises(TypeError, match='sampling: expected a Sampling'): run_generate(quick=True, sampling=dict(top_k=3))
    with pytest.raises(TypeError, match='not both'): generate(model(), PROMPT, 3, Sampling(), top_k=2)

def test_sampling_checked_once_per_tfs_generate(tmp_path, monkeypatch, capsys):
    "One `tfs generate` makes its `Sampling` once, from the flags; `run_generate` and `generate` check nothing again"
    r = LM_QUICK['word'].replace(emb=16, heads=2, depth=1)
    dls, codec = lm_dls('imdb_sample', 'word', r, device='cpu')
    learn = lm_learner(dls, r.model, r.train)
    p = save_lm(learn, tmp_path/'w.pt', 'imdb_sample', 'word', codec)
    made, want = [], Sampling(temperature=0.7, top_k=3)
    post = Sampling.__post_init__
    monkeypatch.setattr(Sampling, '__post_init__', lambda self: (made.append(self), post(self))[1])
    main(['generate', '--model', str(p), '--n', '5', '--top-k', '3', '--temperature', '0.7'])
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith('{')
    assert made == [want]

def test_greedy_needs_no_temperature():
    m = model()
    out = generate(m, PROMPT, 5, greedy=True, temperature=0)      # temperature is not used when greedy
    assert torch.equal(out, generate(m, PROMPT, 5, greedy=True))
    assert torch.equal(generate(m, PROMPT, 0), PROMPT)

# --- the KV cache --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('fast', [False, True])
@pytest.mark.parametrize('prenorm, pos', [(False, 'learned'), (True, 'learned'), (True, 'sinusoidal')])
def test_cache_gives_the_same_greedy_tokens(fast, prenorm, pos):
    m = model(fast=fast, prenorm=prenorm, pos=pos)
    for n in (1, 5, 40):                                           # 7 + 40 tokens: the window (12) slides many times
        a, b = generate(m, PROMPT, n, greedy=True, cache=True), generate(m, PROMPT, n, greedy=True, cache=False)
        assert torch.equal(a, b), (n, a, b)
    assert len(a) == len(PROMPT) + 40

def test_cache_logits_match_a_full_pass():
    "Each step's logits with the cache equal those of running the model on the whole window"
    m = model(seq_len=64)
    seq = generate(m, PROMPT, 20, greedy=True)
    from transformers_scratch.generate import KVCache
    c = KVCache(m)
    steps = [m(seq[None, :7], cache=c)[0, -1]] + [m(seq[None, i:i + 1], cache=c)[0, -1] for i in range(7, 26)]
    full = [m(seq[None, :i + 1])[0, -1] for i in range(6, 26)]
    torch.testing.assert_close(torch.stack(steps), torch.stack(full), atol=1e-5, rtol=1e-4)

def test_cache_runs_fewer_positions():
    m = model(seq_len=64)
    counts = []
    h = m.token_emb.register_forward_hook(lambda mod, i, o: counts.append(i[0].numel()))
    try:
        generate(m, PROMPT, 30, greedy=True, cache=True); cached = sum(counts); counts.clear()
        generate(m, PROMPT, 30, greedy=True, cache=False); uncached = sum(counts)
    finally: h.remove()
    assert cached == 7 + 29 and uncached == sum(range(7, 37))

@pytest.mark.parametrize('kw', [dict(fast=True, prenorm=True), dict(fast=False, prenorm=False), dict(fast=True, prenorm=True, pos='sinusoidal'),
                                dict(fast=True, prenorm=True, pos='rope', kv_heads=2)])
def test_static_step_gives_the_same_greedy_tokens(kw):
    "The step that CUDA replays as a graph (static shapes: all seq_len slots, a position tensor) runs eagerly on the CPU"
    m = model(**kw)
    for n in (1, 6, 40):                                           # before, at and far past the window (12)
        assert torch.equal(generate(m, PROMPT, n, greedy=True, cuda_graph=True), generate(m, PROMPT, n, greedy=True, cache=False))
    assert torch.equal(generate(m, PROMPT, 30, seed=4, cuda_graph=True), generate(m, PROMPT, 30, seed=4, cache=False))

def test_kv_cache_writes_in_place():
    from transformers_scratch.generate import KVCache
    m = model(seq_len=20)
    kv, ptrs = KVCache(m), None
    x = torch.randint(0, 23, (1, 15), generator=torch.Generator().manual_seed(2))
    out = [m(x[:, :5], cache=kv)] + [m(x[:, i:i + 1], cache=kv) for i in range(5, 15)]
    ptrs = [(l.k.data_ptr(), l.v.data_ptr()) for l in kv.layers]
    torch.testing.assert_close(torch.cat(out, 1), m(x), atol=1e-5, rtol=1e-4)
    assert kv.n == 15 and kv[0].k.shape == (1, 4, 20, 8) and bool(kv[0].k[:, :, 15:].eq(0).all())   # the rest is untouched
    assert [(l.k.data_ptr(), l.v.data_ptr()) for l in kv.layers] == ptrs
    with pytest.raises(ValueError, match='reset'): m(x[:, :6], cache=kv)
    kv.reset(); m(x[:, :6], cache=kv); assert kv.n == 6

def test_grouped_rope_steps_are_bit_exact(monkeypatch):
    """A decoding step of grouped-query attention lets SDPA share the key/value heads (`enable_gqa`), and RoPE's angles come
    from the cache, once per step for all layers: bit for bit the logits of repeating the heads and of every layer's own angles"""
    import transformers_scratch.attention as att
    from transformers_scratch.generate import KVCache
    m = model(seq_len=20, pos='rope', kv_heads=2, fast=True, prenorm=True, norm='rms', mlp='swiglu')
    x = torch.randint(0, 23, (2, 15), generator=torch.Generator().manual_seed(3))
    def steps(kv): return torch.cat([m(x[:, :5], cache=kv)] + [m(x[:, i:i + 1], cache=kv) for i in range(5, 15)], 1)
    class Plain:                                             # a layer cache without `shared`: each layer computes its angles
        def __init__(self, l): self.l = l
        offset = property(lambda self: self.l.offset)
        def update(self, *a): return self.l.update(*a)
    class PlainKV(KVCache):
        def __getitem__(self, i): return Plain(self.layers[i])
    sdpa, angles, gqa, n_angles = att.F.scaled_dot_product_attention, att.rope_angles, [], []
    def repeating(q, k, v, enable_gqa=False, **kw):          # SDPA on heads repeated as repeat_kv does, never enable_gqa
        gqa.append(enable_gqa)
        return sdpa(q, att.repeat_kv(k, q.size(-3) // k.size(-3)), att.repeat_kv(v, q.size(-3) // v.size(-3)), **kw)
    monkeypatch.setattr(att, 'rope_angles', lambda *a, **kw: n_angles.append(1) or angles(*a, **kw))
    with torch.no_grad():
        fast = steps(KVCache(m)); once = len(n_angles)
        monkeypatch.setattr(att.F, 'scaled_dot_product_attention', repeating)
        plain = steps(PlainKV(m))
    assert once == 11 and len(n_angles) - once == 11 * 2     # one per step, against one per layer and step
    assert gqa.count(True) == 10 * 2                         # the 10 one-token steps of both layers asked for enable_gqa
    assert torch.equal(fast, plain)
    with torch.no_grad(): torch.testing.assert_close(fast, m(x), atol=1e-5, rtol=1e-4)

def test_char_batches_are_lm_pairs():
    "Batches cut out of the text in one indexing op hold exactly the windows `lm_pair` gives for the sampled starts"
    from fastai.torch_core import set_seed
    from transformers_scratch.lmdata import char_dls, lm_pair
    set_seed(0)
    dls = char_dls("It is the east, and Juliet is the sun. " * 30, seq_len=10, bs=6, n_batches=4, device='cpu')
    dl = dls.train
    starts, get_idxs = [], dl.get_idxs
    dl.get_idxs = lambda: starts.extend(get_idxs()) or starts     # record the starts of the epoch
    batches = list(dl)
    assert len(batches) == 4
    for j, (x, y) in enumerate(batches):
        assert x.shape == y.shape == (6, 10) and x.dtype == torch.long and x.is_contiguous() and y.is_contiguous()
        for r in range(6):
            px, py = lm_pair(dl.dataset.ids, starts[j * 6 + r], 10)
            assert torch.equal(x[r], px) and torch.equal(y[r], py)
    vx = torch.cat([b[0] for b in dls.valid]); ids = dls.valid.dataset.ids      # non-overlapping windows, in order
    assert torch.equal(vx.flatten(), ids[:vx.numel()]) and len(vx) == len(dls.valid.dataset)

def test_lm_learner_precision_optimizer_and_compile():
    from fastai.optimizer import OptimWrapper
    from fastai.callback.progress import ProgressCallback
    from transformers_scratch.training import CompileModel, DeviceSmoothLoss, has_fused_adamw
    r = LM_QUICK['char'].replace(emb=16, heads=2, depth=1, seq_len=8, bs=4, n_batches=2)
    dls, _ = lm_dls('tinyshakespeare', 'char', r, device='cpu')
    learn = lm_learner(dls, r.model, r.train)
    assert learn.model.config == replace(r.model, n_tokens=65) and learn.lr == r.train.lr   # the data's vocabulary, the training's lr
    assert learn.precision == 'fp32' and not any(type(cb) is ProgressCallback for cb in learn.cbs)   # no read-back per batch
    assert isinstance(learn.recorder.smooth_loss, DeviceSmoothLoss) and 'compile_model' not in learn.cbs.attrgot('name')
    learn.create_opt()
    assert isinstance(learn.opt, OptimWrapper) and isinstance(learn.opt.opt, torch.optim.AdamW)
    assert learn.opt.opt.defaults['fused'] == has_fused_adamw('cpu') and learn.opt.opt.defaults['weight_decay'] == 0.1
    with pytest.raises(ValueError, match='CUDA'): lm_learner(dls, r.model, r.train, precision='bf16')   # mixed precision off a GPU
    assert isinstance(lm_learner(dls, r.model, replace(r.train, compile=True)).compile_model, CompileModel)
    with pytest.raises(ValueError, match='precision'): lm_learner(dls, r.model, r.train, precision='fp8')
    with pytest.raises(ValueError, match='config: seq_len=4'): lm_learner(dls, replace(r.model, seq_len=4), r.train)   # windows of 8
    with pytest.raises(TypeError, match='config: expected a ModelConfig'): lm_learner(dls, asdict(r.model), r.train)
    with pytest.raises(TypeError, match='train: expected a TrainConfig'): lm_learner(dls, r.model, r)
    with pytest.raises(ValueError, match='model: its config'): lm_learner(dls, r.model, r.train, model=model(seq_len=8, n_tokens=65))

def test_full_char_configuration_trains_on_a_cpu():
    "The full configuration's model, batch and learner (not compiled off a GPU) take a training step on the CPU"
    from fastai.torch_core import set_seed
    from transformers_scratch.lmdata import char_dls
    c, t = LM_FULL['char'].model, LM_FULL['char'].train
    assert (c.emb, c.heads, c.depth, c.seq_len, t.bs, c.dropout, t.n_batches, t.compile) == (384, 6, 6, 256, 64, 0.2, 3000, True)
    set_seed(0)
    dls = char_dls("O Romeo, Romeo! wherefore art thou Romeo? " * 400, c.seq_len, t.bs, n_batches=1, device='cpu')
    learn = lm_learner(dls, c, replace(t, compile=False))
    w = learn.model.toprobs.weight.detach().clone()
    with learn.no_bar(), learn.no_logging(): learn.fit_one_cycle(1, t.lr)
    assert not torch.equal(w, learn.model.toprobs.weight) and math.isfinite(learn.recorder.losses[-1])

def test_generate_restores_training_mode_and_device():
    m = model(dropout=0.5).train()
    out = generate(m, PROMPT, 10, greedy=True)
    assert m.training and out.device == PROMPT.device and out.dtype == torch.long
    assert torch.equal(out, generate(m, PROMPT, 10, greedy=True))   # dropout is off while generating

# --- cropping and seeds --------------------------------------------------------------------------------------------

def test_long_prompt_is_cropped_to_seq_len():
    m = model()
    long = torch.randint(0, 23, (40,), generator=torch.Generator().manual_seed(1))
    for cache in (True, False):
        out = generate(m, long, 8, greedy=True, cache=cache)
        assert torch.equal(out[:40], long)
        assert torch.equal(out[40:], generate(m, long[-12:], 8, greedy=True)[12:])
        s = generate(m, long, 8, seed=3, cache=cache)
        assert torch.equal(s[40:], generate(m, long[-12:], 8, seed=3, cache=cache)[12:])

@pytest.mark.parametrize('cache', [True, False])
def test_seeds_make_sampling_reproducible(cache):
    m = model()
    kw = dict(temperature=1.3, top_k=15, top_p=0.95, min_p=0.01, cache=cache)
    a = generate(m, PROMPT, 30, seed=7, **kw)
    assert torch.equal(a, generate(m, PROMPT, 30, seed=7, **kw))
    assert torch.equal(a, generate(m, PROMPT, 30, generator=torch.Generator().manual_seed(7), **kw))
    torch.manual_seed(11); b = generate(m, PROMPT, 30, **kw)
    torch.manual_seed(11); assert torch.equal(b, generate(m, PROMPT, 30, **kw))
    assert not torch.equal(a, generate(m, PROMPT, 30, seed=8, **kw))
    assert torch.equal(a, generate(m, PROMPT, 30, seed=7, **{**kw, 'cache': not cache}))   # sampling agrees too

def test_excluded_ids_are_never_generated():
    m = model()
    for kw in (dict(greedy=True), dict(seed=0, temperature=2.0), dict(seed=1, top_k=3)):
        for cache in (True, False):
            out = generate(m, PROMPT, 60, exclude=list(range(0, 23, 2)), cache=cache, **kw)
            assert all(i % 2 == 1 for i in out[len(PROMPT):].tolist()), (kw, out)

def test_filters_restrict_the_samples():
    z = torch.tensor([[2.0, 1.0, 0.0, -1.0, -2.0]]).expand(2000, 5)
    g = torch.Generator().manual_seed(0)
    assert set(next_token(z, Sampling(top_k=2), generator=g).tolist()) == {0, 1}
    assert set(next_token(z, Sampling(top_p=0.5), generator=g).tolist()) == {0}                 # p(0) = 0.64 >= 0.5
    assert set(next_token(z, Sampling(min_p=0.3), generator=g).tolist()) == {0, 1}              # p(1)/p(0) = e^-1 = 0.37
    assert len(set(next_token(z, Sampling(temperature=5.), generator=g).tolist())) == 5

# --- text ----------------------------------------------------------------------------------------------------------

CHARS = "abcdefghij ,."

def test_generate_text_roundtrip_and_errors():
    m = model(n_tokens=len(CHARS))
    for vocab in (CharVocab(CHARS), sorted(CHARS), ''.join(sorted(CHARS)), (CharVocab(CHARS).encode, CharVocab(CHARS).decode)):
        out = generate_text(m, vocab, "a bad cab", 10, seed=0)
        assert out.startswith("a bad cab") and len(out) == 19
        with pytest.raises(ValueError, match='empty'): generate_text(m, vocab, "", 5)
        with pytest.raises(ValueError, match=r"2 character\(s\) not in the vocabulary: 'X', 'é'"): generate_text(m, vocab, "a béad X", 5)
    with pytest.raises(TypeError, match='prompt'): generate_text(m, CHARS, 42, 5)
    with pytest.raises(TypeError, match='vocab'): generate_text(m, [1, 2, 3], "abc", 5)

# --- tfs generate --------------------------------------------------------------------------------------------------

def tfs(*args):
    "Run `tfs` in a fresh process, offline, like a user would"
    env = {**os.environ, 'TFS_OFFLINE': '1'}
    return subprocess.run(['tfs', *args], capture_output=True, text=True, env=env)

def test_tfs_generate_quick_learns(tmp_path):
    "The only long test: `tfs generate --quick` trains on tiny Shakespeare (about 2 minutes on 2 CPU cores)"
    r = tfs('generate', '--quick', '--n', '100', '--out', str(tmp_path/'lm.pt'))
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res['dataset'] == 'tinyshakespeare' and res['level'] == 'char' and res['device']
    assert res['valid_loss'] < res['unigram_loss'] - 0.5, res          # learned far more than character frequencies
    assert math.isclose(res['bits_per_char'], res['valid_loss'] / math.log(2), rel_tol=1e-3)
    assert 'ROMEO:' in r.stdout
    # the saved model loads, is measured again on the same validation text, and generates from another prompt
    r2 = tfs('generate', '--model', str(tmp_path/'lm.pt'), '--prompt', 'KING:', '--n', '50', '--temperature', '0.8')
    assert r2.returncode == 0, r2.stderr[-2000:]
    res2 = json.loads(r2.stdout.strip().splitlines()[-1])
    assert abs(res2['valid_loss'] - res['valid_loss']) < 1e-3 and 'KING:' in r2.stdout

def run_main(capsys, *args):
    with pytest.raises(SystemExit) as e: main(list(args))
    err = capsys.readouterr().err
    return e.value.code, err

@pytest.mark.parametrize('args, pat', [
    (['--temperature', '0'], 'temperature'), (['--temperature', 'hot'], 'temperature'), (['--top-k', '0'], 'top-k'),
    (['--top-p', '1.5'], 'top-p'), (['--n', '-1'], '--n'), (['--n', 'abc'], '--n'), (['--prompt', ''], 'prompt'),
    (['--data', 'mnist'], 'invalid choice'), (['--level', 'byte'], 'invalid choice'),
    (['--quick', '--prompt', 'ROMEO: ça va?'], r"character\(s\) not in the vocabulary: 'ç'"),   # found before training
    (['--model', '/nonexistent/lm.pt'], 'no such file'),
])
def test_tfs_generate_bad_arguments(capsys, args, pat):
    code, err = run_main(capsys, 'generate', *args)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and 'Traceback' not in err, err
    assert pat in lines[0] or __import__('re').search(pat, lines[0]), lines[0]

def test_tfs_generate_bad_model_file(capsys, tmp_path):
    (tmp_path/'junk.pt').write_bytes(b'not a checkpoint')
    code, err = run_main(capsys, 'generate', '--model', str(tmp_path/'junk.pt'))
    assert code == 2 and len(err.strip().splitlines()) == 1 and 'not a checkpoint' in err

def test_tfs_generate_error_in_a_real_process():
    r = tfs('generate', '--top-p', '0')
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and 'Traceback' not in r.stderr
    assert r.stdout == ''

def test_word_level_checkpoint_through_run_generate(tmp_path, capsys):
    "A word-level model (untrained, so this is fast) saved and used through `run_generate(model=...)`"
    r = LM_QUICK['word'].replace(emb=16, heads=2, depth=1)
    dls, codec = lm_dls('imdb_sample', 'word', r, device='cpu')
    learn = lm_learner(dls, r.model, r.train)
    p = save_lm(learn, tmp_path/'w.pt', 'imdb_sample', 'word', codec)
    ck = load_lm(p)
    assert ck['vocab'] == list(dls.vocab) and ck['config'] == asdict(learn.model.config) and ck['model'].config == learn.model.config
    res = run_generate(model=str(p), n=8, sampling=Sampling(top_k=5))
    assert res['level'] == 'word' and res['dataset'] == 'imdb_sample' and 'perplexity' in res
    assert math.isclose(res['perplexity'], math.exp(res['valid_loss']), rel_tol=1e-3)
    assert abs(res['valid_loss'] - math.log(len(dls.vocab))) < 1.0    # untrained: about uniform over the vocabulary
    text = capsys.readouterr().out.split('\r')[-1]                    # what follows the progress bar
    assert text.lower().startswith('i think its a very') and 'xxunk' not in text.lower(), text
    with pytest.raises(ValueError, match='level'): run_generate(model=str(p), level='char')

def test_run_generate_trains_the_recipe(tmp_path, capsys):
    "run_generate(recipe=...) trains the recipe's model (sizes, windows, batches) and saves it; what is not a Recipe is refused before any work"
    with pytest.raises(TypeError, match='recipe: expected a Recipe'): run_generate(quick=True, recipe=LM_QUICK['char'].model, out=tmp_path/'x.pt')
    r = LM_QUICK['char'].replace(emb=16, heads=2, depth=1, seq_len=16, bs=8, n_batches=3)
    res = run_generate('tinyshakespeare', recipe=r, quick=True, n=5, out=tmp_path/'m.pt', sampling=Sampling(greedy=True))
    assert not (tmp_path/'x.pt').exists() and res['level'] == 'char' and res['model'] == str(tmp_path/'m.pt')
    assert load_lm(tmp_path/'m.pt')['model'].config == replace(r.model, n_tokens=65)   # the recipe's model, the data's vocabulary

def test_load_lm_rebuilds_from_the_config_and_refuses_a_wrong_vocabulary(tmp_path):
    "The saved `asdict(model.config)` rebuilds the model; a vocabulary of another size, a bad config or an old format is one line naming the file"
    import torch.nn as nn
    from transformers_scratch.checkpoints import save_checkpoint
    from transformers_scratch.lm import _FORMAT
    m, v = model(n_tokens=len(CHARS)), sorted(CHARS)
    good = dict(data='tinyshakespeare', level='char', config=asdict(m.config), vocab=v)
    ck = load_lm(save_checkpoint(tmp_path/'ok.pt', _FORMAT, m, **good))
    assert ck['model'].config == m.config
    assert all(torch.equal(a, b) for a, b in zip(ck['model'].state_dict().values(), m.state_dict().values()))
    for name, info, pat in (('short.pt', dict(good, vocab=v[:-1]), 'n_tokens'),
                            ('heads.pt', dict(good, config={**good['config'], 'heads': 5}), 'heads'),
                            ('extra.pt', dict(good, config={**good['config'], 'ff_mult': 4}), 'ff_mult'),
                            ('chars.pt', dict(good, vocab=v[::-1]), 'sorted')):
        with pytest.raises(ValueError, match=pat) as e: load_lm(save_checkpoint(tmp_path/name, _FORMAT, m, **info))
        assert name in str(e.value) and len(str(e.value).splitlines()) == 1
    with pytest.raises(ValueError, match='not a checkpoint'):
        load_lm(save_checkpoint(tmp_path/'old.pt', 'transformers_scratch.lm/1', m, **good))
    with pytest.raises(ValueError, match='weights'):
        load_lm(save_checkpoint(tmp_path/'w.pt', _FORMAT, nn.Linear(2, 2), **good))

# --- the compiled decoding step (issue 32: decoding against the roofline) --------------------------------------------

DECODE_SHAPES = {   # tiny models of GPT-2's shape and of Llama's (grouped keys, rotary positions, RMSNorm, SwiGLU)
    'gpt2': dict(emb=64, heads=4, depth=2, seq_len=40, n_tokens=50, act='gelu_tanh', prenorm=True, tied=True, qkv_bias=True, fast=True, dropout=0.1),
    'llama': dict(emb=64, heads=4, kv_heads=2, depth=2, seq_len=40, n_tokens=50, pos='rope', norm='rms', mlp='swiglu', hidden=96,
                  bias=False, prenorm=True, tied=True, fast=True, dropout=0.1)}   # dropout: train mode would change the tokens

def decode_model(shape):
    "A tiny model of `shape`, its `nn.Linear` weights in Conv1D's column order (as `load_gpt2` keeps GPT-2's)"
    torch.manual_seed(0)
    m = GenerationTransformer(ModelConfig(**DECODE_SHAPES[shape])).eval()
    for mod in m.modules():
        if isinstance(mod, torch.nn.Linear) and mod.weight is not m.trunk.token_emb.weight:
            mod.weight.data = mod.weight.data.T.contiguous().T
    return m

@pytest.mark.parametrize('shape', ['gpt2', 'llama'])
def test_compiled_decoding_matches_the_plain_forward(shape):
    "`generate(compile=True)`: the tokens of the plain forward (greedy, seeded, past seq_len); each compiled step's logits those of the full pass"
    from transformers_scratch.generate import KVCache, _StaticStep
    m = decode_model(shape)
    names = {k: v.clone() for k, v in m.state_dict().items()}
    p = torch.tensor([3, 1, 4, 1, 5])
    out = generate(m, p, 20, greedy=True, compile=True)
    assert torch.equal(out, generate(m, p, 20, greedy=True, cache=False)) and torch.equal(out, generate(m, p, 20, greedy=True))
    assert torch.equal(generate(m, p, 50, greedy=True, compile=True), generate(m, p, 50, greedy=True, cache=False))   # the window slides
    assert torch.equal(generate(m, p, 25, seed=3, compile=True), generate(m, p, 25, seed=3, cache=False))
    m.train()                                                         # dropout off while decoding, the mode restored after
    assert torch.equal(generate(m, p, 20, greedy=True, compile=True), out) and m.training
    m.eval()
    sd = m.state_dict()                                               # rows_layout: the same names and values, rows contiguous
    assert list(sd) == list(names) and all(torch.equal(sd[k], v) for k, v in names.items())
    assert all(mod.weight.is_contiguous() for mod in m.modules() if isinstance(mod, torch.nn.Linear))
    kv = KVCache(m)
    with torch.no_grad():
        m(out[None, :5], cache=kv)
        step = _StaticStep(m, kv, compile=True)
        logits = torch.stack([step(t).clone() for t in out[5:-1]])
        torch.testing.assert_close(logits, m(out[None, :-1])[0, 5:], atol=1e-4, rtol=1e-4)

def test_compiled_decoding_falls_back_and_checks_its_flag(monkeypatch):
    "A compiled step that fails (no C++ compiler, say) warns once and decodes eagerly, the same tokens; `compile` must be a bool"
    import transformers_scratch.generate as g
    def broken():
        def run(*a): raise RuntimeError('no compiler here')
        return run
    monkeypatch.setattr(g, 'compiled_step', broken)
    m, p = decode_model('llama'), torch.tensor([3, 1, 4])
    with pytest.warns(UserWarning, match='compile: .*no compiler here.*eagerly'): out = generate(m, p, 8, greedy=True, compile=True)
    assert torch.equal(out, generate(m, p, 8, greedy=True, cache=False))
    with pytest.raises(TypeError, match='compile: expected True or False'): generate(m, p, 3, compile='yes')
