"Masked-LM pretraining: masking rates, not causal, load_encoder equivalence, no leakage, and the CLI round trip."
import json, os
from pathlib import Path
from dataclasses import asdict, replace
import pytest, torch
from transformers_scratch.config import ModelConfig
from transformers_scratch.mlm import mask_tokens, MaskedLMTransformer
from transformers_scratch.models import ClassificationTransformer
from transformers_scratch.checkpoints import CheckpointError
from transformers_scratch.pretrain import pretrain_texts, load_encoder_file, _FORMAT
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
    m = MaskedLMTransformer(ModelConfig(emb=32, heads=4, depth=2, seq_len=20, n_tokens=50, pad_idx=1, tied=True)).eval()
    x = torch.randint(2, 50, (2, 12))
    y = m(x)
    assert y.shape == (2, 12, 50)
    x2 = x.clone(); x2[:, -1] = (x2[:, -1] + 1) % 50
    assert (m(x2)[:, 0] - y[:, 0]).abs().max() > 1e-4                     # the first position sees the last
    padded = torch.cat([torch.ones(2, 4, dtype=torch.long), x], 1)
    torch.testing.assert_close(m(padded)[:, 4:], y, atol=1e-5, rtol=1e-4)

def cfg(**kw): return ModelConfig(**dict(emb=32, heads=4, depth=3, seq_len=24, n_tokens=70, pad_idx=1, tied=True) | kw)

def test_config_kept_and_one_init():
    c = cfg()
    m = MaskedLMTransformer(c)
    assert m.config is c
    assert m.toprobs.weight is m.trunk.token_emb.weight and m.toprobs.bias is not None     # tied, with its own bias
    u = MaskedLMTransformer(cfg(tied=False))
    assert u.toprobs.weight is not u.trunk.token_emb.weight
    assert m.trunk.token_emb.weight[1].abs().sum() == 0                                    # the padding row
    assert abs(m.trunk.token_emb.weight.std().item() - 0.02) < 0.004                      # `init_weights`: embeddings N(0, 0.02)...
    for lin in (m.head[0], m.trunk.blocks[0].ff[0]):                                        # ...linear layers PyTorch's U(±1/√fan-in)
        assert lin.weight.abs().max() <= lin.in_features ** -0.5 and lin.weight.std() > lin.in_features ** -0.5 / 3
    assert (m.head[2].weight == 1).all()

@pytest.mark.parametrize('fast', [False, True])
def test_load_encoder_equivalence(fast):
    torch.manual_seed(0)
    mlm = MaskedLMTransformer(cfg(fast=fast))
    for p in mlm.parameters(): p.data.normal_()                          # not the initial weights
    clf = ClassificationTransformer(replace(mlm.config, n_classes=2))
    head = clf.toprobs.weight.detach().clone()
    assert clf.load_encoder(mlm) is clf
    mlm.eval(); clf.eval()
    x = torch.cat([torch.ones(3, 5, dtype=torch.long), torch.randint(2, 70, (3, 15))], 1)
    with torch.no_grad(): assert torch.equal(clf.encode(x), mlm.encode(x))
    assert torch.equal(clf.toprobs.weight, head)

@pytest.mark.parametrize('kw,what', [(dict(n_tokens=71), 'n_tokens'), (dict(emb=64), 'emb'), (dict(depth=2), 'depth'),
                                     (dict(seq_len=25), 'seq_len'), (dict(heads=8), 'heads'), (dict(prenorm=False), 'prenorm'),
                                     (dict(pad_idx=None), 'pad_idx'), (dict(pos='sinusoidal'), 'pos'),
                                     (dict(emb_scale=True), 'emb_scale')])
def test_load_encoder_mismatch(kw, what):
    mlm = MaskedLMTransformer(cfg())
    with pytest.raises(ValueError, match=what): ClassificationTransformer(cfg(n_classes=2, **kw)).load_encoder(mlm)

def test_an_emb_scale_encoder_is_refused_by_a_classifier_without_it():
    "The option the hand-kept list missed: an encoder that multiplies its embeddings by √e is another function"
    mlm = MaskedLMTransformer(cfg(emb_scale=True))
    with pytest.raises(ValueError, match=r"emb_scale=True \(classifier: False\)") as e:
        ClassificationTransformer(cfg(n_classes=2)).load_encoder(mlm)
    assert '\n' not in str(e.value) and str(e.value).startswith('mlm: ')
    ClassificationTransformer(cfg(n_classes=2, emb_scale=True)).load_encoder(mlm)            # with it: loads

def _other(c, k):
    "A value of field `k` other than `c`'s that still makes a valid configuration, or None"
    from dataclasses import fields as dc_fields
    from transformers_scratch.config import CHOICES, ConfigError
    v = getattr(c, k)
    kind = next(f.type for f in dc_fields(c) if f.name == k)
    if k in CHOICES: tries = [x for x in CHOICES[k] if x != v]
    elif isinstance(v, bool): tries = [not v]
    elif isinstance(v, float): tries = [v * 2, v / 2, v + 0.1]
    elif isinstance(v, int): tries = [v * 2, v + 1, v - 1, 2, 1]
    else: tries = [2, 1, 4, 8, 64]                                      # None: an optional integer
    if 'None' in str(kind) and v is not None: tries.append(None)
    for x in tries:
        if x == v: continue
        try: replace(c, **{k: x}); return x
        except (ConfigError, TypeError): pass
    return None

BASES = [cfg(), cfg(mlp='swiglu', bias=False, pos='rope')]   # the plain MLP and Llama's: between them every field can change

def test_load_encoder_compares_every_field_of_the_configuration_but_those_that_may_differ():
    "The compared set is built from fields(ModelConfig), not from a list: a field added later is compared without an edit"
    from dataclasses import fields as dc_fields
    from transformers_scratch.models import ENCODER_MAY_DIFFER
    names = [f.name for f in dc_fields(ModelConfig)]
    assert set(ENCODER_MAY_DIFFER) < set(names)                         # the allowed differences are real fields
    for k in names:
        base = next((b for b in BASES if _other(replace(b, n_classes=2), k) is not None), None)
        assert base is not None, f"no valid second value of {k} to test it with"
        mlm, c = MaskedLMTransformer(base), replace(base, n_classes=2)
        clf = ClassificationTransformer(replace(c, **{k: _other(c, k)}))
        if k in ENCODER_MAY_DIFFER: assert clf.load_encoder(mlm) is clf, k
        else:
            with pytest.raises(ValueError, match=rf"mlm: .*\b{k}="): clf.load_encoder(mlm)

def test_a_field_added_to_the_configuration_later_is_compared():
    "A ModelConfig with one more field (as a later issue might add): load_encoder compares it, no list edited"
    from dataclasses import dataclass
    @dataclass(kw_only=True)
    class Later(ModelConfig): new_option: int = 0
    c = Later(**asdict(cfg()))
    mlm = MaskedLMTransformer(c)
    ClassificationTransformer(replace(c, n_classes=2)).load_encoder(mlm)
    with pytest.raises(ValueError, match=r"new_option=0 \(classifier: 1\)"):
        ClassificationTransformer(replace(c, n_classes=2, new_option=1)).load_encoder(mlm)

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

def test_cli_errors(tmp_path, capsys):
    "Refusals of `tfs classify --encoder` and `tfs pretrain`, one line each (in-process: `faultkit.tfs`; real processes: test_faults)"
    from faultkit import tfs as run
    def refused(*args, want='', code=None):
        c, out, err = run(capsys, *args)
        assert c != 0 and (code is None or c == code) and len(err.strip().splitlines()) == 1 and want in err, (args, c, err)
    refused('classify', '--encoder', tmp_path/'missing.pt', '--quick', want='no such file')
    (tmp_path/'junk.pt').write_bytes(b'not a checkpoint')
    refused('classify', '--encoder', tmp_path/'junk.pt', '--quick', want='not an encoder')
    torch.save({'format': 'transformers_scratch.lm/1'}, tmp_path/'lm.pt')
    refused('classify', '--encoder', tmp_path/'lm.pt', '--quick', want='not an encoder')
    refused('pretrain', '--quick', want='--out')
    for flag in (['--pos', 'sinusoidal'], ['--emb', '32'], ['--data', 'ag_news']):   # the sizes are the encoder's: refused, not ignored
        refused('classify', '--encoder', tmp_path/'junk.pt', '--quick', *flag, want='sizes come from the encoder', code=2)

def test_load_encoder_file_incompatible(tmp_path):
    small = ModelConfig(emb=16, heads=2, depth=1, seq_len=8, n_tokens=20, pad_idx=1, tied=True)
    mlm = MaskedLMTransformer(small)
    good = {'format': _FORMAT, 'config': asdict(small), 'vocab': [f'w{i}' for i in range(20)], 'state_dict': mlm.state_dict()}
    torch.save(good, tmp_path/'good.pt')
    ck, back = load_encoder_file(tmp_path/'good.pt')
    assert back.config == small and ck['config'] == asdict(small)                          # the configuration, whole
    for name, ck, why in [
            ('wider', dict(good, config=asdict(replace(small, emb=32))), r'damaged: weights: .*size mismatch'),
            ('vocab', dict(good, vocab=good['vocab'][:-1]), 'damaged: config n_tokens is 20 and its vocabulary has 19 words'),
            ('unknown', dict(good, config=dict(good['config'], tie=True)), r"damaged: config has unknown keys \['tie'\]"),
            ('heads', dict(good, config=dict(good['config'], heads=3)), 'damaged: config heads: 3 does not divide emb=16'),
            ('huge', dict(good, config=dict(good['config'], emb=2**16, depth=1024)), 'damaged: config emb: .*memory'),
            ('old', dict(good, format='transformers_scratch.pretrain/1'), 'is not an encoder saved by `tfs pretrain`$')]:
        torch.save(ck, tmp_path/f'{name}.pt')
        with pytest.raises(CheckpointError, match=why) as e: load_encoder_file(tmp_path/f'{name}.pt')
        assert '\n' not in str(e.value) and str(e.value).startswith(f"encoder: '{tmp_path/name}.pt' is not an encoder saved by")

def test_finetune_learner_takes_the_encoders_config():
    from transformers_scratch.pretrain import finetune_learner, finetune_config, FINETUNE_QUICK
    from transformers_scratch.config import ConfigError, TrainConfig
    from fastai.data.core import DataLoaders
    from fastai.data.load import DataLoader
    mlm = MaskedLMTransformer(cfg())
    x, y = torch.randint(2, 70, (8, 24)), torch.randint(0, 2, (8,))
    dl = DataLoader(list(zip(x, y)), bs=4)
    dls = DataLoaders(dl, dl, device='cpu')
    dls.vocab, dls.c = (['xxunk', 'xxpad'] + ['w'] * 68, ['neg', 'pos']), 2
    r = FINETUNE_QUICK.replace(dropout=0.2, pool='max', wd=0.3)
    learn = finetune_learner(dls, finetune_config(mlm.config, r.model), r.train, mlm)
    c = learn.model.config
    assert c == replace(mlm.config, n_classes=2, dropout=0.2, pool='max', tied=False, fast=True)   # the data's classes, the recipe's own
    assert learn.wd == 0.3 and learn.lr == r.train.lr
    assert torch.equal(learn.model.trunk.token_emb.weight, mlm.trunk.token_emb.weight)
    for k, v in (('emb', 64), ('depth', 1), ('emb_scale', True)):              # a size comes from the encoder: a recipe setting one is refused
        with pytest.raises(ConfigError, match=rf"^{k}: comes from the encoder"): finetune_config(mlm.config, FINETUNE_QUICK.replace(**{k: v}).model)
    with pytest.raises(TypeError, match='^train: expected a TrainConfig'): finetune_learner(dls, c, dict(lr=1e-3), mlm)
    with pytest.raises(TypeError, match='^config: expected a ModelConfig'): finetune_learner(dls, {}, TrainConfig(), mlm)
    dls.vocab = (['xxunk', 'xxpad'] + ['w'] * 69, ['neg', 'pos'])
    with pytest.raises(ValueError, match="encoder's vocabulary"): finetune_learner(dls, c, r.train, mlm)

def test_mlm_learner_fills_what_the_data_decides():
    from transformers_scratch.pretrain import mlm_learner, mlm_dls, PRETRAIN_QUICK
    texts = [' '.join(['the movie was good and the plot was bad'] * 8)] * 30
    dls = mlm_dls(texts, seq_len=16, bs=4, max_vocab=100, p=0.3, device='cpu')
    r = PRETRAIN_QUICK.replace(emb=32, seq_len=16, wd=0.05)
    learn = mlm_learner(dls, r.model, r.train)
    assert learn.model.config == replace(r.model, n_tokens=len(dls.vocab), pad_idx=1) and learn.wd == 0.05
    assert learn.model.toprobs.weight is learn.model.trunk.token_emb.weight                  # the recipe's tied head

def test_cli_pretrain_then_classify_round_trip(tmp_path, monkeypatch):
    "A tiny budget: the real quick configuration runs in tutorial 42 and benchmarks/pretrain.py"
    from transformers_scratch import pretrain as P
    monkeypatch.setattr(P, 'PRETRAIN_QUICK', P.PRETRAIN_QUICK.replace(max_train=60, emb=32, seq_len=64))   # the CLI reads it when it runs
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

def test_score_on_file_is_named_by_its_flag(tmp_path, monkeypatch):
    "IMDB_SAMPLE read for --score-on (to drop its validation reviews from IMDB's texts): a damaged file names --score-on, not --data"
    import shutil
    from transformers_scratch.data import DataFileError
    from transformers_scratch.pretrain import pretrain_texts
    shutil.copytree(Path(os.environ['TFS_DATA'])/'imdb_sample', tmp_path/'imdb_sample')
    (tmp_path/'aclImdb_csv').symlink_to(Path(os.environ['TFS_DATA'])/'aclImdb_csv')
    (tmp_path/'imdb_sample'/'texts.csv').write_bytes(b'label,text,is_valid\n\xff\xfe,bad\n')
    monkeypatch.setenv('TFS_DATA', str(tmp_path))
    with pytest.raises(DataFileError, match=r'^--score-on imdb_sample: .*texts\.csv'): pretrain_texts('imdb', 'imdb_sample')
