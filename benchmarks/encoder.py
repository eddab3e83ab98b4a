"""Training throughput of our encoder stack vs PyTorch's `nn.TransformerEncoderLayer`, measured side by side.

Same size (emb, heads, depth, 4x MLP, post-norm, ReLU, dropout 0.1), same batch, forward + backward + SGD step,
interleaved rounds so both see the same machine load. Prints tokens/s for each and the ratios.

    python benchmarks/encoder.py                 # CPU-sized defaults
    python benchmarks/encoder.py --emb 512 --heads 8 --depth 6 --seq-len 512 --bs 32   # on a GPU
"""
import argparse, json, platform, time, torch, torch.nn as nn
from transformers_scratch.config import ModelConfig
from transformers_scratch.block import TransformerBlock
from transformers_scratch.runtime import default_device

class Ours(nn.Module):
    def __init__(self, a, fast):
        super().__init__()
        c = ModelConfig(emb=a.emb, heads=a.heads, depth=a.depth, seq_len=a.seq_len, dropout=0.1, prenorm=False, fast=fast)
        self.blocks = nn.ModuleList([TransformerBlock(c, causal=a.causal) for _ in range(c.depth)])
    def forward(self, x):
        for b in self.blocks: x = b(x)
        return x

class Torch(nn.Module):
    def __init__(self, a):
        super().__init__()
        layer = nn.TransformerEncoderLayer(a.emb, a.heads, 4 * a.emb, dropout=0.1, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, a.depth, enable_nested_tensor=False)
        self.causal = a.causal
    def forward(self, x):
        t = x.size(1)
        mask = nn.Transformer.generate_square_subsequent_mask(t, device=x.device) if self.causal else None
        return self.enc(x, mask=mask, is_causal=self.causal)

def step(model, opt, x):
    opt.zero_grad(set_to_none=True)
    model(x).float().pow(2).mean().backward()
    opt.step()

def main():
    p = argparse.ArgumentParser()
    p.add_argument('--emb', type=int, default=128); p.add_argument('--heads', type=int, default=4)
    p.add_argument('--depth', type=int, default=2); p.add_argument('--seq-len', type=int, default=128)
    p.add_argument('--bs', type=int, default=16); p.add_argument('--steps', type=int, default=10)
    p.add_argument('--rounds', type=int, default=3); p.add_argument('--causal', action='store_true')
    a = p.parse_args()
    dev = default_device(); torch.manual_seed(0)
    models = {'ours_fast': Ours(a, True), 'ours_explicit': Ours(a, False), 'torch_encoder_layer': Torch(a)}
    opts = {k: torch.optim.SGD(m.to(dev).parameters(), lr=1e-3) for k, m in models.items()}
    x = torch.randn(a.bs, a.seq_len, a.emb, device=dev)
    sync = torch.cuda.synchronize if dev.type == 'cuda' else (lambda: None)
    for k, m in models.items(): m.train(); step(m, opts[k], x); step(m, opts[k], x)   # warm-up
    secs = {k: 0. for k in models}
    for _ in range(a.rounds):
        for k, m in models.items():
            sync(); t0 = time.perf_counter()
            for _ in range(a.steps): step(m, opts[k], x)
            sync(); secs[k] += time.perf_counter() - t0
    toks = a.bs * a.seq_len * a.steps * a.rounds
    tps = {k: toks / s for k, s in secs.items()}
    for k, v in tps.items(): print(f"{k:22s} {v:12,.0f} tokens/s")
    print(f"ours_fast / torch_encoder_layer = {tps['ours_fast'] / tps['torch_encoder_layer']:.2f}x")
    print(f"ours_fast / ours_explicit       = {tps['ours_fast'] / tps['ours_explicit']:.2f}x")
    dev_name = torch.cuda.get_device_name() if dev.type == 'cuda' else f"{platform.processor() or platform.machine()} CPU, {torch.get_num_threads()} threads"
    print(json.dumps({'benchmark': 'encoder', 'device': dev_name, 'config': vars(a),
                      'tokens_per_s': {k: round(v) for k, v in tps.items()},
                      'ratio_fast_vs_torch': round(tps['ours_fast'] / tps['torch_encoder_layer'], 3)}))

if __name__ == '__main__': main()
