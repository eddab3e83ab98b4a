"Lesson 21's checks accept the solutions and reject the stub and each typical mistake with its own hint."
import pytest, torch, torch.nn.functional as F
from transformers_scratch.core import TODO, assert_check
from transformers_scratch.masks import neg_fill
from transformers_scratch.lm import check_lm_pair, lm_pair, check_causal_scores, causal_scores
from transformers_scratch.checks.lm import *   # the exercise checks (the model module forwards check_* names here too)

def stub(*args): raise TODO("write it")
pytestmark = pytest.mark.usefixtures('one_thread')

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
        (lambda ids, i, n: (ids[i:i + n + 1], ids[i + 1:i + n + 2]), r"x should have seq_len"),
    ])
    assert_check(check_lm_pair, lambda ids, i, n: (ids[i:][:n], ids[i:][1:n + 1]))   # any right way passes

def _fill(s, hide, v=None): return s.masked_fill(hide, neg_fill(s.dtype) if v is None else v)
def tri(s, d): return torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).triu(d)

def test_causal_scores_device():   # issue 16: a mask made on the CPU
    assert_check(check_causal_scores, causal_scores, [
        (lambda s: _fill(s, torch.ones(s.shape[-2:], dtype=torch.bool).triu(s.size(-1) - s.size(-2) + 1)), "stay on the inputs' device")])

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


# --- new wrong answers (issue 11): next id instead of next token, ignored arguments, sizes, dtype, in place ---------
def lp_plus_one(ids, i, n): return ids[i:i + n], ids[i:i + n] + 1                 # "the next token is id + 1"
def lp_hard_8(ids, i, n): return ids[i:i + 8], ids[i + 1:i + 9]
def lp_from_0(ids, i, n): return ids[:n], ids[1:n + 1]                          # ignores i
def lp_i_times_n(ids, i, n): return ids[i * n:i * n + n], ids[i * n + 1:i * n + n + 1]
def lp_float(ids, i, n): return ids[i:i + n].float(), ids[i + 1:i + n + 1].float()
def lp_squeeze(ids, i, n): return ids[i:i + n].squeeze(), ids[i + 1:i + n + 1].squeeze()
def lp_inplace(ids, i, n):                                   # shifts a view of the caller's ids
    x, w = ids[i:i + n].clone(), ids[i:i + n + 1]
    w[:-1] = w[1:].clone()
    return x, w[:-1]
def lp_lists(ids, i, n): return ids[i:i + n].tolist(), ids[i + 1:i + n + 1].tolist()
def lp_x_short(ids, i, n): return ids[i:i + n - 1], ids[i + 1:i + n]
def lp_clone(ids, i, n): return ids[i:i + n].clone(), ids.roll(-1)[i:i + n]     # right: the last window never wraps

def test_lm_pair_issue11():
    assert_check(check_lm_pair, lm_pair, [
        (lp_plus_one, 'added 1'), (lp_hard_8, 'seq_len=5'), (lp_from_0, 'started at 0'), (lp_i_times_n, r'i \* seq_len'),
        (lp_float, 'dtype'), (lp_squeeze, 'squeeze'), (lp_inplace, 'in place'), (lp_lists, 'tensors'), (lp_x_short, 'seq_len=5')])
    assert_check(check_lm_pair, lp_clone)


def _future(s): return tri(s, s.size(-1) - s.size(-2) + 1)
def c_inplace(s): return s.masked_fill_(_future(s), neg_fill(s.dtype))
def c_4d_only(s):
    b, h, tq, tk = s.shape
    return s.masked_fill(torch.ones(tq, tk, dtype=torch.bool).triu(tk - tq + 1), neg_fill(s.dtype))
def c_minus_1e9(s): return s.masked_fill(_future(s), -1e9)
def c_finfo32(s): return s.masked_fill(_future(s), neg_fill(torch.float32))              # overflows in bfloat16
def c_hard_5(s): return s.masked_fill(torch.ones(5, 5, dtype=torch.bool).triu(1), neg_fill(s.dtype))
def c_float32_out(s): return s.float().masked_fill(_future(s), neg_fill(torch.float32))
def c_squeeze(s): return causal_scores(s).squeeze()
def c_add_mask(s): return s + _future(s) * -1e9                                          # an additive finite mask
def c_times_inf(s): return s + _future(s) * float('-inf')                              # 0 * -inf is NaN
def c_where_inf(s): return torch.where(_future(s), torch.tensor(float('-inf')), s)       # right: a 0-d fill keeps the dtype

def test_causal_scores_issue11():
    assert_check(check_causal_scores, causal_scores, [
        (c_inplace, 'in place'), (c_4d_only, 'leading dims'), (c_minus_1e9, 'not a finite'), (c_finfo32, 'does not fit'),
        (c_hard_5, 'not square|hard-coded'), (c_float32_out, 'dtype'), (c_squeeze, 'squeeze'), (c_add_mask, 'not a finite'),
        (c_times_inf, 'NaN')])
    assert_check(check_causal_scores, c_where_inf)
