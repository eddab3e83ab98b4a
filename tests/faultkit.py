"""What every fault case asserts (`tfs` run in-process, exactly one line on stderr, no traceback, nothing left behind),
and the tiny models of each kind that the fault suites forge their hostile files from: one copy for all of them."""
import os, re
from pathlib import Path
from types import SimpleNamespace
import torch
from fastai.torch_core import set_seed
from transformers_scratch.cli import main
from transformers_scratch.config import ModelConfig, TrainConfig
from transformers_scratch.textdata import synth_text_df, text_dls
from transformers_scratch.classify import classifier_learner, save_classifier
from transformers_scratch.lmdata import lm_dls
from transformers_scratch.lm import LM_QUICK, lm_learner, save_lm
from transformers_scratch.translate import Vocab, SPECIALS, PAD, Translator, save_translator
from transformers_scratch.seq2seq import Seq2SeqTransformer
from transformers_scratch.mlm import MaskedLMTransformer
from transformers_scratch.pretrain import save_encoder

ROOT = Path(__file__).resolve().parents[1]
WORDS = 'ein hund der die das im park läuft a dog runs in the park man frau'.split()

def tfs(capsys, *args):
    "`cli.main(args)` in-process: (exit code, stdout, stderr)"
    capsys.readouterr()
    try: main([str(a) for a in args]); code = 0
    except SystemExit as e: code = e.code
    out, err = capsys.readouterr()
    return code, out, err

def one_line(code, err, pattern, want=2):
    "Exit code `want`, exactly one non-empty line on stderr, no traceback (nor abort), and `pattern` (a regex) in it"
    lines = [l for l in err.splitlines() if l.strip()]
    assert code == want, (code, err)
    assert 'Traceback' not in err and 'Aborted' not in err and len(lines) == 1, err
    assert re.search(pattern, lines[0]), lines[0]
    return lines[0]

def left(folder):
    "What is in `folder` (to check that nothing, temporary files included, was left); [] if it is not a folder"
    return sorted(p.name for p in Path(folder).iterdir()) if Path(folder).is_dir() else []

def env(**kw):
    "The environment of a fresh Python that imports this tree"
    return dict(os.environ, PYTHONPATH=str(ROOT), PYTHONWARNINGS='ignore', **kw)

def tiny_models(d):
    """Write a tiny model of each kind into folder `d`, as the library saves them: `clf.pt` (a classifier trained one
    epoch on synthetic texts), `lm.pt` (an untrained character model on Tiny Shakespeare's characters), `tr.pt` (an
    untrained translator) and `enc.pt` (an untrained encoder, as `tfs pretrain` saves it). Returns the classifier's `Learner`"""
    d = Path(d)
    set_seed(0)
    learn = classifier_learner(text_dls(synth_text_df(n=64), seq_len=16, bs=8, device='cpu'),
                               ModelConfig(emb=8, heads=2, depth=1, seq_len=16, dropout=0.1, fast=True, prenorm=False), TrainConfig(lr=3e-2),
                               precision='fp32')
    with learn.no_bar(), learn.no_logging(): learn.fit_one_cycle(1)
    save_classifier(learn, d/'clf.pt')
    r = LM_QUICK['char'].replace(emb=16, heads=2, depth=1, seq_len=16, n_batches=2)
    dls, codec = lm_dls('tinyshakespeare', 'char', r, device='cpu')
    save_lm(lm_learner(dls, r.model, r.train), d/'lm.pt',
            'tinyshakespeare', 'char', codec)
    sv, tv = Vocab(SPECIALS + WORDS), Vocab(SPECIALS + WORDS[::-1])
    torch.manual_seed(0)
    m = Seq2SeqTransformer(ModelConfig(emb=16, heads=2, depth=1, seq_len=12, src_tokens=len(sv), n_tokens=len(tv), pad_idx=PAD,
                                       pos='sinusoidal', fast=True, mult=2, tied=True)).eval()
    save_translator(Translator(m, sv, tv, 'de', 'en'), d/'tr.pt')
    vocab = SPECIALS + ['xxfld', 'xxrep', 'xxmask'] + WORDS
    mlm = MaskedLMTransformer(ModelConfig(emb=16, heads=2, depth=1, seq_len=16, n_tokens=len(vocab), pad_idx=1, fast=True))
    save_encoder(SimpleNamespace(model=mlm, dls=SimpleNamespace(vocab=vocab)), d/'enc.pt', data='imdb_sample', score_on='imdb_sample',
                 n_texts=1)
    return learn
