"Encoder-decoder and translation: shapes, causality, padding, fast/explicit, cache, greedy/beam, bad input, `tfs translate`."
import io, json, sys
import pytest, torch
from dataclasses import asdict
from transformers_scratch.config import ModelConfig, ConfigError
from transformers_scratch.checkpoints import CheckpointError
from transformers_scratch.attention import SelfAttention
from transformers_scratch.models import attention_maps
from transformers_scratch.seq2seq import Seq2SeqTransformer, DecoderBlock, translate, translate_batch, greedy_decode
from transformers_scratch.translate import (tokenize, detokenize, Vocab, corpus_bleu, multi30k, load_translator,
                                            save_translator, translate_sentences, Translator, SPECIALS, TRANSLATE_QUICK, TRANSLATE_FULL,
                                            translation_dls, translation_learner)
from transformers_scratch.runs import run_translate
from transformers_scratch.cli import main

def config(emb=32, heads=4, depth=2, seq_len=24, src_tokens=40, n_tokens=30, **kw):
    kw = {'pad_idx': 1, 'pos': 'sinusoidal', 'tied': True, **kw}     # translate's defaults
    return ModelConfig(emb=emb, heads=heads, depth=depth, seq_len=seq_len, src_tokens=src_tokens, n_tokens=n_tokens, **kw)

def model(seed=0, **kw):
    torch.manual_seed(seed)
    return Seq2SeqTransformer(config(**kw)).eval()

def ids(*shape, lo=4, hi=30, seed=0):
    return torch.randint(lo, hi, shape, generator=torch.Generator().manual_seed(seed))

VARIANTS = [dict(), dict(fast=True), dict(prenorm=False), dict(pos='learned', tied=False), dict(dec_depth=1, mult=2)]

# --- the model -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('kw', VARIANTS)
@pytest.mark.parametrize('b, ts, tt', [(1, 7, 3), (3, 4, 9), (4, 11, 11)])
def test_shapes(kw, b, ts, tt):
    m = model(**kw)
    assert m(ids(b, ts, hi=40), ids(b, tt)).shape == (b, tt, 30)
    assert m.encode(ids(b, ts, hi=40)).shape == (b, ts, 32)

@pytest.mark.parametrize('kw', VARIANTS)
def test_decoder_is_causal(kw):
    m, src, tgt = model(**kw), ids(3, 6, hi=40), ids(3, 8)
    out = m(src, tgt)
    for k in (1, 4, 7):
        t2 = tgt.clone(); t2[:, k:] = ids(3, 8 - k, seed=k)
        assert torch.allclose(m(src, t2)[:, :k], out[:, :k], atol=1e-5)
        assert not torch.allclose(m(src, t2)[:, k:], out[:, k:], atol=1e-5)

@pytest.mark.parametrize('kw', VARIANTS)
def test_memory_padding_changes_nothing(kw):
    m, tgt = model(**kw), ids(3, 5)
    src = ids(3, 6, hi=40)
    padded = torch.cat([src, torch.ones(3, 5, dtype=torch.long)], 1)
    assert torch.allclose(m(padded, tgt), m(src, tgt), atol=1e-5)
    batch = src.clone(); batch[1, 3:] = 1                       # one shorter sentence in the batch = that sentence alone
    assert torch.allclose(m(batch, tgt)[1], m(src[1:2, :3], tgt[1:2])[0], atol=1e-5)

def test_inner_target_padding_is_masked():
    m = model()
    tgt = ids(2, 6); left = torch.cat([torch.ones(2, 2, dtype=torch.long), tgt], 1)   # pads before the real tokens
    out = m(ids(2, 5, hi=40), left)
    assert torch.isfinite(out).all()

@pytest.mark.parametrize('kw', [dict(), dict(prenorm=False), dict(pos='learned')])
def test_fast_equals_explicit(kw):
    slow, fast = model(**kw), model(fast=True, **kw)
    fast.load_state_dict(slow.state_dict())
    src = ids(3, 7, hi=40); src[0, 4:] = 1
    tgt = ids(3, 5); tgt[2, 3:] = 1
    assert torch.allclose(fast(src, tgt), slow(src, tgt), atol=1e-5)

def test_cross_attention_fast_and_mask():
    "Cross-attention is `SelfAttention` given `kv=`: the fast path agrees, padding of the memory changes nothing"
    torch.manual_seed(0)
    ca, fa = SelfAttention(ModelConfig(emb=12, heads=3)).eval(), SelfAttention(ModelConfig(emb=12, heads=3, fast=True)).eval()
    fa.load_state_dict(ca.state_dict())
    x, mem = torch.randn(3, 4, 12), torch.randn(3, 6, 12)
    pm = torch.tensor([[1] * 6, [1, 1, 0, 0, 0, 0], [0] * 6]).bool()       # the last row: nothing to attend to
    out = ca(x, pm, kv=mem)
    assert torch.isfinite(out).all() and torch.allclose(fa(x, pm, kv=mem), out, atol=1e-5)
    assert torch.allclose(out[1], ca(x[1:2], kv=mem[1:2, :2])[0], atol=1e-5)

def test_model_is_built_from_its_config():
    "Two trunks (lesson 06) from one config: the encoder over src_tokens, the causal decoder of DecoderBlocks; tied head"
    c = config(dec_depth=3, mult=2)
    m = Seq2SeqTransformer(c)
    assert m.config is c and m.encoder.config.n_tokens == 40 and m.decoder.config.n_tokens == 30
    assert len(m.encoder.blocks) == 2 and len(m.decoder.blocks) == 3
    assert all(type(b) is DecoderBlock and b.attention.causal and not b.cross_attention.causal for b in m.decoder.blocks)
    assert m.toprobs.weight is m.decoder.token_emb.weight and m.toprobs.bias is None
    assert m.decoder.blocks[0].ff[0].out_features == 64
    assert Seq2SeqTransformer(config(tied=False)).toprobs.bias is not None
    emb, lin = m.encoder.token_emb.weight, m.encoder.blocks[0].attention.tokeys.weight   # lesson 06's init_weights:
    assert 0.015 < emb[2:].std() < 0.025 and (emb[1] == 0).all()                       # embeddings N(0, 0.02), padding row 0
    assert 0.8 < lin.std() * (3 * 32) ** 0.5 < 1.2                                      # linear layers PyTorch's U(±1/√fan_in)

def test_fully_padded_source_gives_no_nan():
    assert torch.isfinite(model()(torch.ones(2, 5, dtype=torch.long), ids(2, 4))).all()

@pytest.mark.parametrize('make, err, pat', [
    (lambda: Seq2SeqTransformer(ModelConfig(emb=32, heads=4)), ConfigError, 'src_tokens'),
    (lambda: model(emb=30), ConfigError, 'heads'), (lambda: model(depth=0), ConfigError, 'depth'),
    (lambda: model(pad_idx=35), ConfigError, 'pad_idx'),
    (lambda: model()(ids(1, 25, hi=40), ids(1, 3)), ValueError, 'src.*seq_len'),
    (lambda: model()(ids(1, 5, hi=40), ids(1, 25)), ValueError, 'tgt.*seq_len'),
    (lambda: model()(ids(1, 5, hi=40).float(), ids(1, 3)), TypeError, 'src'),
    (lambda: model()(ids(1, 5, hi=40), ids(1, 3).float()), TypeError, 'tgt'),
    (lambda: model()(ids(2, 5, hi=40), ids(3, 3)), ValueError, 'rows'),
    (lambda: SelfAttention(ModelConfig(emb=12, heads=3))(torch.randn(2, 3, 12), torch.ones(2, 5).bool(), kv=torch.randn(2, 4, 12)),
     ValueError, 'pad_mask'),
    (lambda: model().decode(ids(2, 3), torch.randn(3, 5, 32)), ValueError, 'kv'),
])
def test_bad_model_input(make, err, pat):
    with pytest.raises(err, match=pat): make()

# --- decoding ------------------------------------------------------------------------------------------------------

def argmax_loop(m, src, max_len, bos=2, eos=3, never=(1, 2)):
    "Greedy decoding as plainly as it gets: the whole model, the whole prefix, every step; never PAD or BOS (as translate)"
    ys = [bos]
    for _ in range(max_len):
        logits = m(src[None], torch.tensor([ys]))[0, -1]
        logits[list(never)] = float('-inf')
        nxt = int(logits.argmax())
        if nxt == eos: break
        ys.append(nxt)
    return torch.tensor(ys[1:], dtype=torch.long)

@pytest.mark.parametrize('kw', VARIANTS)
def test_greedy_equals_argmax_loop_with_and_without_cache(kw):
    m = model(**kw)
    for seed, n in ((0, 5), (1, 9), (2, 3)):
        s = ids(n, hi=40, seed=seed)
        ref = argmax_loop(m, s, 15)
        assert torch.equal(translate(m, s, max_len=15), ref)
        assert torch.equal(translate(m, s, max_len=15, cache=False), ref)
        assert torch.equal(greedy_decode(m, s, 15), argmax_loop(m, s, 15, never=()))   # lesson 30's exercise: the plain argmax

def test_eos_and_bos_and_max_len_are_honoured():
    m = model(tied=False)
    with torch.no_grad(): m.toprobs.bias.zero_(); m.toprobs.bias[7] = 50.          # always token 7
    assert torch.equal(translate(m, ids(4, hi=40), max_len=6), torch.full((6,), 7))
    with torch.no_grad(): m.toprobs.bias[5] = 100.                                  # always token 5: used as EOS
    assert translate(m, ids(4, hi=40), eos_idx=5).numel() == 0
    assert translate(m, ids(4, hi=40), max_len=100).numel() <= m.config.seq_len            # never beyond the positions

@pytest.mark.parametrize('kw', VARIANTS[:3])
def test_beam_one_equals_greedy_and_cache_equals_no_cache(kw):
    m = model(**kw)
    src = ids(3, 6, hi=40); src[1, 4:] = 1
    greedy = [argmax_loop(m, r[r != 1], 12) for r in src]
    for cache in (True, False):
        for a, b in zip(translate_batch(m, src, 12, beam=1, cache=cache), greedy): assert torch.equal(a, b)
    for k in (2, 4):
        with_cache, without = translate_batch(m, src, 12, beam=k), translate_batch(m, src, 12, beam=k, cache=False)
        for a, b in zip(with_cache, without): assert torch.equal(a, b)
        alone = [translate(m, r[r != 1], 12, beam=k) for r in src]        # a batch translates like one sentence at a time
        for a, b in zip(with_cache, alone): assert torch.equal(a, b)

def seq_logprob(m, src, out, eos=3):
    tgt = torch.cat([torch.tensor([2]), out])
    lp = m(src[None], tgt[None])[0].log_softmax(-1)
    labels = torch.cat([out, torch.tensor([eos])])
    return float(lp.gather(1, labels[:, None]).sum())

def test_beam_search_finds_likelier_translations():
    "Without length normalisation (alpha=0), beam search's total log-probability is at least greedy's on average"
    m = model(seed=3, tied=False)
    with torch.no_grad(): m.toprobs.bias[3] = 2.                                    # EOS likely enough to end sentences
    srcs = [ids(n, hi=40, seed=s) for s, n in enumerate((4, 6, 8, 5, 7, 3))]
    g = sum(seq_logprob(m, s, translate(m, s, 20)) for s in srcs)
    b = sum(seq_logprob(m, s, translate_batch(m, s[None], 20, beam=5, alpha=0.)[0]) for s in srcs)
    assert b >= g - 1e-4, (b, g)

@pytest.mark.parametrize('kw, err, pat', [
    (dict(beam=0), ValueError, 'beam'), (dict(beam=-2), ValueError, 'beam'), (dict(beam=1.5), TypeError, 'beam'),
    (dict(beam=True), TypeError, 'beam'), (dict(max_len=0), ValueError, 'max_len'), (dict(max_len='9'), TypeError, 'max_len'),
])
def test_bad_translate_arguments(kw, err, pat):
    with pytest.raises(err, match=pat): translate(model(), ids(5, hi=40), **kw)

@pytest.mark.parametrize('src, err, pat', [
    (ids(2, 5, hi=40), ValueError, '1-D'), (ids(25, hi=40), ValueError, 'seq_len'), (ids(5, hi=40).float(), TypeError, 'integers'),
    (torch.tensor([], dtype=torch.long), ValueError, 'empty'), ([4, 5, 6], TypeError, 'LongTensor'),
])
def test_bad_source(src, err, pat):
    with pytest.raises(err, match=pat): translate(model(), src)

def small_translator(m):
    words = ['Hund', 'Park', 'im', 'läuft', 'Ein', '##.']
    sv, tv = Vocab(SPECIALS + words + [f'w{i}' for i in range(40 - 10)]), Vocab(SPECIALS + [f'v{i}' for i in range(30 - 4)])
    return Translator(m, sv, tv, 'de', 'en')

def test_translate_restores_training_mode():
    "translate, translate_batch's callers and a Translator leave a training model in training mode (and an eval one in eval)"
    for mode in (True, False):
        m = model(dropout=0.3).train(mode)
        translate(m, ids(5, hi=40))
        assert m.training == mode
        tr = small_translator(m)
        tr("Ein Hund läuft im Park.", beam=2)
        translate_sentences(m, tr.src_vocab, tr.tgt_vocab, ["Ein Hund.", "Im Park."])
        assert m.training == mode and all(x.training == mode for x in m.modules())

def test_attention_maps():
    "Lesson 06's attention_maps names every layer: the encoder's, the decoder's causal self-attention, its cross-attention"
    m, src, tgt = model(), ids(2, 6, hi=40), ids(2, 4)
    maps = dict(attention_maps(m, src, tgt))
    assert sorted(maps) == sorted(f'{part}.blocks.{i}.{a}' for i in (0, 1) for part, a in
                                  (('encoder', 'attention'), ('decoder', 'attention'), ('decoder', 'cross_attention')))
    cross, dself = maps['decoder.blocks.1.cross_attention'], maps['decoder.blocks.1.attention']
    assert cross.shape == (2, 4, 4, 6) and dself.shape == (2, 4, 4, 4)
    assert torch.allclose(cross.sum(-1), torch.ones(2, 4, 4))
    assert maps['decoder.blocks.0.attention'].triu(1).abs().sum() == 0
    src[1, 3:] = 1                                                             # the second source padded after 3 tokens
    assert dict(attention_maps(m, src, tgt))['decoder.blocks.0.cross_attention'][1, :, :, 3:].abs().sum() == 0

def test_checkpoint_stores_the_config(tmp_path):
    "save_translator writes asdict(model.config); load_translator rebuilds the same model from it, or names the damage"
    m = model(mult=2, dec_depth=1)
    tr = small_translator(m)
    p = save_translator(tr, tmp_path/'tr.pt')
    ck = torch.load(p, weights_only=True)
    assert ck['format'] == 'transformers_scratch.translate/2' and ck['config'] == asdict(m.config)
    tr2 = load_translator(p)
    assert tr2.model.config == m.config and not tr2.model.training
    assert tr2("Ein Hund läuft im Park.") == tr("Ein Hund läuft im Park.")
    for bad, pat in ((dict(n_tokens=31), 'n_tokens=31'), (dict(src_tokens=None), 'src_tokens=None'), (dict(pad_idx=0), 'pad_idx=0'),
                     (dict(heads=5), 'config heads'), (dict(tie=True), 'unknown keys')):
        torch.save(dict(ck, config={**ck['config'], **bad}), tmp_path/'bad.pt')
        with pytest.raises(ValueError, match=pat) as e: load_translator(tmp_path/'bad.pt')
        assert 'damaged' in str(e.value) and '\n' not in str(e.value)
    for bad, pat in ((dict(src_vocab=['a'] + ck['src_vocab'][1:]), 'vocabularies: each must start'), (dict(tgt='de'), "src, tgt: 'de', 'de'"),
                     (dict(src='xx'), "src, tgt: 'xx'"), (dict(tgt_vocab=ck['tgt_vocab'][:-1]), 'vocabularies of 40 and 29 tokens')):
        torch.save(dict(ck, **bad), tmp_path/'bad.pt')
        with pytest.raises(CheckpointError, match=pat) as e: load_translator(tmp_path/'bad.pt')
        assert str(tmp_path/'bad.pt') in str(e.value) and '\n' not in str(e.value)

# --- data ----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('lang', ['en', 'de', 'fr'])
def test_tokenizer_round_trip(lang):
    other = 'de' if lang == 'en' else 'en'
    for s, _ in multi30k(lang, other, splits=('val',))['val']:
        assert detokenize(tokenize(s)) == ' '.join(s.split())

def test_vocab():
    v = Vocab.build(["A dog runs.", "A dog sits.", "A cat."], min_freq=2)
    assert v.itos[:4] == SPECIALS and v.itos[4:] == ['##.', 'A', 'dog']       # by count, then alphabetically
    assert v.decode(v.encode("A dog flies.") + [3, 5]) == "A dog xxunk."
    with pytest.raises(ValueError, match='itos'): Vocab(['a', 'b'])

def test_bleu_lowercased_and_cased():
    refs = ["A dog runs in the park.", "Two men are talking."]
    assert corpus_bleu(refs, refs) == pytest.approx(100)
    low = ["a dog runs in the park.", "two men are talking."]
    assert corpus_bleu(low, refs) == pytest.approx(100) and corpus_bleu(low, refs, lowercase=False) < 100
    with pytest.raises(ValueError, match='hyps'): corpus_bleu(low[:1], refs)

@pytest.mark.parametrize('kw, pat', [(dict(emb=30), 'heads'), (dict(epochs=0), 'epochs'), (dict(beam=0), 'beam'),
                                     (dict(colour='red'), 'colour')])
def test_bad_config(kw, pat):
    with pytest.raises(ConfigError, match=pat): TRANSLATE_QUICK.replace(**kw)

PAIRS = {'train': [("Ein Hund läuft.", "A dog runs."), ("Ein Mann sitzt.", "A man sits.")] * 8, 'val': [("Ein Hund sitzt.", "A dog sits.")]}

def test_translation_learner_fills_what_the_data_decides():
    "translation_learner(dls, config, train): src_tokens, n_tokens and pad_idx from dls, the rest of config as given; lr, wd, smoothing and compile from train"
    from dataclasses import replace
    from transformers_scratch.training import CompileModel
    dls = translation_dls(PAIRS, min_freq=1, bs=4, seq_len=16, device='cpu')
    c, t = replace(TRANSLATE_QUICK.model, emb=16, heads=2, depth=1, seq_len=16), replace(TRANSLATE_QUICK.train, lr=2e-3, wd=0.05, smoothing=0.2)
    learn = translation_learner(dls, c, t)
    assert learn.model.config == replace(c, src_tokens=len(dls.src_vocab), n_tokens=len(dls.tgt_vocab), pad_idx=1)
    assert learn.lr == 2e-3 and learn.loss_func.smoothing == 0.2 and 'compile_model' not in learn.cbs.attrgot('name')
    learn.create_opt()
    assert all(h['wd'] == 0.05 for h in learn.opt.hypers)
    assert any(isinstance(cb, CompileModel) for cb in translation_learner(dls, c, replace(t, compile=True)).cbs)
    with pytest.raises(ValueError, match='config: seq_len=8'): translation_learner(dls, replace(c, seq_len=8), t)
    with pytest.raises(TypeError, match='config: expected a ModelConfig'): translation_learner(dls, asdict(c), t)
    with pytest.raises(TypeError, match='train: expected a TrainConfig'): translation_learner(dls, c, TRANSLATE_QUICK)

@pytest.mark.parametrize('kw, err, pat', [(dict(recipe=TRANSLATE_QUICK.model), TypeError, 'recipe: expected a Recipe'),
                                          (dict(recipe=TRANSLATE_QUICK.replace(max_train=100)), ValueError, 'max_train: 100 pairs make no full batch of 128'),
                                          (dict(max_test=0), ValueError, 'max_test'), (dict(src='it'), ValueError, 'src: unknown language')])
def test_run_translate_refuses_before_any_work(kw, err, pat, tmp_path):
    with pytest.raises(err, match=pat): run_translate(quick=True, out=tmp_path/'m.pt', **kw)
    assert list(tmp_path.iterdir()) == []

# --- tfs translate -------------------------------------------------------------------------------------------------

def tfs(*args, stdin=None, monkeypatch=None, capsys=None):
    if stdin is not None: monkeypatch.setattr(sys, 'stdin', io.StringIO(stdin))
    try: main(list(args)); code = 0
    except SystemExit as e: code = e.code
    out, err = capsys.readouterr()
    return code, out, err

@pytest.mark.parametrize('args, pat', [
    (['--src', 'it'], 'invalid choice'), (['--tgt', 'xx'], 'invalid choice'), (['--src', 'de', '--tgt', 'de'], 'differ'),
    (['--model', 'M', '  '], 'empty'), (['--model', 'M', ''], 'empty'), (['Ein Hund.'], '--model'),
    (['--model', 'M', 'Ein Hund.'], 'no such file'), (['--beam', '0'], 'positive'), (['--epochs', 'x'], 'positive'),
    (['--model', 'M', '--out', 'o.pt', 'Ein Hund.'], 'not both'),
])
def test_cli_errors(args, pat, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    args = [str(tmp_path/'missing.pt') if a == 'M' else a for a in args]
    code, out, err = tfs('translate', *args, '--out' if '--model' not in args and '--out' not in args else '--seed',
                         str(tmp_path/'new.pt') if '--model' not in args and '--out' not in args else '0', capsys=capsys)
    assert code == 2 and out == '' and len(err.strip().splitlines()) == 1 and pat in err, (code, out, err)
    assert list(tmp_path.iterdir()) == []                                           # nothing written

def test_cli_train_save_load_translate(tmp_path, monkeypatch, capsys):
    p = tmp_path/'m'/'de-en.pt'
    code, out, err = tfs('translate', '--src', 'de', '--tgt', 'en', '--quick', '--epochs', '1', '--max-train', '1500',
                         '--max-test', '20', '--beam', '2', '--out', str(p), capsys=capsys)
    assert code == 0, err
    res = json.loads(out.strip().splitlines()[-1])
    assert {'bleu', 'valid_loss', 'seconds', 'device', 'beam'} <= set(res) and res['beam'] == 2 and res['test_pairs'] == 20
    assert p.is_file() and res['model'] == str(p)
    code, out, err = tfs('translate', '--model', str(p), 'Ein Hund läuft im Park.', capsys=capsys)
    assert code == 0 and len(out.splitlines()) == 1 and out.strip(), (out, err)
    tr = load_translator(p)
    assert out.strip() == tr("Ein Hund läuft im Park.")
    code, out2, err = tfs('translate', '--model', str(p), stdin="Ein Hund läuft im Park.\n\nZwei Männer.\n",
                          monkeypatch=monkeypatch, capsys=capsys)
    assert code == 0 and out2.split('\n')[:3] == [out.strip(), '', tr("Zwei Männer.")], out2
    code, out, err = tfs('translate', '--model', str(p), '--tgt', 'fr', 'Ein Hund.', capsys=capsys)
    assert code == 2 and 'de -> en' in err and out == ''
    code, out, err = tfs('translate', '--model', str(p), stdin="\n", monkeypatch=monkeypatch, capsys=capsys)
    assert code == 2 and 'no sentence' in err
    (tmp_path/'junk.pt').write_text('junk')
    code, out, err = tfs('translate', '--model', str(tmp_path/'junk.pt'), 'Ein Hund.', capsys=capsys)
    assert code == 2 and 'not a model' in err


def test_translator_scales_its_embeddings():
    "emb_scale=True (the translator's): token embeddings drawn N(0, 1/e) and multiplied by √e on the way in; the tied head reads the weights as they are"
    import torch.nn as nn
    from dataclasses import replace
    from transformers_scratch.models import ScaledEmbedding
    c = ModelConfig(emb=64, heads=4, depth=1, seq_len=16, n_tokens=500, src_tokens=400, pad_idx=1, tied=True, emb_scale=True)
    torch.manual_seed(0)
    m = Seq2SeqTransformer(c)
    for t in (m.encoder, m.decoder):
        e = t.token_emb
        assert isinstance(e, ScaledEmbedding)
        assert abs(e.weight.std().item() - 64 ** -0.5) < 0.01 and e.weight[1].abs().sum() == 0     # N(0, 1/e), padding row 0
        x = torch.tensor([[2, 3, 1]])
        torch.testing.assert_close(e(x), e.weight[x] * 8.)                                         # √64 on the way in
    assert m.toprobs.weight is m.decoder.token_emb.weight
    plain = Seq2SeqTransformer(replace(c, emb_scale=False)).encoder.token_emb
    assert type(plain) is nn.Embedding and abs(plain.weight.std().item() - 0.02) < 0.005
    assert all(r.model.emb_scale and r.model.tied for r in (TRANSLATE_QUICK, TRANSLATE_FULL))
    with pytest.raises(ConfigError, match='emb_scale'): ModelConfig(emb=64, heads=4, emb_scale=1)
