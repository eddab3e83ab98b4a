"""The translator's embedding scale (lesson 06, "One initialisation"): the quick Multi30k run of `benchmarks/translate.py`
(greedy BLEU on test_2016_flickr) with the token embeddings initialised and scaled four ways, the model otherwise as
`run_translate` builds it (tied head).

    python benchmarks/embscale.py on      # emb_scale=True, the translator's default: N(0, 1/e), times √e on the way in  (29.5; 30.7 patched in)
    python benchmarks/embscale.py off     # emb_scale=False: init_weights' N(0, 0.02), no factor                          (22.1)
    python benchmarks/embscale.py scale   # N(0, 0.02), times √e on the way in                                           (25.9)
    python benchmarks/embscale.py n01     # PyTorch's N(0, 1), no factor: the tied head's logits large                    (6.9)

Measured two at a time with OMP_NUM_THREADS=1 on a 2-core x86-64 CPU (about 350 s each). `scale` and `n01` patch the
initialisation for this process only. Prints one JSON line.
"""
import json, os, sys, time
import torch.nn as nn
import transformers_scratch.seq2seq as s2s
from transformers_scratch.models import ScaledEmbedding

MODES = {'on': True, 'off': False, 'scale': True, 'n01': False}   # mode -> emb_scale

def patch(mode):
    "For `scale` and `n01`: draw the token embeddings N(0, 0.02) or N(0, 1) instead"
    init = s2s.init_weights
    def init_tokens(m):
        init(m)
        if (mode == 'scale' and isinstance(m, ScaledEmbedding)) or (mode == 'n01' and isinstance(m, nn.Embedding) and m.num_embeddings > 64):
            nn.init.normal_(m.weight, std=0.02 if mode == 'scale' else 1.)          # token tables only (positions: 64 rows)
            if m.padding_idx is not None: m.weight.data[m.padding_idx] = 0
    s2s.init_weights = init_tokens

def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else 'on'
    if mode not in MODES: sys.exit(f"mode: expected one of {', '.join(MODES)}, got {mode!r}")
    if mode in ('scale', 'n01'): patch(mode)
    from transformers_scratch.translate import TRANSLATE_QUICK
    from transformers_scratch.runs import run_translate
    t0 = time.time()
    res = run_translate(recipe=TRANSLATE_QUICK.replace(beam=1, emb_scale=MODES[mode]), quick=True)
    print(json.dumps({'mode': mode, 'seconds': round(time.time() - t0), 'load_avg_1min': round(os.getloadavg()[0], 2),
                      **{k: v for k, v in res.items() if 'bleu' in k}}))

if __name__ == '__main__': main()
