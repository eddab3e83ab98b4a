#!/usr/bin/env python
"""The IMDB classifier on lesson 19's byte-level BPE tokens beside spaCy's words, in the quick configuration, side by side.

The data and the model are `tfs classify --data imdb --quick`'s: `CLASSIFY_QUICK` (one block of width 64, reviews cropped
to their last 128 tokens, 8 epochs) on 2,000 training and 1,000 validation reviews sampled from the full IMDB with seed 0.
Only the tokens differ:

- spaCy words: `text_dls`, as lessons 11-12 make them (fastai's rules, a vocabulary of the words seen 3 times or more);
- BPE: a `BPETokenizer` (lesson 19) learned from the 2,000 training reviews alone, `--vocab` ids, on the raw text; its
  ids go through the same `text_block` (same cropping, padding and batching), shifted by two to make room for fastai's
  `xxunk` and `xxpad`.

Every tokenization trains the same model with seeds 0..`--seeds`-1 (the sample of reviews stays seed 0's). Prints the
machine, a markdown table (accuracy mean ± sd, tokens per review, how many reviews the crop cuts, seconds), then one
JSON line with every number.

    python benchmarks/bpe_classify.py                          # BPE of 1,024 and 8,192 ids vs spaCy, 3 seeds
    python benchmarks/bpe_classify.py --vocab 4096 --seeds 1
"""
import argparse, json, os, platform, statistics, sys, time
import numpy as np, pandas as pd, torch
from fastai.torch_core import set_seed
from transformers_scratch.bpe import BPETokenizer, bytes_to_unicode
from transformers_scratch.classify import CLASSIFY_QUICK, classifier_learner, sample_rows
from transformers_scratch.data import imdb_df
from transformers_scratch.runtime import default_device
from transformers_scratch.textdata import text_dls, text_block

def machine():
    "The machine in words: the GPU, or the CPU model, its cores and torch's threads"
    if torch.cuda.is_available(): return f"{torch.cuda.get_device_name(0)} (CUDA {torch.version.cuda})"
    try: cpu = next(l.split(':', 1)[1].strip() for l in open('/proc/cpuinfo') if l.startswith('model name'))
    except (OSError, StopIteration): cpu = platform.processor() or platform.machine()
    return f"CPU {cpu}, {os.cpu_count()} cores, {torch.get_num_threads()} torch threads, load average {os.getloadavg()[0]:.1f}"

def bpe_dls(df, tok, seq_len, bs, keep, seed=0):
    "`text_dls`'s DataLoaders with `tok`'s ids instead of spaCy's words: ids + 2, after fastai's xxunk (0) and xxpad (1)"
    b2u = bytes_to_unicode()
    vocab = ['xxunk', 'xxpad'] + [''.join(b2u[b] for b in tok.vocab[i]) for i in range(len(tok))]
    ids = [np.asarray(tok.encode(t), dtype=np.int32) + 2 for t in df.text]
    items = df[['label', 'is_valid']].reset_index(drop=True).assign(text=pd.Series(ids, dtype=object), text_length=[len(o) for o in ids])
    set_seed(seed)
    return text_block(vocab, seq_len, keep).dataloaders(items, bs=bs, device=default_device())

def lengths(dls):
    "Tokens per review, all reviews (before cropping)"
    return np.concatenate([dl.dataset.items.text_length.values for dl in (dls.train, dls.valid)])

def fit(dls, recipe, seed):
    "Train `recipe`'s classifier on `dls` with `seed`, quietly: the last epoch's validation accuracy and loss, the seconds"
    set_seed(seed)
    t0 = time.perf_counter()
    learn = classifier_learner(dls, recipe.model, recipe.train)
    with learn.no_bar(), learn.no_logging(): learn.fit_one_cycle(recipe.train.epochs)
    _, loss, acc = learn.recorder.values[-1]
    return {'accuracy': round(float(acc), 4), 'valid_loss': round(float(loss), 4), 'seconds': round(time.perf_counter() - t0, 1)}

def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--vocab', type=int, nargs='+', default=[1024, 8192], help='BPE vocabulary sizes (ids in all)')
    p.add_argument('--seeds', type=int, default=3)
    a = p.parse_args(argv)
    recipe = CLASSIFY_QUICK
    m, t = recipe.model, recipe.train
    start = time.perf_counter()
    df = sample_rows(imdb_df(), t.max_train, t.max_valid, seed=0)          # `tfs classify --data imdb --quick`'s sample
    train_text = '\n'.join(df.text[~df.is_valid])
    rows = {}
    t0 = time.perf_counter()
    dls = text_dls(df, m.seq_len, t.bs, t.max_vocab, keep=t.keep, seed=0)
    rows['spaCy words'] = {'vocab': len(dls.vocab[0]), 'tokenize_seconds': round(time.perf_counter() - t0, 1), 'dls': dls}
    for v in a.vocab:
        t0 = time.perf_counter()
        tok = BPETokenizer.train(train_text, v, special=())
        t_train = time.perf_counter() - t0
        dls = bpe_dls(df, tok, m.seq_len, t.bs, t.keep)
        rows[f'BPE, {v:,} ids'] = {'vocab': len(dls.vocab[0]), 'bpe_train_seconds': round(t_train, 1),
                                    'tokenize_seconds': round(time.perf_counter() - t0, 1), 'dls': dls}
    for name, r in rows.items():
        n = lengths(r['dls'])
        r.update(tokens_per_review=round(float(n.mean()), 1), median_tokens=int(np.median(n)), cropped=round(float((n > m.seq_len).mean()), 4),
                 runs=[])
        for seed in range(a.seeds):
            r['runs'].append(fit(r.pop('dls') if seed == a.seeds - 1 else r['dls'], recipe, seed))
            print(f"{name}, seed {seed}: {r['runs'][-1]}", file=sys.stderr, flush=True)
    hw = machine()
    print(f"\nIMDB, CLASSIFY_QUICK ({t.max_train:,} training / {t.max_valid:,} validation reviews, seq_len {m.seq_len} keeping the "
          f"{t.keep}, {t.epochs} epochs, emb {m.emb}, depth {m.depth}), {a.seeds} seed{'s' * (a.seeds > 1)}, on {hw}; "
          f"whole run {time.perf_counter() - start:.0f} s")
    acc = lambda rs: f"{statistics.mean(x['accuracy'] for x in rs):.1%}" + (f" ± {statistics.stdev(x['accuracy'] for x in rs):.1%}" if len(rs) > 1 else '')
    print("| tokens | vocabulary | tokens per review (mean / median) | reviews cropped | accuracy | valid loss | seconds per run | tokenizing s |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r in rows.items():
        rs = r['runs']
        print(f"| {name} | {r['vocab']:,} | {r['tokens_per_review']:.0f} / {r['median_tokens']} | {r['cropped']:.0%} | {acc(rs)} | "
              f"{statistics.mean(x['valid_loss'] for x in rs):.3f} | {statistics.mean(x['seconds'] for x in rs):.0f} | {r['tokenize_seconds']:.0f} |")
    print(json.dumps({'machine': hw, 'seeds': a.seeds, 'recipe': 'CLASSIFY_QUICK', 'data': 'imdb', 'rows': rows}))

if __name__ == '__main__': main()
