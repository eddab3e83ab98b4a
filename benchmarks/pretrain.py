#!/usr/bin/env python
"""Pretraining benchmark, measured side by side in one run (numbers for the README's results table).

    python benchmarks/pretrain.py --quick      # IMDB_SAMPLE: pretrain on its 800 training reviews, fine-tune, 3 seeds
    python benchmarks/pretrain.py              # full IMDB: pretrain on the 25k training reviews, score on the 25k test
                                               # reviews (meant for one GPU: target >= 0.90, >= 3 points over scratch)

One encoder is pretrained (seed 0) and reused for every fine-tuning seed; each seed then fine-tunes the pretrained
encoder and trains the same classifier from scratch, with the same vocabulary, DataLoaders, epochs and schedule.
Prints the masked accuracy against the frequency baseline, a table per seed, the gain with its spread, then one JSON line.
Offline, set TFS_DATA to the data folder first.
"""
import argparse, json, statistics, tempfile, time
from pathlib import Path
from transformers_scratch.pretrain import PRETRAIN_QUICK, PRETRAIN_FULL, FINETUNE_QUICK, FINETUNE_FULL
from transformers_scratch.runs import run_pretrain, run_finetune
from imdb import hardware          # benchmarks/imdb.py: the machine in words

def spread(xs): return statistics.stdev(xs) if len(xs) > 1 else 0.

def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--quick', action='store_true', help='IMDB_SAMPLE and the quick configuration (CPU)')
    ap.add_argument('--seeds', type=int, default=3)
    ap.add_argument('--pretrain-epochs', type=int)
    ap.add_argument('--finetune-epochs', type=int)
    a = ap.parse_args()
    data = 'imdb_sample' if a.quick else 'imdb'
    start = time.perf_counter()
    enc = Path(tempfile.mkdtemp())/'encoder.pt'
    pretrain = (PRETRAIN_QUICK if a.quick else PRETRAIN_FULL).replace(epochs=a.pretrain_epochs)   # the lesson's recipes, as `tfs` runs them
    finetune = (FINETUNE_QUICK if a.quick else FINETUNE_FULL).replace(epochs=a.finetune_epochs)
    pre = run_pretrain(data, recipe=pretrain, quick=a.quick, out=enc, show=False)
    print(f"pretraining on {pre['texts']} {data} training reviews ({pre['train_tokens']} tokens, vocab {pre['vocab']}): "
          f"masked accuracy {pre['masked_accuracy']:.3f} vs frequency baseline {pre['frequency_baseline']:.3f}, mask-fill accuracy {pre['mask_fill_accuracy']:.3f} vs {pre['mask_fill_baseline']:.3f} "
          f"('{pre['frequent_token']}'), by epoch {pre['masked_accuracy_by_epoch']}, {pre['seconds_per_epoch']} s/epoch")
    rows = []
    for seed in range(a.seeds):
        ft = run_finetune(enc, data, recipe=finetune, quick=a.quick, seed=seed, show=False)
        sc = run_finetune(None, data, recipe=finetune, quick=a.quick, seed=seed, show=False, vocab_from=enc)
        rows.append((seed, ft['accuracy'], sc['accuracy'], ft['seconds'], sc['seconds']))
    print("\n| seed | pretrained + fine-tuned | from scratch | gain |\n|---|---|---|---|")
    for s, f, c, *_ in rows: print(f"| {s} | {f:.4f} | {c:.4f} | {f - c:+.4f} |")
    ft, sc = [r[1] for r in rows], [r[2] for r in rows]
    gains = [f - c for f, c in zip(ft, sc)]
    print(f"| mean ± sd | {statistics.mean(ft):.4f} ± {spread(ft):.4f} | {statistics.mean(sc):.4f} ± {spread(sc):.4f} | "
          f"{statistics.mean(gains):+.4f} ± {spread(gains):.4f} |")
    print(json.dumps({'dataset': data, 'quick': a.quick, 'masked_accuracy': pre['masked_accuracy'],
                      'frequency_baseline': pre['frequency_baseline'], 'mask_fill_accuracy': pre['mask_fill_accuracy'], 'mask_fill_baseline': pre['mask_fill_baseline'], 'masked_accuracy_by_epoch': pre['masked_accuracy_by_epoch'],
                      'pretrain_seconds': pre['seconds'], 'pretrain_s_per_epoch': pre['seconds_per_epoch'],
                      'finetuned': ft, 'scratch': sc, 'gain_mean': round(statistics.mean(gains), 4),
                      'gain_sd': round(spread(gains), 4), 'finetune_seconds': [r[3] for r in rows],
                      'seconds': round(time.perf_counter() - start, 1), 'machine': hardware()}))

if __name__ == '__main__': main()
