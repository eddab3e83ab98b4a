"""Generation benchmarks, each measured side by side in one run:

- `kv`: the KV cache's speed-up. Greedy decoding of `--n` new tokens with the preallocated cache (on CUDA: with its
  one-token step replayed as a CUDA graph, and eagerly) and without a cache, interleaved rounds, on nanoGPT
  shakespeare_char's model shape (6 layers, 6 heads, 384, block 256). Also checks the tokens are identical. A second
  row starts with a full window, where every step slides it and the cache cannot help (learned positions).
- `throughput`: training tokens/s of our `GenerationTransformer` (fast path, and explicit attention) vs a same-size
  stack of `nn.TransformerEncoderLayer` with a causal mask (pre-norm, ReLU, 4x MLP, same dropout), embeddings and head
  included, forward + backward + AdamW step, interleaved rounds. Then the `train` rows: our fastai path (`lm_learner`,
  as `tfs generate` trains) vs a plain PyTorch loop with `torch.compile`, autocast (bf16 on GPUs of compute capability
  >= 8, fp16 + loss scaling below, none on a CPU) and fused AdamW, same model, batch and gradient clipping; both
  compiled on a GPU (`--compile` / `--no-compile` to choose).
- `gpt2`: decoding tokens/s of GPT-2 in our `GenerationTransformer` (`load_gpt2`, lesson 24) vs Hugging Face's
  `GPT2LMHeadModel.generate` on the same weights (`--gpt2 FOLDER`, or a randomly initialised GPT-2 small shape when
  offline), same prompt and length, greedy, with the KV cache, interleaved rounds; checks the tokens agree. Then
  `layout`: one token through all of GPT-2's weight matrices in nn.Linear's usual (out, in) memory order vs Conv1D's
  (in, out) order, which `load_gpt2` keeps.
- `llama`: the same race for a Llama-family model: a randomly initialised SmolLM2-135M shape (576 wide, 30 blocks, 9 query
  heads sharing 3 key/value heads, SwiGLU 1536, 49,152 tokens, tied, RoPE θ = 100000), saved by Hugging Face's
  `LlamaForCausalLM.save_pretrained` and read by `load_pretrained` (lesson 28), or `--llama FOLDER`; our cached greedy
  decoding vs Hugging Face's `generate`, interleaved rounds, tokens checked equal.
- `gpt2` and `llama` race our decoding twice: eagerly, and with its one-token step compiled (`generate(compile=True)`,
  lesson 20: Inductor, each one-row matrix product written as sums over the weight's rows); the compiled step's first
  call compiles and is not timed (`--no-compiled` leaves it out).
- `roofline` (run with `gpt2` and `llama`, or alone): at batch 1 every new token reads every weight once, so decoding
  cannot beat (memory read rate) / (bytes of weights) tokens/s. The read rate is measured in the same run: the best of
  several sums of a 256 MiB fp32 tensor and several products of a 256 MiB fp32 matrix with a vector, whichever is
  faster (measured before and after the races; the best counts). `gpt2` and `llama` then report each decoder's tokens/s
  as a fraction of that limit (tokens/s x fp32 weight bytes / read rate), beside the ratio to Hugging Face. Leave
  OMP_WAIT_POLICY unset: with PASSIVE every parallel region wakes its threads, the 2-thread sum reads like one thread
  (47-51 instead of 69-74 GB/s on the 2-core AMD EPYC) and a compiled step, many regions long, slows several-fold.
- `valid`: tiny Shakespeare validation loss of `tfs generate --quick` (with `--full`: the full configuration, nanoGPT's
  shakespeare_char model and batch, meant for a GPU; nanoGPT's best checkpoint is at 1.4697; `--n-batches 2` makes a
  smoke test of the full path on a CPU).

    python benchmarks/generate.py                        # all three, CPU-sized
    python benchmarks/generate.py kv --n 256 --threads 1 # one of them, on one CPU thread
    python benchmarks/generate.py kv throughput valid --full  # on a GPU: decoding, nanoGPT-sized training, the full run
    python benchmarks/generate.py gpt2 --gpt2-n 32            # ours vs Hugging Face's generate, GPT-2 small shape
    python benchmarks/generate.py llama --llama-n 32          # the same, SmolLM2-135M shape
    python benchmarks/generate.py gpt2 llama --rounds 4       # both races against the machine's read rate, in one run
    python benchmarks/generate.py roofline                    # the read rate alone

The last line is a JSON object with every number and the machine it came from.
"""
import argparse, json, os, platform, time, torch, torch.nn as nn, torch.nn.functional as F
from transformers_scratch.runtime import default_device
from transformers_scratch.config import ModelConfig, TrainConfig
from transformers_scratch.models import GenerationTransformer
from transformers_scratch.generate import generate

def sync(dev):
    if dev.type == 'cuda': torch.cuda.synchronize()

def timed(f, dev):
    sync(dev); t0 = time.perf_counter(); out = f(); sync(dev)
    return time.perf_counter() - t0, out

def bench_kv(a, dev):
    "Greedy decoding with the preallocated KV cache (and, on CUDA, its one-token step replayed as a CUDA graph) vs none"
    torch.manual_seed(0)
    m = GenerationTransformer(ModelConfig(emb=a.emb, heads=a.heads, depth=a.depth, seq_len=a.seq_len, n_tokens=65, fast=True)).to(dev).eval()
    ways = {'cache': dict(cache=True), 'no_cache': dict(cache=False)}
    if dev.type == 'cuda': ways = {'cache_cuda_graph': dict(cache=True, cuda_graph=True), 'cache_eager': dict(cache=True, cuda_graph=False), **ways}
    first = next(iter(ways))
    res = {}
    for name, plen, n in (('within_window', 1, a.n), ('window_full', a.seq_len, a.n // 8)):
        prompt = torch.randint(0, 65, (plen,), generator=torch.Generator().manual_seed(1)).to(dev)
        for kw in ways.values(): generate(m, prompt, 4, greedy=True, **kw)             # warm-up
        secs, outs = {k: 0. for k in ways}, {}
        for _ in range(a.rounds):
            for k, kw in ways.items():
                s, outs[k] = timed(lambda: generate(m, prompt, n, greedy=True, **kw), dev)
                secs[k] += s
        same = all(torch.equal(outs[k], outs['no_cache']) for k in ways)
        tps = {k: round(n * a.rounds / s, 1) for k, s in secs.items()}
        r = {'prompt': plen, 'new_tokens': n, 'tokens_per_s': tps, 'speedup': round(secs['no_cache'] / secs[first], 2),
             'identical_tokens': same}
        print(f"kv {name:14s} prompt {plen:4d}, {n} new: " + ', '.join(f"{k} {v:9.1f} tok/s" for k, v in tps.items()) +
              f"; {first} / no_cache = {r['speedup']:.2f}x, greedy tokens {'identical' if same else 'DIFFER'}")
        assert same, "greedy tokens differ with and without the cache"
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
    models = {'ours_fast': GenerationTransformer(ModelConfig(emb=a.emb, heads=a.heads, depth=a.depth, seq_len=a.seq_len, n_tokens=V, dropout=a.dropout, fast=True)),
              'ours_explicit': GenerationTransformer(ModelConfig(emb=a.emb, heads=a.heads, depth=a.depth, seq_len=a.seq_len, n_tokens=V, dropout=a.dropout)),
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

def bench_train(a, dev):
    """Training tokens/s of our fastai path (`lm_learner`: fused AdamW, precision per device, compiled when `--compile`)
    vs a plain PyTorch loop (`torch.compile`, bf16 autocast on GPUs of compute capability >= 8, fused AdamW), same model,
    batch, gradient clipping and random windows of one text, interleaved rounds"""
    from fastai.torch_core import set_seed
    from transformers_scratch.runtime import precision_for
    from transformers_scratch.lmdata import char_dls
    from transformers_scratch.lm import lm_learner
    from transformers_scratch.training import has_fused_adamw
    from fastai.callback.core import Callback
    V, L, bs = 65, a.seq_len, a.bs
    set_seed(0)
    text = ''.join(chr(33 + i) for i in torch.randint(0, V, (400_000,)).tolist())      # 65 characters
    config = ModelConfig(emb=a.emb, heads=a.heads, depth=a.depth, seq_len=L, n_tokens=V, dropout=a.dropout, fast=True)
    # ours: the Learner that `tfs generate` uses, timed from before_train to after_train (no validation)
    dls = char_dls(text, L, bs, n_batches=a.steps, valid_pct=0.01, device=dev)
    learn = lm_learner(dls, config, TrainConfig(wd=0.1, compile=a.compile))
    class Timer(Callback):
        def before_train(self): sync(dev); self.t0 = time.perf_counter()
        def after_train(self): sync(dev); self.secs = time.perf_counter() - self.t0
    learn.add_cb(Timer())
    # plain: nanoGPT's loop
    model = GenerationTransformer(config).to(dev).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.99), eps=1e-5, weight_decay=0.1, fused=has_fused_adamw(dev))
    step_model = torch.compile(model) if a.compile else model
    prec = precision_for(dev)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=prec == 'bf16')
    scaler = torch.amp.GradScaler(dev.type, enabled=prec == 'fp16')
    fp16 = torch.autocast(dev.type, dtype=torch.float16, enabled=prec == 'fp16')
    ids = dls.train_ds.ids.to(dev)
    offs = torch.arange(L, device=dev)
    def plain(steps):
        for _ in range(steps):
            idx = torch.randint(0, len(ids) - L - 1, (bs,), device=dev)[:, None] + offs
            x, y = ids[idx], ids[idx + 1]
            with amp, fp16: loss = F.cross_entropy(step_model(x).flatten(0, 1), y.flatten())
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt); scaler.update()
            opt.zero_grad(set_to_none=True)
    def ours():
        with learn.no_bar(), learn.no_logging(): learn.fit(1, 1e-4)
        return learn.timer.secs
    t0 = time.perf_counter(); plain(2); sync(dev); warm_plain = time.perf_counter() - t0     # compiles, when --compile
    t0 = time.perf_counter(); ours(); warm_ours = time.perf_counter() - t0
    secs = {'fastai_learner': 0., 'plain_pytorch': 0.}
    for _ in range(a.rounds):
        s, _ = timed(lambda: plain(a.steps), dev); secs['plain_pytorch'] += s
        secs['fastai_learner'] += ours()
    toks = bs * L * a.steps * a.rounds
    tps = {k: round(toks / s, 1) for k, s in secs.items()}
    ratio = tps['fastai_learner'] / tps['plain_pytorch']
    for k, v in tps.items(): print(f"train {k:20s} {v:12,.0f} tokens/s")
    print(f"train fastai_learner / plain_pytorch = {ratio:.2f}x  (precision {prec}, compile {a.compile}, "
          f"fused AdamW {has_fused_adamw(dev)}; first call incl. compile: plain {warm_plain:.1f} s, ours {warm_ours:.1f} s)")
    return {'tokens_per_s': tps, 'ours_vs_plain': round(ratio, 2), 'precision': prec, 'compile': a.compile,
            'fused_adamw': has_fused_adamw(dev), 'first_call_s': {'plain': round(warm_plain, 1), 'ours': round(warm_ours, 1)}}

def read_rate(dev, mib=256, runs=8):
    "This machine's memory read rate in GB/s: best of `runs` sums of a `mib` MiB fp32 tensor and of a `mib` MiB matrix times a vector"
    n = mib * 2**20 // 4
    x = torch.randn(n, device=dev)
    W, v = x.view(-1, 4096), torch.randn(4096, device=dev)          # (16384, 4096) at 256 MiB: every byte read once
    ways = {'sum': lambda: x.sum(), 'matvec': lambda: torch.mv(W, v)}
    best = {}
    with torch.no_grad():
        for k, f in ways.items():
            f(); best[k] = min(timed(f, dev)[0] for _ in range(runs))
    gbs = {k: round(x.nbytes / s / 1e9, 1) for k, s in best.items()}
    return {'mib': mib, 'runs': runs, 'gb_per_s': gbs, 'best_gb_per_s': max(gbs.values())}

def weight_bytes(model):
    "Bytes of `model`'s weights in fp32, tied weights counted once (they are read once per token)"
    return sum(p.numel() * 4 for p in model.parameters())

def roofline(rates, wbytes, tps):
    """The decoding limit at the best of `rates` (GB/s) of a model of `wbytes` fp32 weight bytes (every weight read once
    per token) and each decoder's tokens/s in `tps` as a fraction of it; also as a fraction of what the best
    matrix-vector product alone reaches (the rate a decoder's matrix products can hope for with this BLAS)"""
    rate = max(r['best_gb_per_s'] for r in rates)
    mv = max(r['gb_per_s']['matvec'] for r in rates)
    limit, mv_limit = rate * 1e9 / wbytes, mv * 1e9 / wbytes
    return {'weight_mb_fp32': round(wbytes / 1e6, 1), 'read_gb_per_s': rate, 'limit_tokens_per_s': round(limit, 1),
            'fraction_of_limit': {k: round(v / limit, 2) for k, v in tps.items()},
            'matvec_gb_per_s': mv, 'matvec_limit_tokens_per_s': round(mv_limit, 1),
            'fraction_of_matvec_limit': {k: round(v / mv_limit, 2) for k, v in tps.items()}}

def say_roofline(name, r):
    f, m = r['fraction_of_limit'], r['fraction_of_matvec_limit']
    print(f"{name} roofline: {r['weight_mb_fp32']:.0f} MB of fp32 weights at {r['read_gb_per_s']:.1f} GB/s: limit "
          f"{r['limit_tokens_per_s']:.1f} tok/s; " + ', '.join(f"{WAYS[k]} {v:.2f} of it" for k, v in f.items()) +
          f" (at the matrix-vector rate, {r['matvec_gb_per_s']:.1f} GB/s = {r['matvec_limit_tokens_per_s']:.1f} tok/s: " +
          ', '.join(f"{WAYS[k]} {v:.2f}" for k, v in m.items()) + ")")

WAYS = {'ours': 'ours (eager)', 'ours_compiled': 'ours (compiled step)', 'hugging_face': 'Hugging Face'}

def race(runs, n, rounds, dev):
    """Interleaved greedy decoding of `n` tokens by `runs` {'ours': f, 'ours_compiled': f2, 'hugging_face': g}: tokens/s of each,
    each of ours / theirs, the same tokens as theirs?, and the seconds of each first call (the compiled step compiles then)"""
    first = {}
    with torch.no_grad():
        for k, f in runs.items(): first[k] = round(timed(f, dev)[0], 1)                # warm-up (and compiling)
        secs, outs = {k: 0. for k in runs}, {}
        for _ in range(rounds):
            for k, f in runs.items():
                s, outs[k] = timed(f, dev)
                secs[k] += s
    tps = {k: round(n * rounds / s, 1) for k, s in secs.items()}
    ours = [k for k in runs if k != 'hugging_face']
    return (tps, {k: round(tps[k] / tps['hugging_face'], 2) for k in ours},
            {k: torch.equal(outs[k].cpu(), outs['hugging_face'].cpu()) for k in ours}, first)

def say_race(name, what, tps, ratio, same, first):
    print(f"{name} {what}: " + ', '.join(f"{WAYS[k]} {v:.1f} tok/s" for k, v in tps.items()) + "; " +
          ', '.join(f"{WAYS[k]} / Hugging Face = {r:.2f}x (tokens {'identical' if same[k] else 'DIFFER'})" for k, r in ratio.items()) +
          (f"; the compiled step's first call (compiling) {first['ours_compiled']:.0f} s" if 'ours_compiled' in first else ''))

def bench_gpt2(a, dev):
    "Greedy decoding with the KV cache: our `generate` on `load_gpt2(folder)` vs Hugging Face's `generate`, same weights"
    import sys, tempfile
    try: import torchvision                                  # noqa: F401
    except Exception: sys.modules['torchvision'] = None      # a torchvision that does not match torch: transformers skips it
    from transformers import GPT2Config, GPT2LMHeadModel
    from transformers_scratch.gpt2 import load_gpt2
    folder, what = a.gpt2, a.gpt2
    if folder is None:
        torch.manual_seed(0)
        folder, what = tempfile.mkdtemp(), 'random GPT-2 small shape (124M, offline)'
        GPT2LMHeadModel(GPT2Config()).save_pretrained(folder)
    ours = load_gpt2(folder, dev)
    hf = GPT2LMHeadModel.from_pretrained(folder).to(dev).eval()
    prompt = torch.randint(0, ours.config.n_tokens, (a.gpt2_prompt,), generator=torch.Generator().manual_seed(1)).to(dev)
    n = a.gpt2_n
    runs = {'ours': lambda: generate(ours, prompt, n, greedy=True, cache=True)}
    if a.compiled:       # compile=True stores the weights row by row: its own copy keeps the eager one in Conv1D's column order
        ours_c = load_gpt2(folder, dev)
        runs['ours_compiled'] = lambda: generate(ours_c, prompt, n, greedy=True, cache=True, compile=True)
    runs['hugging_face'] = lambda: hf.generate(prompt[None], max_new_tokens=n, min_new_tokens=n, do_sample=False, use_cache=True,
                                               pad_token_id=0)[0]
    tps, ratio, same, first = race(runs, n, a.rounds, dev)
    say_race('gpt2', f"{what}: prompt {len(prompt)}, {n} new, greedy, KV cache", tps, ratio, same, first)
    layout = bench_layout(ours, a, dev)
    return {'weights': what, 'prompt': len(prompt), 'new_tokens': n, 'rounds': a.rounds, 'tokens_per_s': tps,
            'ours_vs_hugging_face': ratio, 'identical_tokens': same, 'first_call_s': first,
            'weight_bytes': weight_bytes(ours), 'layout': layout}

SMOLLM2_135M = dict(hidden_size=576, num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3, intermediate_size=1536,
                    vocab_size=49152, max_position_embeddings=8192, rms_norm_eps=1e-5, rope_theta=100000., tie_word_embeddings=True,
                    hidden_act='silu')   # HuggingFaceTB/SmolLM2-135M's config.json

def bench_llama(a, dev):
    "Greedy decoding with the KV cache: our `generate` on `load_pretrained(folder)` vs Hugging Face's `generate`, same weights"
    import sys, tempfile
    try: import torchvision                                  # noqa: F401
    except Exception: sys.modules['torchvision'] = None      # a torchvision that does not match torch: transformers skips it
    from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM
    from transformers_scratch.llama import load_pretrained
    folder, what = a.llama, a.llama
    if folder is None:
        torch.manual_seed(0)
        folder, what = tempfile.mkdtemp(), 'random SmolLM2-135M shape (offline)'
        LlamaForCausalLM(LlamaConfig(**SMOLLM2_135M, bos_token_id=0, eos_token_id=0)).save_pretrained(folder)
    n, plen = a.llama_n, a.llama_prompt
    ours = load_pretrained(folder, dev, seq_len=plen + n, fast=a.llama_fast)   # the KV cache preallocates seq_len positions
    hf = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).to(dev).eval()
    prompt = torch.randint(0, ours.config.n_tokens, (plen,), generator=torch.Generator().manual_seed(1)).to(dev)
    runs = {'ours': lambda: generate(ours, prompt, n, greedy=True, cache=True)}
    if a.compiled:       # Llama's weights are in rows already: the compiled step reads the same model
        runs['ours_compiled'] = lambda: generate(ours, prompt, n, greedy=True, cache=True, compile=True)
    runs['hugging_face'] = lambda: hf.generate(prompt[None], max_new_tokens=n, min_new_tokens=n, do_sample=False, use_cache=True,
                                               pad_token_id=0)[0]
    tps, ratio, same, first = race(runs, n, a.rounds, dev)
    n_params = sum(p.numel() for p in ours.parameters())
    say_race('llama', f"{what}, {n_params / 1e6:.1f}M parameters: prompt {plen}, {n} new, greedy, KV cache", tps, ratio, same, first)
    return {'weights': what, 'parameters': n_params, 'prompt': plen, 'new_tokens': n, 'rounds': a.rounds, 'fast': a.llama_fast, 'tokens_per_s': tps,
            'ours_vs_hugging_face': ratio, 'identical_tokens': same, 'first_call_s': first,
            'weight_bytes': weight_bytes(ours)}

def bench_layout(model, a, dev):
    "Why `load_gpt2` keeps Conv1D's memory order: one token through every `nn.Linear` weight, (out, in) rows vs (in, out) rows"
    ws = [m.weight for m in model.modules() if isinstance(m, nn.Linear)]
    xs = {d: torch.randn(1, d, device=dev) for d in {w.size(1) for w in ws}}   # one token's input to each
    rows = [w.contiguous() for w in ws]                         # nn.Linear's usual order
    cols = [w.T.contiguous().T for w in ws]                     # Conv1D's order, as load_gpt2 keeps it
    runs = {'out_in': lambda: [F.linear(xs[w.size(1)], w) for w in rows], 'in_out': lambda: [F.linear(xs[w.size(1)], w) for w in cols]}
    with torch.no_grad():
        for f in runs.values(): f()
        secs = {k: 0. for k in runs}
        for _ in range(a.rounds * 3):
            for k, f in runs.items(): secs[k] += timed(f, dev)[0]
    ms = {k: round(1e3 * s / (a.rounds * 3), 2) for k, s in secs.items()}
    print(f"gpt2 layout: one token through the {len(ws)} weight matrices: (out, in) rows {ms['out_in']} ms, "
          f"(in, out) rows {ms['in_out']} ms; speed-up {ms['out_in'] / ms['in_out']:.2f}x")
    return {'matrices': len(ws), 'ms_per_token': ms, 'speedup': round(ms['out_in'] / ms['in_out'], 2)}

def bench_valid(a, dev):
    from transformers_scratch.lm import LM_QUICK, LM_FULL
    from transformers_scratch.runs import run_generate
    recipe = (LM_FULL if a.full else LM_QUICK)['char'].replace(n_batches=a.n_batches)   # the lesson's recipe; --n-batches: a smoke test
    res = run_generate('tinyshakespeare', 'char', n=200, recipe=recipe, quick=not a.full)
    print(f"valid {'full' if a.full else 'quick'}: {json.dumps(res)}")
    return {**res, 'config': 'full (nanoGPT shakespeare_char)' if a.full else 'quick', 'nanogpt_published_valid_loss': 1.4697}

def cpu_model():
    "The CPU's model name from /proc/cpuinfo (Linux), else platform's guess"
    try:
        for line in open('/proc/cpuinfo'):
            if line.startswith('model name'): return line.split(':', 1)[1].strip()
    except OSError: pass
    return platform.processor() or platform.machine()

def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('what', nargs='*', help='kv, throughput, valid, gpt2, llama and/or roofline (default: the first three)')
    p.add_argument('--gpt2', help='gpt2: a folder with config.json and model.safetensors (default: a random GPT-2 small)')
    p.add_argument('--gpt2-n', type=int, default=32, help='gpt2: new tokens'); p.add_argument('--gpt2-prompt', type=int, default=16)
    p.add_argument('--llama', help='llama: a folder from save_pretrained (default: a random SmolLM2-135M shape)')
    p.add_argument('--llama-n', type=int, default=32, help='llama: new tokens'); p.add_argument('--llama-prompt', type=int, default=16)
    p.add_argument('--llama-fast', action=argparse.BooleanOptionalAction, default=True, help='llama: our attention through SDPA (default) or explicit')
    p.add_argument('--compiled', action=argparse.BooleanOptionalAction, default=True,
                   help='gpt2, llama: also race our compiled decoding step, generate(compile=True) (default; its first call compiles, untimed)')
    p.add_argument('--full', action='store_true', help="nanoGPT shakespeare_char sizes for throughput and valid (a GPU)")
    p.add_argument('--n', type=int, default=256, help='kv: new tokens')
    p.add_argument('--rounds', type=int, default=2); p.add_argument('--steps', type=int, default=5)
    p.add_argument('--threads', type=int, help='torch CPU threads (default: torch decides)')
    p.add_argument('--compile', action=argparse.BooleanOptionalAction, default=None,
                   help='throughput: torch.compile both training loops (default: on a GPU only)')
    p.add_argument('--n-batches', type=int, help='valid: training batches instead of the configuration\'s (a smoke test)')
    a = p.parse_args()
    if a.threads: torch.set_num_threads(a.threads)
    what = a.what or ['kv', 'throughput', 'valid']
    bad = set(what) - {'kv', 'throughput', 'valid', 'gpt2', 'llama', 'roofline'}
    if bad: p.error(f"unknown benchmark(s) {sorted(bad)}: choose from kv, throughput, valid, gpt2, llama, roofline")
    dev = default_device()
    if a.compile is None: a.compile = dev.type == 'cuda'
    machine = {'device': str(dev), 'gpu': torch.cuda.get_device_name() if dev.type == 'cuda' else None, 'cpu': cpu_model(),
               'cpu_count': os.cpu_count(), 'torch_threads': torch.get_num_threads(), 'torch': torch.__version__,
               'platform': platform.platform(), 'load_average': [round(l, 2) for l in os.getloadavg()],
               'omp_wait_policy': os.environ.get('OMP_WAIT_POLICY')}   # PASSIVE: each parallel region wakes its threads (slow steps)
    print(json.dumps(machine))
    print(f"machine: {machine['gpu'] or machine['cpu']}, {machine['cpu_count']} CPU cores, {machine['torch_threads']} torch "
          f"threads, load average {machine['load_average'][0]}" + (f", OMP_WAIT_POLICY={machine['omp_wait_policy']}" if machine['omp_wait_policy'] else ''))
    out = {'machine': machine}
    if 'kv' in what:
        a.emb, a.heads, a.depth, a.seq_len = 384, 6, 6, 256
        out['kv_cache'] = bench_kv(a, dev)
    if 'throughput' in what:
        if a.full: a.emb, a.heads, a.depth, a.seq_len, a.bs, a.dropout = 384, 6, 6, 256, 64, 0.2
        else: a.emb, a.heads, a.depth, a.seq_len, a.bs, a.dropout = 128, 4, 2, 64, 32, 0.     # the quick char config
        out['throughput'] = bench_throughput(a, dev)
        out['train'] = bench_train(a, dev)
    if 'valid' in what: out['valid'] = bench_valid(a, dev)
    if {'gpt2', 'llama', 'roofline'} & set(what): out['read_rate'] = [read_rate(dev)]
    if 'gpt2' in what: out['gpt2'] = bench_gpt2(a, dev)
    if 'llama' in what: out['llama'] = bench_llama(a, dev)
    if {'gpt2', 'llama'} & set(what): out['read_rate'].append(read_rate(dev))   # again after the races: the load moves it
    if 'read_rate' in out:
        rate = max(r['best_gb_per_s'] for r in out['read_rate'])
        print(f"read rate ({out['read_rate'][0]['mib']} MiB fp32, best of {out['read_rate'][0]['runs']}): " +
              ', after the races '.join(', '.join(f"{k} {v} GB/s" for k, v in r['gb_per_s'].items()) for r in out['read_rate']) +
              f"; the limit uses the best, {rate} GB/s")
        for k in ('gpt2', 'llama'):
            if k in out:
                out[k]['roofline'] = roofline(out['read_rate'], out[k]['weight_bytes'], out[k]['tokens_per_s'])
                say_roofline(k, out[k]['roofline'])
                print(f"{k}: " + ', '.join(f"{WAYS[w]} / Hugging Face = {r:.2f}x, tokens {'identical' if out[k]['identical_tokens'][w] else 'DIFFER'}"
                                           for w, r in out[k]['ours_vs_hugging_face'].items()))
    out['machine']['load_average_after'] = [round(l, 2) for l in os.getloadavg()]
    print(json.dumps(out))

if __name__ == '__main__': main()
