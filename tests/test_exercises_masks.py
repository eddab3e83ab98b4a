"Each check in lesson 03 accepts the solution and rejects the stub and the typical wrong answers with the right hint."
import torch, torch.nn.functional as F
from transformers_scratch.core import TODO, assert_check
from transformers_scratch.masks import *


def stub(*args, **kwargs): raise TODO("not yet")


# --- causal_mask ---------------------------------------------------------------------------------------------------
def cm_upper(t, device=None):     return torch.ones(t, t, dtype=torch.bool, device=device).triu()
def cm_no_diag(t, device=None):   return torch.ones(t, t, dtype=torch.bool, device=device).tril(-1)
def cm_inverted(t, device=None):  return torch.ones(t, t, dtype=torch.bool, device=device).triu(1)
def cm_float(t, device=None):     return torch.ones(t, t, device=device).tril()
def cm_no_device(t, device=None): return torch.ones(t, t, dtype=torch.bool).tril()
def cm_full(t, device=None):      return torch.ones(t, t, dtype=torch.bool, device=device)

def test_check_causal_mask():
    assert_check(check_causal_mask, causal_mask, [
        (stub, 'not solved'), (cm_upper, 'upper triangle'), (cm_no_diag, 'diagonal is missing'),
        (cm_inverted, 'inverted'), (cm_float, 'bool'), (cm_no_device, 'device'), (cm_full, 'lower triangle')])


# --- mask_scores ---------------------------------------------------------------------------------------------------
def ms_plus_inf(s, m):    return s.masked_fill(~m, float('inf'))
def ms_plus_big(s, m):    return s.masked_fill(~m, 1e4)
def ms_zero(s, m):        return s.masked_fill(~m, 0.)
def ms_inverted(s, m):    return s.masked_fill(m, neg_fill(s.dtype))
def ms_after(s, m):       return F.softmax(s, -1) * m
def ms_after_fill(s, m):  return F.softmax(s, -1).masked_fill(~m, 0.)
def ms_softmax(s, m):     return masked_softmax(s, m)
def ms_minus_1e9(s, m):   return s.masked_fill(~m, -1e9)
def ms_minus_inf(s, m):   return s.masked_fill(~m, float('-inf'))
def ms_cast_inf(s, m):    return torch.where(m, s, torch.tensor(-1e9).to(s.dtype))   # -1e9 in fp16 is -inf
def ms_small(s, m):       return s.masked_fill(~m, -2.)
def ms_inplace(s, m):     return s.masked_fill_(~m, neg_fill(s.dtype))
def ms_float(s, m):       return s.float().masked_fill(~m, neg_fill(torch.float32))

def test_check_mask_scores():
    assert_check(check_mask_scores, mask_scores, [
        (stub, 'not solved'), (ms_plus_inf, r'\+inf'), (ms_plus_big, 'large positive'), (ms_zero, 'filled with 0'),
        (ms_inverted, 'inverted'), (ms_after, 'softmax and then masked'), (ms_after_fill, 'softmax and then masked'),
        (ms_softmax, 'not the softmax weights'), (ms_minus_1e9, 'does not fit'), (ms_minus_inf, '-inf'),
        (ms_cast_inf, 'became -inf'), (ms_small, 'not negative enough'), (ms_inplace, 'in place'), (ms_float, 'dtype')])


# --- masked_softmax ------------------------------------------------------------------------------------------------
def sm_minus_inf(s, m=None):
    if m is None: return F.softmax(s, -1)
    return F.softmax(s.masked_fill(~m, float('-inf')), -1)
def sm_uniform(s, m=None):                 # finite fill, but fully masked rows are left uniform
    if m is None: return F.softmax(s, -1)
    return F.softmax(s.masked_fill(~m, -1e4), -1)
def sm_after(s, m=None):
    if m is None: return F.softmax(s, -1)
    return F.softmax(s, -1) * m
def sm_zero(s, m=None):
    if m is None: return F.softmax(s, -1)
    return F.softmax(s.masked_fill(~m, 0.), -1)
def sm_plus_inf(s, m=None):
    if m is None: return F.softmax(s, -1)
    return F.softmax(s.masked_fill(~m, float('inf')), -1)
def sm_where_additive(s, m=None):          # clean forward, NaN gradient
    if m is None: return F.softmax(s, -1)
    add = torch.zeros(m.shape, dtype=s.dtype).masked_fill(~m, float('-inf'))
    return torch.where(m, F.softmax(s + add, -1), 0.)
def sm_dim(s, m=None):
    if m is None: return F.softmax(s, -2)
    return F.softmax(mask_scores(s, m), -2).masked_fill(~m, 0.)
def sm_no_none(s, m=None): return F.softmax(mask_scores(s, m), -1).masked_fill(~m, 0.)   # crashes without a mask
def sm_detach(s, m=None):
    if m is None: return F.softmax(s, -1)
    return masked_softmax(s.detach(), m)
def sm_1e9(s, m=None):
    if m is None: return F.softmax(s, -1)
    return F.softmax(s.masked_fill(~m, -1e9), -1).masked_fill(~m, 0.)
def sm_inverted(s, m=None):
    if m is None: return F.softmax(s, -1)
    return masked_softmax(s, ~m)

def test_check_masked_softmax():
    assert_check(check_masked_softmax, masked_softmax, [
        (stub, 'not solved'), (sm_minus_inf, 'fully masked row gives NaN'), (sm_uniform, 'uniform row'),
        (sm_after, 'masked after the softmax'), (sm_zero, 'filled with 0'), (sm_plus_inf, r'\+inf'),
        (sm_where_additive, 'gradient has NaN'), (sm_dim, 'plain softmax over the last dim'), (sm_no_none, 'raised'),
        (sm_detach, 'detach'), (sm_1e9, 'does not fit'), (sm_inverted, 'inverted')])


# --- masked_softmax_lens -------------------------------------------------------------------------------------------
def _lens_mask(s, lens):
    m = lengths_to_mask(lens, s.size(-1))
    return m[:, None, :] if lens.dim() == 1 else m
def ml_d2l(s, lens=None):                  # d2l's original: -1e6 fill, uniform rows at length 0
    if lens is None: return F.softmax(s, -1)
    return F.softmax(s.masked_fill(~_lens_mask(s, lens), -1e6), -1)
def ml_minus_inf(s, lens=None):
    if lens is None: return F.softmax(s, -1)
    return F.softmax(s.masked_fill(~_lens_mask(s, lens), float('-inf')), -1)
def ml_plus_one(s, lens=None):
    if lens is None: return F.softmax(s, -1)
    return masked_softmax(s, torch.arange(s.size(-1)) <= (lens[:, None, None] if lens.dim() == 1 else lens[..., None]))
def ml_minus_one(s, lens=None):
    if lens is None: return F.softmax(s, -1)
    return masked_softmax(s, _lens_mask(s, (lens - 1).clamp(min=0)))
def ml_queries(s, lens=None):
    if lens is None: return F.softmax(s, -1)
    if lens.dim() == 1: return masked_softmax(s, lengths_to_mask(lens, s.size(-2))[:, :, None])
    return masked_softmax(s, _lens_mask(s, lens))
def ml_only_1d(s, lens=None):              # treats (b, t_q) lengths as if they were (b,)
    if lens is None: return F.softmax(s, -1)
    return masked_softmax(s, lengths_to_mask(lens[:, 0] if lens.dim() == 2 else lens, s.size(-1))[:, None, :])
def ml_no_none(s, lens=None): return masked_softmax(s, _lens_mask(s, lens))

def test_check_masked_softmax_lens():
    assert_check(check_masked_softmax_lens, masked_softmax_lens, [
        (stub, 'not solved'), (ml_d2l, 'uniform row'), (ml_minus_inf, 'NaN where the valid length is 0'),
        (ml_plus_one, r'valid_len \+ 1'), (ml_minus_one, 'valid_len - 1'), (ml_queries, 'masked the queries'),
        (ml_only_1d, r'one length per query'), (ml_no_none, 'raised')])
