#!/usr/bin/env python
"""Lesson 22a's comparison over several seeds: lesson 22's character model on characters and on lesson 19's BPE tokens of
tiny Shakespeare, at the same budget, in bits per byte on the same validation text.

As the lesson does it: `LM_QUICK['char']` (2 blocks of width 128, windows of 64 tokens, batches of 32) with
`n_batches=--steps` (200), trained with `lm_learner` and `fit_one_cycle`; a `BPETokenizer` of `--vocab` ids (512)
learned from the first 90% of the play; both scored on the last 10% as bits per byte = nats per token x tokens /
(bytes x ln 2). Seeds 0..`--seeds`-1 (the lesson runs seed 0 alone). Prints the machine, a markdown table (mean ± sd
and each seed), then one JSON line with every number.

    python benchmarks/bpe_shakespeare.py              # 3 seeds, 200 steps, 512 ids
    python benchmarks/bpe_shakespeare.py --seeds 5 --steps 400
"""
import argparse, json, math, statistics, sys, time
import torch
from fastai.data.core import DataLoaders
from fastai.torch_core import set_seed
from transformers_scratch.bpe import BPETokenizer
from transformers_scratch.data import shakespeare_text
from transformers_scratch.lm import LM_QUICK, lm_learner
from transformers_scratch.lmdata import CharWindows, RandomWindowDL, char_dls
from bpe_classify import machine   # this folder's: the machine in words

class Ids:
    "A vocabulary of `n` token ids, as `lm_learner` reads it (`len`)"
    def __init__(self, n): self.n = n
    def __len__(self): return self.n

def bpe_dls(train_ids, valid_ids, n_vocab, seq_len, bs, n_batches):
    "22a's `bpe_dls`: windows of BPE ids as `char_dls` makes them of characters"
    trn = CharWindows(torch.tensor(train_ids), seq_len, 1, Ids(n_vocab))
    val = CharWindows(torch.tensor(valid_ids), seq_len, seq_len, Ids(n_vocab))
    return DataLoaders(RandomWindowDL(trn, bs=bs, shuffle=True, drop_last=True, n=n_batches * bs), RandomWindowDL(val, bs=bs))

def score(make_dls, recipe, tokens, valid_bytes, seed):
    "22a's `bits_per_byte`: train with `seed`; bits per byte, nats per token, seconds"
    set_seed(seed)
    t0 = time.perf_counter()
    learn = lm_learner(make_dls(), recipe.model, recipe.train)
    with learn.no_bar(), learn.no_logging():
        learn.fit_one_cycle(recipe.train.epochs, recipe.train.lr)
        nats = float(learn.validate()[0])
    return {'bits_per_byte': round(nats * tokens / valid_bytes / math.log(2), 4), 'nats_per_token': round(nats, 4),
            'seconds': round(time.perf_counter() - t0, 1)}

def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--seeds', type=int, default=3)
    p.add_argument('--steps', type=int, default=200, help='training steps (n_batches) of each model')
    p.add_argument('--vocab', type=int, default=512, help="the BPE's ids")
    a = p.parse_args(argv)
    text = shakespeare_text()
    cut = int(len(text) * 0.9)
    recipe = LM_QUICK['char'].replace(n_batches=a.steps)
    r = recipe.train
    tok = BPETokenizer.train(text[:cut], a.vocab, special=())
    train_ids, valid_ids = tok.encode(text[:cut]), tok.encode(text[cut:])
    valid_bytes = len(text[cut:].encode('utf-8'))
    rows = {'characters': [], f'BPE, {a.vocab} ids': []}
    for seed in range(a.seeds):     # interleaved: both see the same load
        rows['characters'].append(score(lambda: char_dls(text, seq_len=recipe.model.seq_len, bs=r.bs, n_batches=r.n_batches), recipe,
                                        len(text) - cut, valid_bytes, seed))
        rows[f'BPE, {a.vocab} ids'].append(score(lambda: bpe_dls(train_ids, valid_ids, len(tok), recipe.model.seq_len, r.bs, r.n_batches),
                                                 recipe, len(valid_ids), valid_bytes, seed))
        print(f"seed {seed}: " + ', '.join(f"{k} {v[-1]}" for k, v in rows.items()), file=sys.stderr, flush=True)
    hw = machine()
    print(f"\ntiny Shakespeare, LM_QUICK['char'] with {a.steps} steps of {r.bs} windows of {recipe.model.seq_len} tokens each; "
          f"BPE of {len(tok)} ids ({valid_bytes / len(valid_ids):.2f} bytes per token on the validation text); {a.seeds} seeds; on {hw}")
    ms = lambda xs, f: f"{statistics.mean(xs):{f}}" + (f" ± {statistics.stdev(xs):{f}}" if len(xs) > 1 else '')
    print("| tokens | bits per byte (mean ± sd) | each seed | nats per token | seconds per run |")
    print("|---|---|---|---|---|")
    for name, rs in rows.items():
        b = [x['bits_per_byte'] for x in rs]
        print(f"| {name} | {ms(b, '.3f')} | {', '.join(f'{x:.3f}' for x in b)} | {ms([x['nats_per_token'] for x in rs], '.3f')} | "
              f"{statistics.mean(x['seconds'] for x in rs):.0f} |")
    gaps = [c['bits_per_byte'] - t['bits_per_byte'] for c, t in zip(*rows.values())]
    print(f"characters minus BPE, per seed: {', '.join(f'{g:+.3f}' for g in gaps)} bits per byte")
    print(json.dumps({'machine': hw, 'steps': a.steps, 'vocab': len(tok), 'seeds': a.seeds, 'rows': rows, 'gap': gaps}))

if __name__ == '__main__': main()
