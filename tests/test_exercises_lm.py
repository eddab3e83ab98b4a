"Lesson 21's checks accept the solutions and reject the stub and each typical mistake with its own hint."
import pytest, torch, torch.nn.functional as F
from transformers_scratch.checks.toolkit import assert_check
from transformers_scratch.masks import neg_fill, causal_mask, mask_scores
from transformers_scratch.lm import causal_scores
from transformers_scratch.checks.lm import check_causal_scores
from conftest import stub

pytestmark = pytest.mark.usefixtures('one_thread')

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
    assert_check(check_causal_scores, causal_scores, [       # issue 23: lesson 02 calls a -inf fill a bug
        (lambda s: _fill(s, tri(s, s.size(-1) - s.size(-2) + 1), float('-inf')), 'filled with -inf, the bug of lesson 02'),
        (lambda s: s.masked_fill(tri(s, s.size(-1) - s.size(-2) + 1), -float('inf')), r'neg_fill\(scores\.dtype\)')])


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
def c_where_inf(s): return torch.where(_future(s), torch.tensor(float('-inf')), s)       # a -inf fill: lesson 02's bug
def c_where(s): return torch.where(_future(s), s.new_tensor(neg_fill(s.dtype)), s)          # right: a 0-d fill in the scores' dtype

def test_causal_scores_issue11():
    assert_check(check_causal_scores, causal_scores, [
        (c_inplace, 'in place'), (c_4d_only, 'leading dims'), (c_minus_1e9, 'not a finite'), (c_finfo32, 'does not fit'),
        (c_hard_5, 'not square|hard-coded'), (c_float32_out, 'dtype'), (c_squeeze, 'squeeze'), (c_add_mask, 'not a finite'),
        (c_times_inf, 'NaN'), (c_where_inf, 'filled with -inf')])
    assert_check(check_causal_scores, c_where)


def test_causal_scores_from_lesson_02():
    "The solution is lesson 02's pieces: the last t_q rows of the square causal mask; the same rows lesson 03's attention masks a cached step with"
    def rows_first(s):                                        # the first t_q rows: no cache offset
        tq, tk = s.shape[-2:]
        return mask_scores(s, causal_mask(tk, device=s.device)[:tq])
    def cpu_mask(s):                                          # lesson 02's mask made on the CPU
        tq, tk = s.shape[-2:]
        return mask_scores(s, causal_mask(tk)[tk - tq:])
    def square_only(s): return mask_scores(s, causal_mask(s.size(-1), device=s.device))
    assert_check(check_causal_scores, causal_scores, [
        (rows_first, r'last\* positions'), (cpu_mask, "stay on the inputs' device"), (square_only, 'not square')])
    from transformers_scratch.attention import SelfAttention
    from transformers_scratch.config import ModelConfig
    torch.manual_seed(0)
    att = SelfAttention(ModelConfig(emb=8, heads=2, depth=1, seq_len=8, n_tokens=2), causal=True).eval()
    x = torch.randn(1, 6, 8)
    class Cache:                                              # any object with `update` (lesson 03 knows no cache class)
        def __init__(self): self.k = self.v = None
        def update(self, k, v, pad_mask):
            self.k = k if self.k is None else torch.cat([self.k, k], 2); self.v = v if self.v is None else torch.cat([self.v, v], 2)
            return self.k, self.v, pad_mask
    c = Cache(); att(x[:, :4], cache=c)
    torch.testing.assert_close(att(x[:, 4:], cache=c), att(x)[:, 4:], atol=1e-5, rtol=1e-5)   # 2 new queries over 6 keys


# --- issue 31: valid styles, and more plausible slips ----------------------------------------------------------------
def c_rows(s): return mask_scores(s, causal_mask(s.size(-1), device=s.device)[-s.size(-2):])   # valid: the last t_q rows
def c_arange(s):                                            # valid: positions compared, made on the scores' device
    tq, tk = s.shape[-2:]
    i, j = torch.arange(tk - tq, tk, device=s.device), torch.arange(tk, device=s.device)
    return s.masked_fill(j[None, :] > i[:, None], neg_fill(s.dtype))
def c_tril(s):                                              # valid: tril with an offset, torch.where
    tq, tk = s.shape[-2:]
    see = torch.ones(tq, tk, dtype=torch.bool, device=s.device).tril(tk - tq)
    return torch.where(see, s, torch.full_like(s, neg_fill(s.dtype)))

def test_causal_scores_valid_styles():
    for ok in (c_rows, c_arange, c_tril, c_where): assert_check(check_causal_scores, ok)

def c_tril_no_offset(s): return s.masked_fill(~torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).tril(), neg_fill(s.dtype))
def c_arange_cpu(s):                                        # positions made on the CPU
    tq, tk = s.shape[-2:]
    i, j = torch.arange(tk - tq, tk), torch.arange(tk)
    return s.masked_fill(j[None, :] > i[:, None], neg_fill(s.dtype))
def c_first_rows(s): return mask_scores(s, causal_mask(s.size(-1), device=s.device)[:s.size(-2)])

def test_causal_scores_issue31():
    assert_check(check_causal_scores, causal_scores, [
        (c_tril_no_offset, r'last\* positions'), (c_arange_cpu, 'device'), (c_first_rows, r'last\* positions')])


# issue 31, second audit: a mask taken one row early is named, not "hard-coded"
def cs_row_early(s):
    tq, tk = s.shape[-2:]
    return mask_scores(s, causal_mask(tk, device=s.device)[tk - tq - 1:tk - 1])
def cs_square_only(s):                                      # a square mask of t_k: wrong shape once t_q < t_k
    return s.masked_fill(torch.ones(s.size(-1), s.size(-1), dtype=torch.bool, device=s.device).triu(1), neg_fill(s.dtype))

def test_causal_scores_causes():
    assert_check(check_causal_scores, causal_scores, [(cs_row_early, 'one row early|negative start'),
                                                      (cs_square_only, 'not square|both sizes')])


# audit of lessons 20-28: neg_fill(float64) made into a float32 tensor overflows to -inf; the hint said "you filled with -inf"
def c_fill_tensor_f32(s): return s.masked_fill(_future(s), torch.tensor(neg_fill(s.dtype)))       # torch.tensor(x) is float32
def c_fill_tensor_dtype(s): return s.masked_fill(_future(s), torch.tensor(neg_fill(s.dtype), dtype=s.dtype, device=s.device))   # valid

def test_causal_scores_fill_through_float32():
    assert_check(check_causal_scores, causal_scores, [(c_fill_tensor_f32, 'right in float32, but in float64.*float32 tensor')])
    assert_check(check_causal_scores, c_fill_tensor_dtype)
