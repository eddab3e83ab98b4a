#!/usr/bin/env python
"""IMDB benchmarks, measured side by side in one run (numbers for the README's results table).

    python benchmarks/imdb.py                  # IMDB_SAMPLE, quick budget: our transformer vs fastai's AWD_LSTM
    python benchmarks/imdb.py --variants       # ... plus sinusoidal positions and max pooling
    python benchmarks/imdb.py --crops          # ... which end of a long review to keep (end, start, both)
    python benchmarks/imdb.py --seeds 3        # repeat with seeds 0, 1, 2 and report mean and spread
    python benchmarks/imdb.py --full           # the full IMDB (25k train, 25k test), FULL configuration: meant for a GPU

Offline, set TFS_DATA to the data folder first. Every model of one table sees the same DataLoaders (same split, same
tokens, same crop) and the same budget (epochs, one-cycle schedule). Prints a markdown table, then one JSON line.
"""
import argparse, json, os, platform, statistics, sys, time
import torch
from fastai.torch_core import set_seed
from transformers_scratch.core import default_device
from transformers_scratch.data import imdb_sample_df, imdb_df
from transformers_scratch.classify import (text_dls, classifier_learner, awd_lstm_learner, fit_and_score, QUICK, FULL)

AWD_LR = 1e-2   # the best of 3e-3, 1e-2 and 3e-2 for the quick AWD_LSTM on IMDB_SAMPLE (8 epochs)

def hardware():
    "The machine in words: GPU name, or CPU model and core count, and torch's thread count"
    if torch.cuda.is_available(): return f"{torch.cuda.get_device_name(0)} (CUDA {torch.version.cuda})"
    cpu = platform.processor() or platform.machine()
    try: cpu = next(l.split(':', 1)[1].strip() for l in open('/proc/cpuinfo') if l.startswith('model name'))
    except (OSError, StopIteration): pass
    return f"CPU {cpu}, {os.cpu_count()} cores, {torch.get_num_threads()} torch threads"

def model_args(cfg, **kw): return dict({k: cfg[k] for k in ('emb', 'heads', 'depth', 'seq_len', 'dropout')}, **kw)

def runs(cfg, quick, variants):
    "name -> (make learner from dls, weight decay)"
    r = {'transformer (learned pos, mean pool)': (lambda d: classifier_learner(d, **model_args(cfg)), cfg['wd'])}
    if variants:
        r['transformer (sinusoidal pos, mean pool)'] = (lambda d: classifier_learner(d, **model_args(cfg, pos='sinusoidal')), cfg['wd'])
        r['transformer (learned pos, max pool)'] = (lambda d: classifier_learner(d, **model_args(cfg, pool='max')), cfg['wd'])
    r['AWD_LSTM from scratch (fastai)'] = (lambda d: awd_lstm_learner(d, quick=quick), None)
    return r

def table(rows, seeds):
    "Markdown table of `rows` (name -> list of results, one per seed)"
    acc = lambda rs: (f"{statistics.mean(r['accuracy'] for r in rs):.1%}" +
                      (f" ± {statistics.stdev(r['accuracy'] for r in rs):.1%}" if len(rs) > 1 else ''))
    lines = [f"| model | accuracy{' (mean ± sd over %d seeds)' % seeds if seeds > 1 else ''} | valid loss | params | seconds per run |",
             '|---|---|---|---|---|']
    for name, rs in rows.items():
        lines.append(f"| {name} | {acc(rs)} | {statistics.mean(r['valid_loss'] for r in rs):.3f} | {rs[0]['params']:,} | "
                     f"{statistics.mean(r['seconds'] for r in rs):.0f} |")
    return '\n'.join(lines)

def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--full', action='store_true', help='the full IMDB and the FULL configuration (meant for a GPU)')
    p.add_argument('--variants', action='store_true', help='also sinusoidal positions and max pooling')
    p.add_argument('--crops', action='store_true', help='compare keeping the end, the start or both ends of long reviews')
    p.add_argument('--no-lstm', action='store_true', help='leave out the AWD_LSTM baseline')
    p.add_argument('--seeds', type=int, default=1)
    p.add_argument('--epochs', type=int, help='override the configuration\'s epochs')
    a = p.parse_args(argv)
    cfg = dict(FULL if a.full else QUICK)
    if a.epochs: cfg['epochs'] = a.epochs
    start = time.perf_counter()
    df = imdb_df() if a.full else imdb_sample_df()
    what = 'full IMDB (25,000 train / 25,000 test)' if a.full else 'IMDB_SAMPLE (800 train / 200 valid)'
    keeps = ['end', 'start', 'both'] if a.crops else ['end']
    results, data_secs = {}, {}
    for keep in keeps:
        t = time.perf_counter()
        dls = text_dls(df, seq_len=cfg['seq_len'], bs=cfg['bs'], max_vocab=cfg['max_vocab'], keep=keep)
        data_secs[keep] = round(time.perf_counter() - t, 1)
        todo = runs(cfg, not a.full, a.variants and keep == 'end')
        if a.no_lstm or keep != 'end': todo.pop('AWD_LSTM from scratch (fastai)')
        for name, (make, wd) in todo.items():
            label = name if not a.crops else f"{name}, keep {keep}"
            for seed in range(a.seeds):
                set_seed(seed)
                r = fit_and_score(make(dls), cfg['epochs'], AWD_LR if 'AWD' in name else cfg['lr'], wd=wd)
                print(f"{label}, seed {seed}: {r}", file=sys.stderr, flush=True)
                results.setdefault(label, []).append(r)
    total = round(time.perf_counter() - start, 1)
    hw = hardware()
    print(f"\n{what}, {cfg['epochs']} epochs each, seq_len {cfg['seq_len']}, on {hw}")
    print(f"tokenizing took {', '.join(f'{v:.0f}s' for v in data_secs.values())}; whole run {total:.0f}s\n")
    print(table(results, a.seeds))
    summary = {'dataset': 'imdb' if a.full else 'imdb_sample', 'epochs': cfg['epochs'], 'seeds': a.seeds,
               'hardware': hw, 'device': default_device().type, 'seconds': total, 'tokenize_seconds': data_secs,
               'results': {k: {'accuracy': [r['accuracy'] for r in v], 'seconds': [r['seconds'] for r in v],
                               'params': v[0]['params']} for k, v in results.items()}}
    print(json.dumps(summary))

if __name__ == '__main__': main()
