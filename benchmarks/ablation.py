"""Lesson 27's ablation outside the notebook: GPT-2 style vs RoPE, RMSNorm, SwiGLU and GQA alone vs all four (Llama
style), at equal parameter counts (SwiGLU's hidden size matched), on tiny Shakespeare in characters; prints the runs and
the table of mean ± std validation losses.

    python benchmarks/ablation.py                          # the quick configuration (a CPU: about a minute on one thread)
    python benchmarks/ablation.py --full                   # the full one (nanoGPT's shakespeare_char sizes), for a GPU
    python benchmarks/ablation.py --n-batches 600 --seeds 0 1 2 3 4   # longer runs, more seeds
    python benchmarks/ablation.py --emb 128 --threads 2    # any size of the configuration
"""
import argparse, time, platform
import torch
from transformers_scratch.modern import ablation_config, run_ablation, ablation_table
from transformers_scratch.runtime import default_device

def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--full', action='store_true', help="the full configuration (meant for a GPU)")
    p.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    p.add_argument('--threads', type=int, default=None, help="torch threads on a CPU (default: torch's)")
    for k in ('emb', 'heads', 'depth', 'seq_len', 'bs', 'n_batches'): p.add_argument('--' + k.replace('_', '-'), type=int)
    for k in ('lr', 'dropout', 'valid_pct'): p.add_argument('--' + k.replace('_', '-'), type=float)
    a = p.parse_args(argv)
    cfg = ablation_config(quick=not a.full)
    cfg.update({k: v for k, v in vars(a).items() if k in cfg and v is not None})
    if a.threads: torch.set_num_threads(a.threads)
    dev = default_device()
    print(f"{'full' if a.full else 'quick'} configuration {cfg}, seeds {a.seeds}")
    print(f"device: {dev} ({torch.cuda.get_device_name() if dev.type == 'cuda' else platform.processor() or platform.machine()}, "
          f"{torch.get_num_threads()} threads), torch {torch.__version__}")
    t0 = time.perf_counter()
    runs = run_ablation(cfg, seeds=tuple(a.seeds), device=dev)
    print(f"{len(runs)} runs in {time.perf_counter() - t0:.0f} s\n")
    t = ablation_table(runs)
    for name, r in t.iterrows():
        print(f"| {name} | {r.params:,} ({r.params_vs_first}) | {r.valid_loss:.3f} ± {r['std']:.3f} | {r.loss_vs_first:+.3f} |")

if __name__ == '__main__': main()
