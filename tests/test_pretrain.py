"Masked-LM pretraining: masking rates, not causal, load_encoder equivalence, no leakage, and the CLI round trip."
import json, subprocess, sys, os
import pytest, torch
from transformers_scratch.mlm import mask_tokens, MaskedLMTransformer, masked_accuracy
from transformers_scratch.models import ClassificationTransformer
from transformers_scratch.pretrain import pretrain_texts, load_encoder_file
from transformers_scratch.data import imdb_sample_df, imdb_df

def big(seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(5, 1000, (128, 512), generator=g)
    x[:, :40] = 1                                      # front padding
    x[::7, 40] = 2; x[::5, 41] = 3                     # special tokens
    return x

def test_masking_rates_on_a_large_tensor():
    x = big(); before = x.clone()
    inp, tgt = mask_tokens(x, 4, 1000, pad_idx=1, special_ids=(2, 3), p=0.15, generator=torch.Generator().manual_seed(1))
    assert torch.equal(x, before)                                         # input unchanged
    eligible = (x != 1) & (x != 2) & (x != 3)
    sel = tgt != -100
    assert not (sel & ~eligible).any()                                    # pads and specials never selected
    assert abs(sel.sum() / eligible.sum() - 0.15) < 0.005
    n = sel.sum()
    masked, kept = (sel & (inp == 4)).sum() / n, (sel & (inp == x)).sum() / n
    assert abs(masked - 0.8) < 0.01 and abs(kept - 0.1) < 0.01 and abs(1 - masked - kept - 0.1) < 0.01
    assert torch.equal(tgt[sel], x[sel]) and torch.equal(inp[~sel], x[~sel])
    rnd = inp[sel & (inp != 4) & (inp != x)]
    assert rnd.min() >= 0 and rnd.max() < 1000 and abs(rnd.float().mean() - 499.5) < 40   # uniform over [0, n_tokens)

def test_seeds_reproduce_and_p_is_checked():
    x = big(1)
    a = mask_tokens(x, 4, 1000, generator=torch.Generator().manual_seed(3))
    b = mask_tokens(x, 4, 1000, generator=torch.Generator().manual_seed(3))
    c = mask_tokens(x, 4, 1000, generator=torch.Generator().manual_seed(4))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) and not torch.equal(a[1], c[1])
    for p in (0., 1., -0.5, 2.):
        with pytest.raises(ValueError, match='p'): mask_tokens(x, 4, 1000, p=p)

def test_mlm_is_not_causal_and_ignores_padding():
    torch.manual_seed(0)
    m = MaskedLMTransformer(32, 4, 2, 20, 50).eval()
    x = torch.randint(2, 50, (2, 12))
    y = m(x)
    assert y.shape == (2, 12, 50)
    x2 = x.clone(); x2[:, -1] = (x2[:, -1] + 1) % 50
    assert (m(x2)[:, 0] - y[:, 0]).abs().max() > 1e-4                     # the first position sees the last
    padded = torch.cat([torch.ones(2, 4, dtype=torch.long), x], 1)
    torch.testing.assert_close(m(padded)[:, 4:], y, atol=1e-5, rtol=1e-4)

@pytest.mark.parametrize('fast', [False, True])
def test_load_encoder_equivalence(fast):
    torch.manual_seed(0)
    mlm = MaskedLMTransformer(32, 4, 3, 24, 70, fast=fast)
    for p in mlm.parameters(): p.data.normal_()                          # not the initial weights
    clf = ClassificationTransformer(32, 4, 3, 24, 70, 2, pad_idx=1, prenorm=True, fast=fast)
    head = clf.toprobs.weight.detach().clone()
    assert clf.load_encoder(mlm) is clf
    mlm.eval(); clf.eval()
    x = torch.cat([torch.ones(3, 5, dtype=torch.long), torch.randint(2, 70, (3, 15))], 1)
    with torch.no_grad(): assert torch.equal(clf.encode(x), mlm.encode(x))
    assert torch.equal(clf.toprobs.weight, head)

@pytest.mark.parametrize('kw,what', [(dict(n_tokens=71), 'n_tokens'), (dict(emb=64), 'emb'), (dict(depth=2), 'depth'),
                                     (dict(seq_len=25), 'seq_len'), (dict(heads=8), 'heads'), (dict(prenorm=False), 'prenorm'),
                                     (dict(pad_idx=None), 'pad_idx'), (dict(pos='sinusoidal'), 'pos')])
def test_load_encoder_mismatch(kw, what):
    mlm = MaskedLMTransformer(32, 4, 3, 24, 70)
    a = dict(emb=32, heads=4, depth=3, seq_len=24, n_tokens=70, n_classes=2, pad_idx=1, prenorm=True) | kw
    with pytest.raises(ValueError, match=what): ClassificationTransformer(**a).load_encoder(mlm)

def test_no_leakage():
    s = imdb_sample_df()
    valid = set(s.text[s.is_valid])
    t = pretrain_texts('imdb_sample')
    assert len(t) == 800 and not set(t) & valid
    full = imdb_df()
    test_only = set(full.text[full.is_valid]) - set(full.text[~full.is_valid])
    t1 = set(pretrain_texts('imdb', 'imdb_sample'))
    assert not t1 & valid and not t1 & test_only
    assert valid <= set(full.text[~full.is_valid])                       # why the rule exists: they are IMDB training reviews
    t2 = set(pretrain_texts('imdb', 'imdb'))
    assert not t2 & test_only and len(t2) > len(t1)
    with pytest.raises(ValueError, match='data'): pretrain_texts('imdb_sample', 'imdb')

def tfs(*args, cwd=None):
    return subprocess.run(['tfs', *args], capture_output=True, text=True, cwd=cwd)

def test_cli_errors(tmp_path):
    r = tfs('classify', '--encoder', str(tmp_path/'missing.pt'), '--quick')
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1 and 'no such file' in r.stderr
    (tmp_path/'junk.pt').write_bytes(b'not a checkpoint')
    r = tfs('classify', '--encoder', str(tmp_path/'junk.pt'), '--quick')
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1 and 'not an encoder' in r.stderr
    torch.save({'format': 'transformers_scratch.lm/1'}, tmp_path/'lm.pt')
    r = tfs('classify', '--encoder', str(tmp_path/'lm.pt'), '--quick')
    assert r.returncode != 0 and 'not an encoder' in r.stderr
    r = tfs('pretrain', '--quick')
    assert r.returncode != 0 and '--out' in r.stderr

def test_load_encoder_file_incompatible(tmp_path):
    mlm = MaskedLMTransformer(16, 2, 1, 8, 20)
    ck = {'format': 'transformers_scratch.pretrain/1', 'config': dict(emb=32, heads=2, depth=1, seq_len=8, dropout=0.),
          'vocab': ['w'] * 20, 'state_dict': mlm.state_dict()}
    torch.save(ck, tmp_path/'bad.pt')
    with pytest.raises(ValueError, match='does not match'): load_encoder_file(tmp_path/'bad.pt')

def test_cli_pretrain_then_classify_round_trip(tmp_path, monkeypatch):
    "A tiny budget: the real quick configuration runs in tutorial 42 and benchmarks/pretrain.py"
    from transformers_scratch import pretrain as P
    monkeypatch.setitem(P.PRETRAIN_QUICK, 'max_texts', 60)
    monkeypatch.setitem(P.PRETRAIN_QUICK, 'emb', 32)
    monkeypatch.setitem(P.PRETRAIN_QUICK, 'seq_len', 64)
    from transformers_scratch.cli import main
    import io, contextlib
    out = io.StringIO()
    with contextlib.redirect_stdout(out): main(['pretrain', '--quick', '--epochs', '1', '--out', str(tmp_path/'enc.pt')])
    res = json.loads(out.getvalue().strip().splitlines()[-1])
    assert {'masked_accuracy', 'valid_loss', 'seconds', 'device', 'frequency_baseline'} <= set(res)
    ck, _ = load_encoder_file(tmp_path/'enc.pt')
    assert ck['vocab'][ck['vocab'].index('xxmask')] == 'xxmask'
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(['classify', '--quick', '--epochs', '1', '--encoder', str(tmp_path/'enc.pt'), '--out', str(tmp_path/'clf.pt')])
    res = json.loads(out.getvalue().strip().splitlines()[-1])
    for k in ('dataset', 'accuracy', 'valid_loss', 'epochs', 'seconds', 'device', 'model', 'quick', 'train_rows',
              'valid_rows', 'emb', 'heads', 'depth', 'seq_len', 'pos'):
        assert k in res, k
    assert res['emb'] == 32 and res['seq_len'] == 64 and 0 <= res['accuracy'] <= 1
    from transformers_scratch.classify import predict_text   # the fine-tuned classifier is a checkpoint `tfs predict` reads
    p = predict_text(tmp_path/'clf.pt', 'a good film')
    assert p['label'] in ('negative', 'positive') and abs(sum(p['probabilities'].values()) - 1) < 1e-3


def test_masked_accuracy_at_mask_counts_only_masked_positions():
    "A model that copies its input scores on kept positions: `at_mask=True` leaves those out"
    from types import SimpleNamespace
    from transformers_scratch.pretrain import MaskedAccuracy
    M = 9
    x   = torch.tensor([[5, M, 6, M, 7]])
    tgt = torch.tensor([[5, 3, -100, 4, -100]])          # position 0 selected but kept, 1 and 3 masked
    pred = torch.zeros(3, 10); pred[0, 5] = pred[1, 3] = pred[2, 0] = 1.   # right at 0 (copy) and 1, wrong at 3
    learn = SimpleNamespace(y=tgt, pred=pred, xb=(x, tgt != -100), dls=SimpleNamespace(mask_idx=M))
    for at_mask, want in ((False, 2 / 3), (True, 1 / 2)):
        m = MaskedAccuracy(at_mask=at_mask); m.reset(); m.accumulate(learn)
        assert abs(m.value - want) < 1e-9, (at_mask, m.value)
    assert MaskedAccuracy(at_mask=True).name == 'mask_fill_accuracy'
