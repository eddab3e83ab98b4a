#!/usr/bin/env python
"""IMDB benchmarks, measured side by side in one run (numbers for the README's results table).

    python benchmarks/imdb.py                  # IMDB_SAMPLE, quick budget: our transformer vs fastai's AWD_LSTM
    python benchmarks/imdb.py --variants       # ... plus sinusoidal positions and max pooling
    python benchmarks/imdb.py --crops          # ... which end of a long review to keep (end, start, both)
    python benchmarks/imdb.py --seeds 3        # repeat with seeds 0, 1, 2 and report mean and spread
    python benchmarks/imdb.py --full --no-lstm # the full IMDB (25k train, 25k test), CLASSIFY_FULL['imdb']: meant for a GPU

Offline, set TFS_DATA to the data folder first. Every model of one table sees the same DataLoaders (same split, same
tokens, same crop) and the same budget (epochs, one-cycle schedule). Prints a markdown table, then one JSON line.
With --full the token ids are cached on disk (see `numericalize_df`; the first run tokenizes, later ones read the
cache: pass --no-cache to time a cold start), each model validates once, after its last epoch, and the time is
split into tokenizing, training and evaluating.
"""
import argparse, json, os, platform, statistics, sys, time
from dataclasses import replace
import torch
from fastai.torch_core import set_seed
from fastai.metrics import accuracy
from fastai.text.learner import text_classifier_learner
from fastai.text.models.awdlstm import AWD_LSTM, awd_lstm_clas_config
from transformers_scratch.runtime import default_device, set_precision, n_params
from transformers_scratch.data import imdb_sample_df, imdb_df
from transformers_scratch.textdata import text_dls, cache_dir
from transformers_scratch.classify import classifier_learner, ValidateAtEnd, CLASSIFY_QUICK, CLASSIFY_FULL

AWD_LR = 1e-2   # the best of 3e-3, 1e-2 and 3e-2 for the quick AWD_LSTM on IMDB_SAMPLE (8 epochs)
AWD_QUICK = dict(emb_sz=64, n_hid=128, n_layers=2)   # 12_imdb's `awd_lstm_learner`: about the quick transformer's size

def awd_lstm_learner(dls, quick=True, precision='auto'):
    "fastai's `AWD_LSTM` classifier from scratch (no pretraining) on `dls`, smaller in `quick` mode"
    cfg = dict(awd_lstm_clas_config, **(AWD_QUICK if quick else {}))
    return set_precision(text_classifier_learner(dls, AWD_LSTM, config=cfg, pretrained=False, metrics=accuracy), precision)

def fit_and_score(learn, epochs, lr, wd=None,
                  validate_at_end=False,  # validate only after the last epoch (`ValidateAtEnd`), and time it apart
                 ):
    "Train `learn` with `fit_one_cycle`, quietly; its validation accuracy and loss, seconds, parameter count and precision"
    start, val = time.perf_counter(), ValidateAtEnd() if validate_at_end else None
    with learn.no_bar(), learn.no_logging(): learn.fit_one_cycle(epochs, lr, wd=wd, cbs=val)
    _, loss, acc = learn.recorder.values[-1]
    res = {'accuracy': round(float(acc), 4), 'valid_loss': round(float(loss), 4),
           'seconds': round(time.perf_counter() - start, 1), 'params': n_params(learn.model),
           'precision': getattr(learn, 'precision', 'fp32')}
    if val is not None: res.update(train_seconds=round(res['seconds'] - val.seconds, 1), eval_seconds=round(val.seconds, 1))
    return res

def hardware():
    "The machine in words: GPU name, or CPU model and core count, and torch's thread count"
    if torch.cuda.is_available(): return f"{torch.cuda.get_device_name(0)} (CUDA {torch.version.cuda})"
    cpu = platform.processor() or platform.machine()
    try: cpu = next(l.split(':', 1)[1].strip() for l in open('/proc/cpuinfo') if l.startswith('model name'))
    except (OSError, StopIteration): pass
    return f"CPU {cpu}, {os.cpu_count()} cores, {torch.get_num_threads()} torch threads"

def runs(recipe, quick, variants, precision='auto'):
    "name -> (make learner from dls, weight decay): the transformers of `recipe` (the lessons' `Recipe`), fastai's AWD_LSTM"
    m, t = recipe.model, recipe.train
    make = lambda **kw: (lambda d: classifier_learner(d, replace(m, **kw), t, precision=precision))
    r = {'transformer (learned pos, mean pool)': (make(), t.wd)}
    if variants:
        r['transformer (sinusoidal pos, mean pool)'] = (make(pos='sinusoidal'), t.wd)
        r['transformer (learned pos, max pool)'] = (make(pool='max'), t.wd)
    r['AWD_LSTM from scratch (fastai)'] = (lambda d: awd_lstm_learner(d, quick=quick, precision=precision), None)
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
    p.add_argument('--full', action='store_true', help="the full IMDB and CLASSIFY_FULL['imdb'] (meant for a GPU)")
    p.add_argument('--no-cache', action='store_true', help='tokenize again instead of reading the cached token ids')
    p.add_argument('--precision', choices=['auto', 'bf16', 'fp16', 'fp32'], default='auto')
    p.add_argument('--variants', action='store_true', help='also sinusoidal positions and max pooling')
    p.add_argument('--crops', action='store_true', help='compare keeping the end, the start or both ends of long reviews')
    p.add_argument('--no-lstm', action='store_true', help='leave out the AWD_LSTM baseline')
    p.add_argument('--seeds', type=int, default=1)
    p.add_argument('--epochs', type=int, help='override the recipe\'s epochs')
    a = p.parse_args(argv)
    recipe = (CLASSIFY_FULL['imdb'] if a.full else CLASSIFY_QUICK).replace(epochs=a.epochs)   # the lessons' and `tfs classify`'s recipe
    m, t = recipe.model, recipe.train
    start = time.perf_counter()
    df = imdb_df() if a.full else imdb_sample_df()
    what = 'full IMDB (25,000 train / 25,000 test)' if a.full else 'IMDB_SAMPLE (800 train / 200 valid)'
    keeps = ['end', 'start', 'both'] if a.crops else [t.keep]
    results, data_secs = {}, {}
    for keep in keeps:
        t0 = time.perf_counter()
        dls = text_dls(df, seq_len=m.seq_len, bs=t.bs, max_vocab=t.max_vocab, keep=keep,
                       num_workers=t.num_workers, cache=a.full and not a.no_cache)
        data_secs[keep] = round(time.perf_counter() - t0, 1)
        todo = runs(recipe, not a.full, a.variants and keep == keeps[0], a.precision)
        if a.no_lstm or keep != keeps[0]: todo.pop('AWD_LSTM from scratch (fastai)')
        for name, (make, wd) in todo.items():
            label = name if not a.crops else f"{name}, keep {keep}"
            for seed in range(a.seeds):
                set_seed(seed)
                r = fit_and_score(make(dls), t.epochs, AWD_LR if 'AWD' in name else t.lr, wd=wd, validate_at_end=a.full)
                print(f"{label}, seed {seed}: {r}", file=sys.stderr, flush=True)
                results.setdefault(label, []).append(r)
    total = round(time.perf_counter() - start, 1)
    hw = hardware()
    precisions = sorted({r['precision'] for rs in results.values() for r in rs})
    print(f"\n{what}, {t.epochs} epochs each, seq_len {m.seq_len} (keep {'/'.join(keeps)}), batch {t.bs}, "
          f"on {hw}, device {default_device().type}, precision {'/'.join(precisions)}")
    print(f"tokenizing took {', '.join(f'{v:.0f}s' for v in data_secs.values())}"
          f"{' (token cache: ' + str(cache_dir()) + ')' if a.full and not a.no_cache else ''}; whole run {total:.0f}s")
    for name, rs in results.items():
        if 'train_seconds' in rs[0]:
            print(f"{name}: training {statistics.mean(r['train_seconds'] for r in rs):.0f}s, "
                  f"evaluating {statistics.mean(r['eval_seconds'] for r in rs):.0f}s per run")
    print()
    print(table(results, a.seeds))
    summary = {'dataset': 'imdb' if a.full else 'imdb_sample', 'epochs': t.epochs, 'seeds': a.seeds,
               'hardware': hw, 'device': default_device().type, 'precision': precisions, 'seconds': total,
               'tokenize_seconds': data_secs,
               'results': {k: {'accuracy': [r['accuracy'] for r in v], 'seconds': [r['seconds'] for r in v],
                               'train_seconds': [r.get('train_seconds') for r in v],
                               'eval_seconds': [r.get('eval_seconds') for r in v],
                               'params': v[0]['params']} for k, v in results.items()}}
    print(json.dumps(summary))

if __name__ == '__main__': main()
