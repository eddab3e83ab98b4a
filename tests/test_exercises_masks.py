"Each check in lesson 02 accepts the solution and rejects the stub and the typical wrong answers with the right hint."
import re
import numpy as np
import torch, torch.nn.functional as F
import pytest
from transformers_scratch.checks.toolkit import CheckError, assert_check

pytestmark = pytest.mark.usefixtures('one_thread')   # tiny tensors: one thread is faster
from transformers_scratch.masks import causal_mask, neg_fill, mask_scores, lengths_to_mask, masked_softmax, masked_softmax_lens
from transformers_scratch.checks.masks import check_causal_mask, check_mask_scores, check_masked_softmax, check_masked_softmax_lens
from conftest import stub



# Hints of the families every check shares (issue 11)
HARD = r'hard-coded'                       # a size that worked on one fixture fails on the next
SQUEEZE = r'batch dim of a batch of one is gone'
INPLACE = r'changed its input .* in place'
DTYPE = r"keep the inputs' dtype"
DEVICE = r"stay on the inputs' device"
FIRST = r'first one'                       # the first batch element used for all


# --- causal_mask ---------------------------------------------------------------------------------------------------
def cm_upper(t, device=None):     return torch.ones(t, t, dtype=torch.bool, device=device).triu()
def cm_no_diag(t, device=None):   return torch.ones(t, t, dtype=torch.bool, device=device).tril(-1)
def cm_inverted(t, device=None):  return torch.ones(t, t, dtype=torch.bool, device=device).triu(1)
def cm_float(t, device=None):     return torch.ones(t, t, device=device).tril()
def cm_no_device(t, device=None): return torch.ones(t, t, dtype=torch.bool).tril()
def cm_full(t, device=None):      return torch.ones(t, t, dtype=torch.bool, device=device)

def cm_four(t, device=None):      return torch.ones(4, 4, dtype=torch.bool, device=device).tril()
def cm_uint8(t, device=None):     return torch.ones(t, t, device=device).tril().byte()
def cm_next(t, device=None):      return torch.ones(t, t, dtype=torch.bool, device=device).tril(1)
def cm_batched(t, device=None):   return torch.ones(1, t, t, dtype=torch.bool, device=device).tril()
def cm_arange_gt(t, device=None): r = torch.arange(t, device=device); return r[:, None] > r          # j < i
def cm_arange_cpu(t, device=None): r = torch.arange(t); return r[None, :] <= r[:, None]              # ignores device
def cm_numpy(t, device=None):     return torch.from_numpy(np.tril(np.ones((t, t), dtype=bool)))
def cm_loop(t, device=None):      return torch.tensor([[j <= i for j in range(t)] for i in range(t)])  # CPU only
def cm_t_plus_1(t, device=None):  return torch.ones(t + 1, t + 1, dtype=torch.bool, device=device).tril()[1:, :-1]
def cm_str_device(t, device=None):                    # only honours a device given as a string
    return torch.ones(t, t, dtype=torch.bool, device=device if isinstance(device, str) else None).tril()

def test_check_causal_mask():
    assert_check(check_causal_mask, causal_mask, [
        (stub, 'not solved'), (cm_upper, 'upper triangle'), (cm_no_diag, 'diagonal is missing'),
        (cm_inverted, 'inverted'), (cm_float, 'bool'), (cm_no_device, 'device'), (cm_full, 'lower triangle'),
        # issue 11's families
        (cm_four, HARD), (cm_uint8, 'bool'), (cm_next, 'off by one'), (cm_batched, r'shape \(4, 4\)'),
        (cm_arange_gt, 'diagonal is missing'), (cm_arange_cpu, 'device'), (cm_numpy, 'device'), (cm_loop, 'device'),
        (cm_t_plus_1, 'off by one'), (cm_str_device, 'device')])
    assert_check(check_causal_mask, lambda t, device=None: torch.arange(t, device=device)[None] <= torch.arange(t, device=device)[:, None])


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

def ms_setitem(s, m):                                  # boolean assignment into the caller's scores
    s[~m.expand_as(s)] = neg_fill(s.dtype)
    return s
def ms_f32_fill(s, m):   return s.masked_fill(~m, neg_fill(torch.float32))                 # hard-coded dtype
def ms_where_f32(s, m):  return torch.where(m, s, torch.tensor(neg_fill(torch.float32)))
def ms_add(s, m):        return s + (~m).to(s.dtype) * neg_fill(s.dtype)                   # adds instead of filling
def ms_add_f32(s, m):    return s + (~m) * neg_fill(s.dtype)                                # bool * float: float32
def ms_first(s, m):      return s.masked_fill(~m[:1], neg_fill(s.dtype))
def ms_pad_shape(s, m):  return s.masked_fill(~m[:, None], neg_fill(s.dtype))              # takes mask for (b, t)
def ms_3d(s, m):                                                                            # 3-D scores only
    b, tq, tk = s.size()
    return s.masked_fill(~m.expand(b, tq, tk), neg_fill(s.dtype))
def ms_full_cpu(s, m):   return torch.where(m, s, torch.full(s.shape, neg_fill(s.dtype), dtype=s.dtype))
def ms_squeeze(s, m):    return mask_scores(s, m).squeeze()
def ms_view(s, m):       return s.masked_fill(~m.view(1, 5, 5), neg_fill(s.dtype))
def ms_clone_f64(s, m):  return s.double().masked_fill(~m, neg_fill(torch.float64))
def ms_1e4(s, m):        return s.masked_fill(~m, -1e4)                                     # fits fp16, but fixed
def ms_f16_fill(s, m):   return s.masked_fill(~m, neg_fill(torch.float16))                 # hard-coded dtype

def test_check_mask_scores():
    assert_check(check_mask_scores, mask_scores, [
        (stub, 'not solved'), (ms_plus_inf, r'\+inf'), (ms_plus_big, 'large positive'), (ms_zero, 'filled with 0'),
        (ms_inverted, 'inverted'), (ms_after, 'softmax and then masked'), (ms_after_fill, 'softmax and then masked'),
        (ms_softmax, 'not the softmax weights'), (ms_minus_1e9, 'does not fit'), (ms_minus_inf, '-inf'),
        (ms_cast_inf, 'became -inf'), (ms_small, 'not negative enough'), (ms_inplace, 'in place'), (ms_float, 'dtype'),
        # issue 11's families
        (ms_setitem, INPLACE), (ms_f32_fill, 'does not fit'), (ms_where_f32, 'became -inf'), (ms_add, r'became -inf.*add'),
        (ms_add_f32, 'NaN'), (ms_first, FIRST), (ms_pad_shape, r'shape \(1, 5, 5\)'), (ms_3d, r'number of dims|dims where the other had'),
        (ms_full_cpu, DEVICE), (ms_squeeze, SQUEEZE), (ms_view, HARD), (ms_clone_f64, DTYPE),
        (ms_1e4, 'fill with neg_fill'), (ms_f16_fill, 'fill with neg_fill')])
    assert_check(check_mask_scores, lambda s, m: torch.where(m, s, torch.tensor(neg_fill(s.dtype), dtype=s.dtype)))


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

def sm_mask_float(s, m=None):              # w * mask.float(): half scores come back as float32
    if m is None: return F.softmax(s, -1)
    return F.softmax(mask_scores(s, m), -1) * m.float()
def sm_f32(s, m=None):
    if m is None: return F.softmax(s, -1)
    return F.softmax(mask_scores(s, m), -1, dtype=torch.float32).masked_fill(~m, 0.)
def sm_fill_(s, m=None):                   # fills the caller's scores
    if m is None: return F.softmax(s, -1)
    return F.softmax(s.masked_fill_(~m, neg_fill(s.dtype)), -1).masked_fill(~m, 0.)
def sm_unmask_full(s, m=None):             # un-masks fully masked rows in the caller's mask to dodge the NaN
    if m is None: return F.softmax(s, -1)
    full = ~m.any(-1, keepdim=True)
    m |= full
    return F.softmax(s.masked_fill(~m, float('-inf')), -1).masked_fill(full, 0.)
def sm_zeros_cpu(s, m=None):
    if m is None: return F.softmax(s, -1)
    w = F.softmax(mask_scores(s, m), -1)
    return torch.where(m, w, torch.zeros(w.shape, dtype=w.dtype))
def sm_first(s, m=None):
    if m is None: return F.softmax(s, -1)
    return masked_softmax(s, m[:1])
def sm_squeeze(s, m=None): return masked_softmax(s, m).squeeze()
def sm_3d(s, m=None):
    b, tq, tk = s.size()
    return masked_softmax(s, m)
def sm_ignore(s, m=None): return F.softmax(s, -1)
def sm_none_f32(s, m=None):
    if m is None: return F.softmax(s.float(), -1)
    return masked_softmax(s, m)
def sm_d2l_1e6(s, m=None):                 # d2l's -1e6: overflows fp16
    if m is None: return F.softmax(s, -1)
    return F.softmax(s.masked_fill(~m, -1e6), -1).masked_fill(~m, 0.)

def sm_fill_after_(s, m=None):             # zeroes the softmax's output in place: autograd needed it, backward fails
    if m is None: return F.softmax(s, -1)
    return F.softmax(mask_scores(s, m), -1).masked_fill_(~m, 0.)
def sm_new_leaf(s, m=None):                # right values, from a fresh tensor that requires grad: nothing reaches the scores
    if m is None: return F.softmax(s, -1)
    return masked_softmax(s.detach(), m).requires_grad_()

def test_check_masked_softmax():
    assert_check(check_masked_softmax, masked_softmax, [
        (sm_fill_after_, 'backward pass failed'), (sm_new_leaf, 'no gradient reaches the scores'),
        (stub, 'not solved'), (sm_minus_inf, 'fully masked row gives NaN'), (sm_uniform, 'uniform row'),
        (sm_after, 'masked after the softmax'), (sm_zero, 'filled with 0'), (sm_plus_inf, r'\+inf'),
        (sm_where_additive, 'gradient has NaN'), (sm_dim, 'plain softmax over the last dim'), (sm_no_none, 'raised'),
        (sm_detach, 'detach'), (sm_1e9, 'does not fit'), (sm_inverted, 'inverted'),
        # issue 11's families
        (sm_mask_float, DTYPE), (sm_f32, DTYPE), (sm_fill_, INPLACE), (sm_unmask_full, INPLACE), (sm_zeros_cpu, DEVICE),
        (sm_first, FIRST), (sm_squeeze, SQUEEZE), (sm_3d, r'number of dims|dims where the other had'), (sm_ignore, 'ignored the mask'),
        (sm_none_f32, DTYPE), (sm_d2l_1e6, 'does not fit')])
    assert_check(check_masked_softmax, lambda s, m=None: F.softmax(s, -1) if m is None else
                 torch.where(m, F.softmax(mask_scores(s, m), -1), 0.))


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

def _heads(m, s): return m.view(m.size(0), *[1] * (s.dim() - m.dim()), *m.shape[1:])
def ml_clamp5(s, lens=None):               # clamps at a fixed length
    if lens is None: return F.softmax(s, -1)
    return masked_softmax_lens(s, lens.clamp(max=5).clamp(max=s.size(-1)))
def ml_t5(s, lens=None):                   # a fixed number of keys
    if lens is None: return F.softmax(s, -1)
    m = lengths_to_mask(lens, 5)
    return masked_softmax(s, _heads(m[:, None, :] if lens.dim() == 1 else m, s))
def ml_3d_only(s, lens=None):              # no broadcast over the heads
    if lens is None: return F.softmax(s, -1)
    return masked_softmax(s, _lens_mask(s, lens))
def ml_4d_only(s, lens=None):              # always inserts a head dim
    if lens is None: return F.softmax(s, -1)
    m = _lens_mask(s, lens)
    return masked_softmax(s, m[:, None])
def ml_first(s, lens=None):
    if lens is None: return F.softmax(s, -1)
    return masked_softmax_lens(s, lens[:1].expand_as(lens))
def ml_fill_(s, lens=None):
    if lens is None: return F.softmax(s, -1)
    m = _heads(_lens_mask(s, lens), s)
    return F.softmax(s.masked_fill_(~m, neg_fill(s.dtype)), -1).masked_fill(~m, 0.)
def ml_lens_inplace(s, lens=None):         # turns the caller's lengths into last indices
    if lens is None: return F.softmax(s, -1)
    lens -= 1
    m = torch.arange(s.size(-1), device=s.device) <= (lens[:, None, None] if lens.dim() == 1 else lens[..., None])
    return masked_softmax(s, _heads(m, s))
def ml_float(s, lens=None):
    if lens is None: return F.softmax(s, -1)
    return masked_softmax_lens(s.float(), lens)
def ml_arange_cpu(s, lens=None):
    if lens is None: return F.softmax(s, -1)
    m = torch.arange(s.size(-1)) < (lens[:, None, None] if lens.dim() == 1 else lens[..., None])
    return masked_softmax(s, _heads(m, s))
def ml_squeeze(s, lens=None): return masked_softmax_lens(s, lens).squeeze()
def ml_none_default(s, lens=None):         # treats a missing length as length 0
    return masked_softmax_lens(s, lens if lens is not None else torch.zeros(s.size(0), dtype=torch.long))

def ml_detach(s, lens=None):                # right values, cut off from autograd (the check used to crash on it)
    if lens is None: return F.softmax(s, -1)
    return masked_softmax_lens(s.detach(), lens)
def ml_fill_after_(s, lens=None):          # zeroes the softmax's output in place: backward fails
    if lens is None: return F.softmax(s, -1)
    m = _heads(_lens_mask(s, lens), s)
    return F.softmax(mask_scores(s, m), -1).masked_fill_(~m, 0.)
def ml_new_leaf(s, lens=None):
    if lens is None: return F.softmax(s, -1)
    return masked_softmax_lens(s.detach(), lens).requires_grad_()

def test_check_masked_softmax_lens():
    assert_check(check_masked_softmax_lens, masked_softmax_lens, [
        (ml_detach, 'cut off from autograd'), (ml_fill_after_, 'backward pass failed'),
        (ml_new_leaf, 'no gradient reaches the scores'),
        (stub, 'not solved'), (ml_d2l, 'uniform row'), (ml_minus_inf, 'NaN where the valid length is 0'),
        (ml_plus_one, r'valid_len \+ 1'), (ml_minus_one, 'valid_len - 1'), (ml_queries, 'masked the queries'),
        (ml_only_1d, r'one length per query'), (ml_no_none, 'raised'),
        # issue 11's families
        (ml_clamp5, r'wrong weights for \(b,\)'), (ml_t5, HARD), (ml_3d_only, r'number of dims|dims where the other had|does not line up'),
        (ml_4d_only, r'shape \(1, 3, 5\)'), (ml_first, FIRST), (ml_fill_, INPLACE), (ml_lens_inplace, INPLACE),
        (ml_float, DTYPE), (ml_arange_cpu, DEVICE), (ml_squeeze, SQUEEZE), (ml_none_default, 'plain softmax')])
    def loop(s, lens=None):                # a correct answer that reads the lengths one by one
        if lens is None: return F.softmax(s, -1)
        out = torch.zeros_like(s)
        for i in range(s.size(0)):
            for q in range(s.size(-2)):
                L = int(lens[i] if lens.dim() == 1 else lens[i, q])
                if L: out[i, ..., q, :L] = F.softmax(s[i, ..., q, :L], -1)
        return out
    assert_check(check_masked_softmax_lens, loop)


# --- every check gives its own verdict, whatever comes back (issue 23: a crash in a check's own code is the course's bug)
NONSENSE = [(lambda *a, **k: None, 'should be a tensor, got NoneType'), (lambda *a, **k: [1., 2.], 'should be a tensor, got list'),
            (lambda *a, **k: 3, 'should be a tensor, got int'), (lambda *a, **k: torch.zeros(1), r'shape|bool'),
            (lambda x, *a, **k: torch.zeros_like(x, dtype=torch.long), r'shape|dtype|raised TypeError'),
            (lambda x, *a, **k: torch.full_like(x, float('nan')), r'NaN|raised TypeError|plain softmax'),
            (lambda x, *a, **k: x, r'should be a tensor|unchanged|ignored the mask|plain softmax'),
            (lambda *a, **k: 1 / 0, 'your code raised ZeroDivisionError')]

def test_checks_never_crash_on_nonsense():
    for check in (check_causal_mask, check_mask_scores, check_masked_softmax, check_masked_softmax_lens):
        for fn, pat in NONSENSE:
            try: check(fn)
            except CheckError as e: assert re.search(pat, str(e)), (check.__name__, pat, str(e))
            else: raise AssertionError(f"{check.__name__} accepted nonsense matching {pat!r}")


# --- issue 31: more mistakes learners make, with the hint of their real cause, and valid answers in other styles ------

def cm_additive(t, device=None): return torch.full((t, t), float('-inf'), device=device).triu(1)   # nn.Transformer's
def ms_times_mask(s, m): return s * m
def ms_transposed(s, m): return s.masked_fill(~m.transpose(-1, -2), neg_fill(s.dtype))
def msl_bad_broadcast(s, lens=None):                       # the (b, t_k) mask given one dim, whatever the scores' dims
    if lens is None: return F.softmax(s, -1)
    m = torch.arange(s.size(-1), device=s.device) < lens[..., None]
    if lens.dim() == 1: m = m[:, None, :]
    return masked_softmax(s, m)

def test_new_wrongs():
    assert_check(check_causal_mask, causal_mask, [(cm_additive, 'additive mask')])
    assert_check(check_mask_scores, mask_scores, [(ms_times_mask, 'multiplied the scores by the mask'),
                                                  (ms_transposed, 'mask transposed')])
    assert_check(check_masked_softmax_lens, masked_softmax_lens, [(msl_bad_broadcast, r'does not line up.*\[:, None, None, :\]')])

VALID_CAUSAL = [lambda t, device=None: torch.ones(t, t).tril().bool().to(device),                       # made, then moved
                lambda t, device=None: ~torch.ones(t, t, dtype=torch.bool, device=device).triu(1),
                lambda t, device=None: torch.arange(t, device=device)[:, None] >= torch.arange(t, device=device),
                lambda t, device=None: torch.tril(torch.ones(t, t, device=device)) == 1]
VALID_FILL = [lambda s, m: s.masked_fill(m.logical_not(), torch.finfo(s.dtype).min),
              lambda s, m: s.where(m, neg_fill(s.dtype)),
              lambda s, m: torch.where(m, s, torch.full_like(s, neg_fill(s.dtype))),
              lambda s, m: torch.where(m.expand_as(s), s, s.new_tensor(torch.finfo(s.dtype).min))]
def msm_logspace(s, m=None):                               # log-space: log-sum-exp over the allowed keys only
    if m is None: return s.softmax(-1)
    f = s.masked_fill(~m, neg_fill(s.dtype))
    return (f - f.logsumexp(-1, keepdim=True)).exp() * m
def msm_renormalise(s, m=None):                            # exp of the max-shifted scores times the mask, renormalised
    if m is None: return F.softmax(s, -1)
    mx = s.masked_fill(~m, neg_fill(s.dtype)).amax(-1, keepdim=True)
    mx = torch.where(m.any(-1, keepdim=True), mx, torch.zeros_like(mx))   # a row with no key: shift by 0, not by -max
    z = torch.exp(s - mx) * m
    return z / z.sum(-1, keepdim=True).clamp_min(torch.finfo(s.dtype).tiny)
def msm_upcast(s, m=None):                                 # computed in float32 (float64 kept), cast back
    dt = torch.promote_types(s.dtype, torch.float32)
    if m is None: return F.softmax(s.to(dt), -1).to(s.dtype)
    w = F.softmax(s.to(dt).masked_fill(~m, neg_fill(dt)), -1)
    return torch.where(m, w, torch.zeros_like(w)).to(s.dtype)
def msl_via_mask(s, lens=None):                            # the lengths turned into a mask shaped like the scores
    if lens is None: return F.softmax(s, -1)
    m = lengths_to_mask(lens, s.size(-1))                  # (b, t_k) or (b, t_q, t_k)
    m = m.view(m.size(0), *[1] * (s.dim() - m.dim()), *m.shape[1:]) if lens.dim() == 1 else m.view(m.size(0), *[1] * (s.dim() - 3), *m.shape[1:])
    return masked_softmax(s, m)
def msl_d2l(s, lens=None):                                 # d2l's repeat_interleave, with a finite fill and zeroed weights
    if lens is None: return F.softmax(s, -1)
    shape = s.shape
    if lens.dim() == 1: lens = lens.repeat_interleave(shape[-2] * (s[0].numel() // (shape[-2] * shape[-1])))
    else: lens = lens[:, None, :].expand(shape[0], s[0].numel() // (shape[-2] * shape[-1]), shape[-2]).reshape(-1)
    flat = s.reshape(-1, shape[-1])
    keep = torch.arange(shape[-1], device=s.device)[None, :] < lens[:, None]
    w = F.softmax(flat.masked_fill(~keep, neg_fill(s.dtype)), -1).masked_fill(~keep, 0.)
    return w.reshape(shape)
def msl_where(s, lens=None):                               # broadcasting by unsqueeze, torch.where
    if lens is None: return torch.softmax(s, -1)
    k = torch.arange(s.size(-1), device=s.device)
    L = lens if lens.dim() == 2 else lens[:, None]         # (b, 1) or (b, t_q)
    m = k < L.reshape(L.size(0), *[1] * (s.dim() - 3), L.size(1), 1)
    w = torch.softmax(torch.where(m, s, torch.full_like(s, neg_fill(s.dtype))), -1)
    return torch.where(m, w, torch.zeros_like(w))

def test_valid_styles_pass():
    for fn in VALID_CAUSAL: assert_check(check_causal_mask, fn)
    for fn in VALID_FILL: assert_check(check_mask_scores, fn)
    for fn in (msm_logspace, msm_renormalise, msm_upcast): assert_check(check_masked_softmax, fn)
    for fn in (msl_via_mask, msl_d2l, msl_where): assert_check(check_masked_softmax_lens, fn)


# --- issue 31: tensors made on the CPU are caught on a CPU-only machine (on_device watches meta meeting CPU) ------------
def msm_zeros_cpu(s, m=None):                              # the output buffer made on the CPU
    if m is None: return F.softmax(s, -1)
    w = F.softmax(mask_scores(s, m), -1)
    return torch.where(m, w, torch.zeros(w.shape, dtype=w.dtype))
def msl_arange_cpu(s, lens=None):                          # the key positions made on the CPU
    if lens is None: return F.softmax(s, -1)
    k = torch.arange(s.size(-1))
    m = k < (lens[:, None] if lens.dim() == 1 else lens[..., None])
    m = m.view(m.size(0), *[1] * (s.dim() - m.dim()), *m.shape[1:]) if lens.dim() == 1 else m.view(m.size(0), *[1] * (s.dim() - 3), *m.shape[1:])
    return masked_softmax(s, m)
def ms_fill_tensor_cpu(s, m): return torch.where(m, s, torch.full((1,), neg_fill(s.dtype), dtype=s.dtype))

def test_cpu_made_tensors_are_caught():
    assert_check(check_masked_softmax, masked_softmax, [(msm_zeros_cpu, DEVICE)])
    assert_check(check_masked_softmax_lens, masked_softmax_lens, [(msl_arange_cpu, DEVICE)])
    assert_check(check_mask_scores, mask_scores, [(ms_fill_tensor_cpu, DEVICE)])

def msm_renorm_tiny(s, m=None):                            # masks after the softmax and renormalises with a 1e-12 floor
    p = F.softmax(s, -1)
    if m is None: return p
    p = p * m
    return p / p.sum(-1, keepdim=True).clamp_min(1e-12)
def msl_right_aligned(s, lens=None):                       # keeps the last valid_len keys
    if lens is None: return F.softmax(s, -1)
    tk = s.size(-1)
    L = lens[:, None] if lens.dim() == 1 else lens[..., None]
    m = torch.arange(tk, device=s.device) >= tk - L
    m = m.view(m.size(0), *[1] * (s.dim() - m.dim()), *m.shape[1:]) if lens.dim() == 1 else m.view(m.size(0), *[1] * (s.dim() - 3), *m.shape[1:])
    return masked_softmax(s, m)

def test_new_wrongs_round_two():
    assert_check(check_masked_softmax, masked_softmax, [(msm_renorm_tiny, r'1e-12 floor becomes 0|masked after the softmax')])
    assert_check(check_masked_softmax_lens, masked_softmax_lens, [(msl_right_aligned, 'last valid_len keys')])
    assert_check(check_masked_softmax, lambda s, m=None: F.softmax(s, -1) if m is None else           # -inf fill repaired: valid
                 torch.nan_to_num(F.softmax(s.masked_fill(~m, float('-inf')), -1)))

def cm_eye_cpu(t, device=None): return torch.ones(t, t, dtype=torch.bool, device=device).tril(-1) | torch.eye(t, dtype=torch.bool)
def msm_half(s, m=None):                                   # computed in fp16, cast back
    if m is None: return F.softmax(s, -1)
    return F.softmax(s.half().masked_fill(~m, neg_fill(torch.float16)), -1).masked_fill(~m, 0).to(s.dtype)

def test_new_wrongs_round_three():
    assert_check(check_causal_mask, causal_mask, [(cm_eye_cpu, r'not made on `device`.*torch.eye')])
    assert_check(check_masked_softmax, masked_softmax, [(msm_half, 'lower precision')])

# issue 31, second audit: a float32 constant in half precision, lengths of one shape only
def ms_f32_min(s, m): return s.masked_fill(~m, torch.finfo(torch.float32).min)     # overflows fp16, -inf in bf16
def ms_f32_min_where(s, m): return torch.where(m, s, torch.tensor(torch.finfo(torch.float32).min, dtype=s.dtype))
def ms_minus_1e30(s, m): return s.masked_fill(~m, -1e30)

def test_float32_constant_in_half_precision_is_named():
    assert_check(check_mask_scores, mask_scores, [
        (ms_f32_min, r'constant chosen for float32.*torch.finfo\(torch.float32\).min'),
        (ms_f32_min_where, r'float32'), (ms_minus_1e30, r'constant chosen for float32|does not fit')])

def msl_1d_only(s, vl=None):                              # (b,) lengths only: vl[:, None] against the keys
    if vl is None: return F.softmax(s, -1)
    m = torch.arange(s.size(-1), device=s.device)[None, :] < vl[:, None]
    return masked_softmax(s, m[:, None, :] if s.dim() == 3 else m[:, None, None, :])
def msl_1d_only_view(s, vl=None):                         # (b,) lengths only, written with view(-1, 1)
    if vl is None: return F.softmax(s, -1)
    m = torch.arange(s.size(-1), device=s.device).view(1, -1) < vl.view(-1, 1)
    return masked_softmax(s, m.view(m.size(0), *[1] * (s.dim() - 2), -1))
def msl_2d_no_heads(s, vl=None):                          # (b, t_q) lengths handled, but no head dim for 4-D scores
    if vl is None: return F.softmax(s, -1)
    m = lengths_to_mask(vl, s.size(-1))
    if vl.dim() == 1: m = m.view(m.size(0), *[1] * (s.dim() - 2), -1)
    return masked_softmax(s, m)

def test_lengths_shapes_are_named():
    assert_check(check_masked_softmax_lens, masked_softmax_lens, [
        (msl_1d_only, r'one length per query.*\(b,\) lengths only'),
        (msl_1d_only_view, r'one length per query.*taken as \(b,\) ones'),
        (msl_2d_no_heads, r'does not line up.*mask\[:, None\] from \(b, t_q\)')])

def msl_where_both(s, vl=None):                           # one torch.where for both shapes of lengths
    if vl is None: return F.softmax(s, -1)
    lim = vl[..., None] if vl.dim() == 2 else vl.view(-1, 1)[:, None]   # (b, t_q, 1) or (b, 1, 1)
    m = torch.arange(s.size(-1), device=s.device) < lim
    if s.dim() == 4: m = m[:, None]
    return masked_softmax(s, m)

def test_lengths_valid_style():
    assert_check(check_masked_softmax_lens, msl_where_both)


# third audit: filled scores that carry no gradient; CPU-made positions for (b,) lengths and for 4-D scores
def ms_detached(s, m): return s.detach().masked_fill(~m, neg_fill(s.dtype))
def ms_no_grad(s, m):
    with torch.no_grad(): return s.masked_fill(~m, neg_fill(s.dtype))

def _lens_mask_cpu(s, lens, cpu):
    j = torch.arange(s.size(-1), device=None if cpu else s.device)       # positions of the keys
    if lens.dim() == 1: return j < lens.view(-1, *[1] * (s.dim() - 1))
    return (j < lens[..., None]).view(lens.size(0), *[1] * (s.dim() - 3), lens.size(1), s.size(-1))
def msl_cpu_1d(s, valid_lens=None):                      # the (b,) path makes its positions on the CPU
    if valid_lens is None: return F.softmax(s, -1)
    return masked_softmax(s, _lens_mask_cpu(s, valid_lens, cpu=valid_lens.dim() == 1))
def msl_cpu_4d(s, valid_lens=None):                      # the 4-D path makes its positions on the CPU
    if valid_lens is None: return F.softmax(s, -1)
    return masked_softmax(s, _lens_mask_cpu(s, valid_lens, cpu=s.dim() == 4))

def test_audit3_grad_and_device():
    assert_check(check_mask_scores, mask_scores, [(ms_detached, r'cut off from autograd'), (ms_no_grad, r'cut off from autograd')])
    assert_check(check_masked_softmax_lens, masked_softmax_lens, [(msl_cpu_1d, r'made on the CPU'), (msl_cpu_4d, r'made on the CPU')])
    assert_check(check_masked_softmax_lens, lambda s, valid_lens=None: F.softmax(s, -1) if valid_lens is None
                 else masked_softmax(s, _lens_mask_cpu(s, valid_lens, cpu=False)))

def msl_queries_aligned(s, valid_lens=None):             # a (b, t_k) mask without a dim for the queries: with b == t_q it
    if valid_lens is None or valid_lens.dim() == 2 or s.dim() == 4: return masked_softmax_lens(s, valid_lens)   # broadcasts
    return masked_softmax(s, torch.arange(s.size(-1), device=s.device) < valid_lens[:, None])              # silently

def test_audit3_mask_lined_up_with_queries():
    assert_check(check_masked_softmax_lens, masked_softmax_lens, [(msl_queries_aligned, r'query q of every sequence got valid_lens\[q\]')])
