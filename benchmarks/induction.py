"""Lesson 29's measurements outside the notebook: a two-layer attention-only decoder trained on random tokens repeated
(`train_induction`), for several seeds, against a one-layer one trained the same way; prints each run and the table
of what the lesson asserts (the loss on the repeated half vs the first, the top induction score of layer 2, the top
previous-token score of layer 1, the repeated half's loss with the top induction head zeroed and with the head least
like either zeroed, the least any head other than the top induction head moves it, and the one-layer model's ratio).

    python benchmarks/induction.py                  # the quick configuration, seeds 0 1 2 (a CPU: about half a minute a run)
    python benchmarks/induction.py --full           # INDUCTION_FULL (twice the steps)
    python benchmarks/induction.py --heads 4 --n-batches 3000 --seeds 0 1 2 3
    python benchmarks/induction.py --pos learned --no-one-layer   # positions added to the embeddings instead of RoPE
    python benchmarks/induction.py --qkv-bias --no-one-layer      # a position-only query/key is one bias away
    python benchmarks/induction.py --rope-theta 100 --no-one-layer
"""
import argparse, time, platform, os
import torch
from transformers_scratch.config import ConfigError
from transformers_scratch.runtime import default_device
from transformers_scratch.interpret import (INDUCTION_QUICK, INDUCTION_FULL, train_induction, repeated_tokens, token_losses,
                                            half_losses, record, induction_score, prev_token_score, ablated_loss)

def measure(model, xs, t):
    "What lesson 29 asserts, for one trained two-layer `model` on the sequences `xs` (b, 2t)"
    first, rep = (v.item() for v in half_losses(token_losses(model, xs), t))
    rec = record(model, xs[:, :-1])
    ind = torch.stack([induction_score(w, t) for w in rec.attn])
    prev = torch.stack([prev_token_score(w) for w in rec.attn])
    H = model.config.heads
    top = int(ind[-1].argmax())
    other = int((ind.flatten() + prev.flatten()).argmin())
    L = model.config.depth
    abl = torch.tensor([[ablated_loss(model, xs, t, l, h) / rep for h in range(H)] for l in range(L)])
    rest = torch.cat([abl.flatten()[:(L - 1) * H + top], abl.flatten()[(L - 1) * H + top + 1:]])   # every head but the top induction head
    return dict(first=first, rep=rep, ratio=rep / first, ind=ind[-1].max().item(), prev=prev[0].max().item(),
                top_x=abl[L - 1, top].item(), other=f"{other // H + 1}.{other % H}", other_x=abl.flatten()[other].item(),
                least_x=rest.min().item())

def machine():
    "The CPU's model name where Linux says it (else the platform's), the cores, and the GPU training runs on, if any"
    name = platform.processor() or platform.machine()
    try: name = next(l.split(':', 1)[1].strip() for l in open('/proc/cpuinfo') if l.startswith('model name'))
    except (OSError, StopIteration): pass
    dev = default_device()
    gpu = f", training on {torch.cuda.get_device_name(dev)}" if dev.type == 'cuda' else f", training on the {dev.type}"
    return f"{name}, {os.cpu_count()} cores{gpu}, torch {torch.__version__}"

def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--full', action='store_true', help='INDUCTION_FULL instead of INDUCTION_QUICK')
    p.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    p.add_argument('--heads', type=int); p.add_argument('--emb', type=int); p.add_argument('--n-batches', type=int)
    p.add_argument('--lr', type=float); p.add_argument('--wd', type=float)
    p.add_argument('--pos', choices=('learned', 'sinusoidal', 'rope'), help="the positions (the lesson's: rope)")
    p.add_argument('--rope-theta', type=float, help="RoPE's base (the lesson's: 10000; smaller turns the slow angles faster)")
    p.add_argument('--qkv-bias', action='store_true', help='biases on the query, key and value projections: a query or key that ignores the token')
    p.add_argument('--no-one-layer', action='store_true', help='skip the one-layer model (half the time)')
    p.add_argument('--threads', type=int, default=1)
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    try: recipe = (INDUCTION_FULL if a.full else INDUCTION_QUICK).replace(heads=a.heads, emb=a.emb, n_batches=a.n_batches, lr=a.lr, wd=a.wd,
                                                                                pos=a.pos, rope_theta=a.rope_theta,
                                                                                qkv_bias=a.qkv_bias or None)
    except ConfigError as e: p.error(f"--{e.key.replace('_', '-')}: {e.why}")
    t = 16
    xs = repeated_tokens(200, t, recipe.model.n_tokens, torch.Generator().manual_seed(1234))   # the lesson's sequences
    print(f"{recipe.model}\n{recipe.train}\n{machine()}, "
          f"load {os.getloadavg()[0]:.1f}, {a.threads} thread(s)")
    rows = []
    for seed in a.seeds:
        t0 = time.perf_counter(); m = train_induction(recipe, seed=seed); s2 = time.perf_counter() - t0
        r = measure(m, xs, t)
        if a.no_one_layer: r.update(one_layer=float('nan'), seconds=f"{s2:.0f}")
        else:
            t0 = time.perf_counter(); m1 = train_induction(recipe.replace(depth=1), seed=seed); s1 = time.perf_counter() - t0
            f1, r1 = (v.item() for v in half_losses(token_losses(m1, xs), t))
            r.update(one_layer=r1 / f1, seconds=f"{s2:.0f}+{s1:.0f}")
        rows.append(r)
        print(f"seed {seed}: " + ', '.join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in r.items()), flush=True)
    print("\n| seed | first half | repeated half | ratio (≤ 0.2) | top induction, layer 2 (≥ 0.5) | top previous-token, layer 1 (≥ 0.8) "
          "| top induction head zeroed (≥ 2×) | head least like either zeroed | least any other head moves it | one layer: ratio "
          "| seconds (2 layers + 1) |\n|" + '---|' * 11)
    for seed, r in zip(a.seeds, rows):
        print(f"| {seed} | {r['first']:.3f} | {r['rep']:.3f} | {r['ratio']:.3f} | {r['ind']:.2f} | {r['prev']:.2f} | {r['top_x']:.1f}× "
              f"| {r['other_x']:.2f}× (head {r['other']}) | {r['least_x']:.2f}× | {r['one_layer']:.2f} | {r['seconds']} |")

if __name__ == '__main__': main()
