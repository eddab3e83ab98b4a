"""Lesson 27's ablation outside the notebook: GPT-2 style vs RoPE, RMSNorm, SwiGLU and GQA alone vs all four (Llama
style), at equal parameter counts (SwiGLU's hidden size matched), on tiny Shakespeare in characters; prints the runs and
the table of mean ± std validation losses. The notebook builds its models from the learner's pieces; this script, the
same experiment, from the library's (`GenerationTransformer(config)`), trained with lesson 21's `lm_learner`.

    python benchmarks/ablation.py                          # the quick configuration (a CPU: about a minute and a half on one thread)
    python benchmarks/ablation.py --full                   # the full one (nanoGPT's shakespeare_char sizes), for a GPU
    python benchmarks/ablation.py --n-batches 600 --seeds 0 1 2 3 4   # longer runs, more seeds
    python benchmarks/ablation.py --emb 128 --threads 2    # any size of the configuration
"""
import argparse, time, platform
from dataclasses import replace
import torch, pandas as pd
from fastai.torch_core import set_seed
from transformers_scratch.config import ModelConfig, TrainConfig, Recipe, ConfigError
from transformers_scratch.models import GenerationTransformer
from transformers_scratch.lmdata import char_dls, lm_text
from transformers_scratch.lm import lm_learner
from transformers_scratch.runtime import default_device

# lesson 27's recipes: the baseline's model and the training of every run
ABLATION_QUICK = Recipe(ModelConfig(emb=64, heads=4, depth=2, seq_len=32, fast=True),
                        TrainConfig(bs=16, n_batches=200, lr=6e-3, wd=0.1, valid_pct=0.02))
ABLATION_FULL = Recipe(ModelConfig(emb=384, heads=6, depth=6, seq_len=256, dropout=0.2, fast=True),
                       TrainConfig(bs=64, n_batches=2000, lr=1e-3, wd=0.1, valid_pct=0.1))

def count_params(config):
    "Parameters of `GenerationTransformer(config)`, counted on the meta device: nothing is allocated"
    with torch.device('meta'): return sum(p.numel() for p in GenerationTransformer(config).parameters())

def match_hidden(config, target):
    "`config` (mlp='swiglu') with SwiGLU's `hidden` chosen so that its model's parameter count comes as close to `target` as it can"
    n1 = count_params(replace(config, hidden=1))
    per_unit = count_params(replace(config, hidden=2)) - n1
    return replace(config, hidden=max(1, 1 + round((target - n1) / per_unit)))

def ablation_variants(base):
    "GPT-2-style `base`, each modern change alone (and fixed sinusoidal positions, a control for RoPE), and all four (Llama style)"
    g = base.heads // 2
    v = {'GPT-2 style': base, 'RoPE': replace(base, pos='rope'), 'sinusoidal': replace(base, pos='sinusoidal'),
         'RMSNorm': replace(base, norm='rms'), 'SwiGLU': replace(base, mlp='swiglu'), 'GQA': replace(base, kv_heads=g),
         'Llama style': replace(base, pos='rope', norm='rms', mlp='swiglu', kv_heads=g)}
    n = count_params(base)
    return {k: match_hidden(c, n) if c.mlp == 'swiglu' else c for k, c in v.items()}

def ablation_dls(recipe, device=None):
    "Tiny Shakespeare in characters: `n_batches` random training windows; the last `valid_pct` of the text, for validation"
    t = recipe.train
    return char_dls(lm_text('tinyshakespeare'), recipe.model.seq_len, t.bs, t.n_batches, t.valid_pct, device=device)

def train_variant(config, recipe, seed, device=None):
    "Validation loss (nats per character) of `GenerationTransformer(config)` trained from `seed` as `recipe.train` says"
    set_seed(seed)                                     # the seed draws the weights and the batches
    learn = lm_learner(ablation_dls(recipe, device), config, recipe.train)
    with learn.no_bar(), learn.no_logging():
        learn.fit_one_cycle(recipe.train.epochs, recipe.train.lr)
        return learn.validate()[0]

def run_ablation(recipe, seeds=(0, 1, 2), device=None):
    "Every variant once per seed: a DataFrame of variant, seed, params, valid_loss, seconds"
    base = replace(recipe.model, n_tokens=len(ablation_dls(recipe).vocab))
    rows = []
    for name, c in ablation_variants(base).items():
        for seed in seeds:
            t0 = time.perf_counter()
            loss = train_variant(c, recipe, seed, device)
            rows.append(dict(variant=name, seed=seed, params=count_params(c), valid_loss=loss, seconds=time.perf_counter() - t0))
        last = rows[-len(seeds):]
        print(f"{name:12s} " + ', '.join(f"{r['valid_loss']:.4f}" for r in last) + f"  ({sum(r['seconds'] for r in last):.1f} s)")
    return pd.DataFrame(rows)

def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--full', action='store_true', help="the full configuration (meant for a GPU)")
    p.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    p.add_argument('--threads', type=int, default=None, help="torch threads on a CPU (default: torch's)")
    for k in ('emb', 'heads', 'depth', 'seq_len', 'bs', 'n_batches'): p.add_argument('--' + k.replace('_', '-'), type=int)
    for k in ('lr', 'dropout', 'valid_pct'): p.add_argument('--' + k.replace('_', '-'), type=float)
    a = p.parse_args(argv)
    keys = ('emb', 'heads', 'depth', 'seq_len', 'bs', 'n_batches', 'lr', 'dropout', 'valid_pct')
    try: recipe = (ABLATION_FULL if a.full else ABLATION_QUICK).replace(**{k: getattr(a, k) for k in keys})   # made once, here
    except ConfigError as e: p.error(f"--{e.key.replace('_', '-')}: {e.why}")
    if a.threads: torch.set_num_threads(a.threads)
    dev = default_device()
    print(f"{'full' if a.full else 'quick'} recipe {recipe}, seeds {a.seeds}")
    print(f"device: {dev} ({torch.cuda.get_device_name() if dev.type == 'cuda' else platform.processor() or platform.machine()}, "
          f"{torch.get_num_threads()} threads), torch {torch.__version__}")
    t0 = time.perf_counter()
    runs = run_ablation(recipe, seeds=tuple(a.seeds), device=dev)
    print(f"{len(runs)} runs in {time.perf_counter() - t0:.0f} s\n")
    g = runs.groupby('variant', sort=False)
    t = pd.DataFrame({'params': g.params.first(), 'valid_loss': g.valid_loss.mean(), 'std': g.valid_loss.std()})
    for name, r in t.iterrows():
        print(f"| {name} | {r.params:,.0f} ({r.params / t.params.iloc[0] - 1:+.1%}) | {r.valid_loss:.3f} ± {r['std']:.3f} | "
              f"{r.valid_loss - t.valid_loss.iloc[0]:+.3f} |")

if __name__ == '__main__': main()
