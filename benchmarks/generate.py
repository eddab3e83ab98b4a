"""Generation benchmarks, each measured side by side in one run:

- `kv`: the KV cache's speed-up. Greedy decoding of `--n` new tokens with and without the cache, interleaved rounds,
  on nanoGPT shakespeare_char's model shape (6 layers, 6 heads, 384, block 256). Also checks the tokens are identical.
  A second row starts with a full window, where every step slides it and the cache cannot help (learned positions).
- `throughput`: training tokens/s of our `GenerationTransformer` (fast path, and explicit attention) vs a same-size
  stack of `nn.TransformerEncoderLayer` with a causal mask (pre-norm, ReLU, 4x MLP, same dropout), embeddings and head
  included, forward + backward + AdamW step, interleaved rounds.
- `valid`: tiny Shakespeare validation loss of `tfs generate --quick` (with `--full`: nanoGPT's shakespeare_char
  configuration, meant for a GPU; its published validation loss is 1.4697).

    python benchmarks/generate.py                        # all three, CPU-sized
    python benchmarks/generate.py kv --n 256 --threads 1 # one of them, on one CPU thread
    python benchmarks/generate.py throughput valid --full  # on a GPU: nanoGPT-sized throughput and the full training run

The last line is a JSON object with every number and the machine it came from.
"""
import argparse, json, os, platform, time, torch, torch.nn as nn, torch.nn.functional as F
from transformers_scratch.core import default_device
from transformers_scratch.models import GenerationTransformer
from transformers_scratch.generate import generate

def sync(dev):
    if dev.type == 'cuda': torch.cuda.synchronize()

def timed(f, dev):
    sync(dev); t0 = time.perf_counter(); out = f(); sync(dev)
    return time.perf_counter() - t0, out

def bench_kv(a, dev):
    torch.manual_seed(0)
    m = GenerationTransformer(a.emb, a.heads, a.depth, a.seq_len, 65, fast=True, prenorm=True).to(dev).eval()
    res = {}
    for name, plen, n in (('within_window', 1, a.n), ('window_full', a.seq_len, a.n // 8)):
        prompt = torch.randint(0, 65, (plen,), generator=torch.Generator().manual_seed(1)).to(dev)
        generate(m, prompt, 4, greedy=True, cache=True); generate(m, prompt, 4, greedy=True, cache=False)   # warm-up
        secs = {True: 0., False: 0.}; outs = {}
        for _ in range(a.rounds):
            for cache in (True, False):
                s, outs[cache] = timed(lambda: generate(m, prompt, n, greedy=True, cache=cache), dev)
                secs[cache] += s
        assert torch.equal(outs[True], outs[False]), "greedy tokens differ with and without the cache"
        r = {'prompt': plen, 'new_tokens': n, 'cache_tokens_per_s': round(n * a.rounds / secs[True], 1),
             'no_cache_tokens_per_s': round(n * a.rounds / secs[False], 1), 'speedup': round(secs[False] / secs[True], 2),
             'identical_tokens': True}
        print(f"kv {name:14s} prompt {plen:4d}, {n} new: cache {r['cache_tokens_per_s']:9.1f} tok/s, "
              f"no cache {r['no_cache_tokens_per_s']:9.1f} tok/s, speed-up {r['speedup']:.2f}x (greedy tokens identical)")
        res[name] = r
    return res

class TorchLM(nn.Module):
    "The same model shape from PyTorch's own layers: embeddings, a causal `nn.TransformerEncoder` (pre-norm), a head"
    def __init__(self, emb, heads, depth, seq_len, n_tokens, dropout):
        super().__init__()
        self.token_emb, self.pos_emb = nn.Embedding(n_tokens, emb), nn.Embedding(seq_len, emb)
        self.do = nn.Dropout(dropout)
        layer = nn.TransformerEncoderLayer(emb, heads, 4 * emb, dropout=dropout, batch_first=True, norm_first=True)
        self.enc = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm, self.toprobs = nn.LayerNorm(emb), nn.Linear(emb, n_tokens)
    def forward(self, x):
        t = x.size(1)
        h = self.do(self.token_emb(x) + self.pos_emb(torch.arange(t, device=x.device))[None])
        mask = nn.Transformer.generate_square_subsequent_mask(t, device=x.device)
        return self.toprobs(self.norm(self.enc(h, mask=mask, is_causal=True)))

def bench_throughput(a, dev):
    torch.manual_seed(0)
    V = 65
    models = {'ours_fast': GenerationTransformer(a.emb, a.heads, a.depth, a.seq_len, V, dropout=a.dropout, fast=True, prenorm=True),
              'ours_explicit': GenerationTransformer(a.emb, a.heads, a.depth, a.seq_len, V, dropout=a.dropout, fast=False, prenorm=True),
              'torch_encoder_layer': TorchLM(a.emb, a.heads, a.depth, a.seq_len, V, a.dropout)}
    n_params = {k: sum(p.numel() for p in m.parameters()) for k, m in models.items()}
    opts = {k: torch.optim.AdamW(m.to(dev).train().parameters(), lr=1e-4) for k, m in models.items()}
    x = torch.randint(0, V, (a.bs, a.seq_len + 1), device=dev)
    def step(k):
        opts[k].zero_grad(set_to_none=True)
        F.cross_entropy(models[k](x[:, :-1]).flatten(0, 1), x[:, 1:].flatten()).backward()
        opts[k].step()
    for k in models: step(k); step(k)                                    # warm-up
    secs = {k: 0. for k in models}
    for _ in range(a.rounds):
        for k in models:
            s, _ = timed(lambda: [step(k) for _ in range(a.steps)], dev)
            secs[k] += s
    toks = a.bs * a.seq_len * a.steps * a.rounds
    tps = {k: round(toks / s, 1) for k, s in secs.items()}
    for k, v in tps.items(): print(f"throughput {k:20s} {v:12,.0f} tokens/s  ({n_params[k]:,} parameters)")
    ratio = tps['ours_fast'] / tps['torch_encoder_layer']
    print(f"throughput ours_fast / torch_encoder_layer = {ratio:.2f}x")
    return {'config': dict(emb=a.emb, heads=a.heads, depth=a.depth, seq_len=a.seq_len, bs=a.bs, dropout=a.dropout),
            'tokens_per_s': tps, 'parameters': n_params, 'ours_fast_vs_torch': round(ratio, 2)}

def bench_valid(a, dev):
    from transformers_scratch.lm import run_generate
    res = run_generate('tinyshakespeare', 'char', n=200, quick=not a.full)
    print(f"valid {'full' if a.full else 'quick'}: {json.dumps(res)}")
    return {**res, 'config': 'full (nanoGPT shakespeare_char)' if a.full else 'quick', 'nanogpt_published_valid_loss': 1.4697}

def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('what', nargs='*', help='kv, throughput and/or valid (default: all three)')
    p.add_argument('--full', action='store_true', help="nanoGPT shakespeare_char sizes for throughput and valid (a GPU)")
    p.add_argument('--n', type=int, default=256, help='kv: new tokens')
    p.add_argument('--rounds', type=int, default=2); p.add_argument('--steps', type=int, default=5)
    p.add_argument('--threads', type=int, help='torch CPU threads (default: torch decides)')
    a = p.parse_args()
    if a.threads: torch.set_num_threads(a.threads)
    what = a.what or ['kv', 'throughput', 'valid']
    bad = set(what) - {'kv', 'throughput', 'valid'}
    if bad: p.error(f"unknown benchmark(s) {sorted(bad)}: choose from kv, throughput, valid")
    dev = default_device()
    machine = {'device': str(dev), 'gpu': torch.cuda.get_device_name() if dev.type == 'cuda' else None,
               'cpu_count': os.cpu_count(), 'torch_threads': torch.get_num_threads(), 'torch': torch.__version__,
               'platform': platform.platform(), 'load_average': [round(l, 2) for l in os.getloadavg()]}
    print(json.dumps(machine))
    out = {'machine': machine}
    if 'kv' in what:
        a.emb, a.heads, a.depth, a.seq_len = 384, 6, 6, 256
        out['kv_cache'] = bench_kv(a, dev)
    if 'throughput' in what:
        if a.full: a.emb, a.heads, a.depth, a.seq_len, a.bs, a.dropout = 384, 6, 6, 256, 64, 0.2
        else: a.emb, a.heads, a.depth, a.seq_len, a.bs, a.dropout = 128, 4, 2, 64, 32, 0.     # the quick char config
        out['throughput'] = bench_throughput(a, dev)
    if 'valid' in what: out['valid'] = bench_valid(a, dev)
    out['machine']['load_average_after'] = [round(l, 2) for l in os.getloadavg()]
    print(json.dumps(out))

if __name__ == '__main__': main()
