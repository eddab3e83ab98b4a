"""The translator's embedding scale (lesson 06, "One initialisation"): the quick Multi30k run of `benchmarks/translate.py`
(greedy BLEU on test_2016_flickr) with the token embeddings initialised and scaled four ways, the model otherwise as
`run_translate` builds it (tied head).

    python benchmarks/embscale.py base    # init_weights: N(0, 0.02)                                   (measured 22.1)
    python benchmarks/embscale.py scale   # N(0, 0.02), times √e on the way in                         (25.9)
    python benchmarks/embscale.py old     # N(0, 1/e), times √e on the way in: the pre-issue-24 model   (30.7)
    python benchmarks/embscale.py n01     # PyTorch's N(0, 1), no factor: the tied head's logits large (6.9)

Measured two at a time with OMP_NUM_THREADS=1 on a 2-core x86-64 CPU (about 350 s each). It patches the library for
this process only (the init and a forward hook on the token embeddings), and prints one JSON line.
"""
import json, math, os, sys, time
import torch.nn as nn
import transformers_scratch.seq2seq as s2s

MODES = ('base', 'scale', 'old', 'n01')

def patch(mode):
    "Make `Seq2SeqTransformer` initialise and scale its token embeddings as `mode` says"
    init, build = s2s.init_weights, s2s.Seq2SeqTransformer.__init__
    def init_tokens(m):
        init(m)
        if isinstance(m, nn.Embedding) and m.num_embeddings > 64 and mode in ('old', 'n01'):   # token tables (positions: 64 rows)
            nn.init.normal_(m.weight, std=m.embedding_dim ** -0.5 if mode == 'old' else 1.)
            if m.padding_idx is not None: m.weight.data[m.padding_idx] = 0
    def build_scaled(self, c):
        build(self, c)
        if mode in ('scale', 'old'):
            for t in (self.encoder, self.decoder): t.token_emb.register_forward_hook(lambda mod, i, out: out * math.sqrt(mod.embedding_dim))
    s2s.init_weights, s2s.Seq2SeqTransformer.__init__ = init_tokens, build_scaled

def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else 'base'
    if mode not in MODES: sys.exit(f"mode: expected one of {', '.join(MODES)}, got {mode!r}")
    patch(mode)
    from transformers_scratch.translate import run_translate
    t0 = time.time()
    res = run_translate(quick=True, beam=1)
    print(json.dumps({'mode': mode, 'seconds': round(time.time() - t0), 'load_avg_1min': round(os.getloadavg()[0], 2),
                      **{k: v for k, v in res.items() if 'bleu' in k}}))

if __name__ == '__main__': main()
