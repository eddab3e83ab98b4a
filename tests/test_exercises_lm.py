"Lesson 21's checks accept the solutions and reject the stub and each typical mistake with its own hint."
import torch, torch.nn.functional as F
from transformers_scratch.core import TODO, assert_check
from transformers_scratch.masks import neg_fill
from transformers_scratch.lm import check_lm_pair, lm_pair, check_causal_scores, causal_scores

def stub(*args): raise TODO("write it")

def test_lm_pair():
    assert_check(check_lm_pair, lm_pair, [
        (stub, 'not solved'),
        (lambda ids, i, n: (ids[i:i + n], ids[i:i + n]), 'targets are the inputs'),
        (lambda ids, i, n: (ids[i:i + n], ids[i - 1:i + n - 1]), 'wrong way'),
        (lambda ids, i, n: (ids[i:i + n], ids[i + 1:i + n]), 'one step later'),          # one token short
        (lambda ids, i, n: (ids[i + 1:i + n + 1], ids[i:i + n]), 'swapped'),
        (lambda ids, i, n: (ids[i:i + n], ids[i + 2:i + n + 2]), r'y should be ids\[i\+1'),
        (lambda ids, i, n: (ids[i + 1:i + n + 1], ids[i + 2:i + n + 2]), r'x should be the window'),
        (lambda ids, i, n: ids[i:i + n + 1], 'return a pair'),
        (lambda ids, i, n: (ids[i:i + n + 1], ids[i + 1:i + n + 2]), r"x should have shape"),
    ])
    assert_check(check_lm_pair, lambda ids, i, n: (ids[i:][:n], ids[i:][1:n + 1]))   # any right way passes

def _fill(s, hide, v=None): return s.masked_fill(hide, neg_fill(s.dtype) if v is None else v)
def tri(s, d): return torch.ones(s.shape[-2:], dtype=torch.bool).triu(d)

def test_causal_scores():
    assert_check(check_causal_scores, causal_scores, [
        (stub, 'not solved'),
        (lambda s: _fill(s, tri(s, s.size(-1) - s.size(-2) + 1), 0.), 'are 0'),
        (lambda s: s * ~tri(s, s.size(-1) - s.size(-2) + 1), 'are 0'),                                 # multiplied by the mask
        (lambda s: _fill(s, tri(s, s.size(-1) - s.size(-2) + 1), float('inf')), r'\+inf'),
        (lambda s: _fill(s, ~tri(s, s.size(-1) - s.size(-2) + 1)), 'hid the past'),                  # tril instead of triu
        (lambda s: _fill(s, ~tri(s, s.size(-1) - s.size(-2))), 'hid the past'),                      # strictly lower
        (lambda s: _fill(s, tri(s, s.size(-1) - s.size(-2))), 'off by one'),                         # the diagonal too
        (lambda s: _fill(s, tri(s, 1)), r'last\* positions'),                                          # no cache offset
        (lambda s: _fill(s, torch.ones(s.size(-1), s.size(-1), dtype=torch.bool).triu(1)), 'not square'),
        (lambda s: F.softmax(causal_scores(s), -1), 'applied the softmax'),
        (lambda s: causal_scores(s) * 2, 'not masked changed'),
        (lambda s: _fill(s, tri(s, s.size(-1) - s.size(-2) + 2)), 'wrong scores are masked'),
    ])
    assert_check(check_causal_scores, lambda s: _fill(s, tri(s, s.size(-1) - s.size(-2) + 1), float('-inf')))  # -inf is fine
