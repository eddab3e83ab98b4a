"Lesson 20's checks accept the solutions and reject the stub and each typical mistake with its own hint."
import pytest, torch, torch.nn.functional as F
from transformers_scratch.checks.toolkit import assert_check
from transformers_scratch.generate import sample, top_k_filter, top_p_filter
from transformers_scratch.checks.generate import check_sample, check_top_k, check_top_p
from conftest import stub

NEG = float('-inf')

pytestmark = pytest.mark.usefixtures('one_thread')

def s_times(z, T): return torch.multinomial(F.softmax(z * T, -1), 1).squeeze(-1)
def s_logits(z, T): return torch.multinomial(z / T, 1).squeeze(-1)              # raises on negative logits
def s_logits_pos(z, T): return torch.multinomial(z.clamp(min=1e-9), 1).squeeze(-1)   # never raises: caught by frequencies
def s_no_T(z, T): return torch.multinomial(F.softmax(z, -1), 1).squeeze(-1)
def s_dim0(z, T): return torch.multinomial(F.softmax(z / T, 0), 1).squeeze(-1)
def s_argmax(z, T): return (z / T).argmax(-1)
def s_b1(z, T): return torch.multinomial(F.softmax(z / T, -1), 1)
def s_float(z, T): return torch.multinomial(F.softmax(z / T, -1), 1).squeeze(-1).float()
def s_log_softmax(z, T): return torch.multinomial(F.log_softmax(z / T, -1).exp() ** 2, 1).squeeze(-1)

def test_sample():
    assert_check(check_sample, sample, [
        (stub, 'not solved'), (s_times, 'multiplied the logits by the temperature'),
        (s_logits, 'sampled from the logits'), (s_logits_pos, 'sampled from the logits'),
        (s_no_T, 'temperature has no effect'), (s_dim0, r'dim=-1'), (s_argmax, 'most likely token'),
        (s_b1, r'\(b, 1\)'), (s_float, 'integers'), (s_log_softmax, 'do not follow|applied twice')])

def k_smallest(z, k): return z.masked_fill(z > torch.topk(z, k, largest=False).values[..., -1:], NEG)
def k_plus_one(z, k): return z.masked_fill(z < torch.topk(z, min(k + 1, z.size(-1))).values[..., -1:], NEG)
def k_minus_one(z, k): return z.masked_fill(z <= torch.topk(z, k).values[..., -1:], NEG)
def k_zero(z, k): return z.masked_fill(z < torch.topk(z, min(k, z.size(-1))).values[..., -1:], 0.)
def k_global(z, k):
    kth = torch.topk(z.flatten(), min(k, z.size(-1))).values[-1]
    return z.masked_fill(z < kth, NEG)
def k_changed(z, k): return F.log_softmax(top_k_filter(z, k), -1)
def k_no_clamp(z, k): return z.masked_fill(z < torch.topk(z, k).values[..., -1:], NEG)   # fails for k > v
def k_finfo(z, k): return z.masked_fill(z < torch.topk(z, min(k, z.size(-1))).values[..., -1:], torch.finfo(z.dtype).min)

def test_top_k():
    assert_check(check_top_k, top_k_filter, [
        (stub, 'not solved'), (k_smallest, 'k smallest'), (k_plus_one, 'off by one'), (k_minus_one, 'off by one'),
        (k_zero, 'are 0'), (k_global, 'of each row'), (k_changed, 'kept logits changed'), (lambda z, k: F.softmax(top_k_filter(z, k), -1), 'returned probabilities'), (k_no_clamp, r'min\(k, v\)')])
    assert_check(check_top_k, k_finfo)          # the most negative finite float is as good as -inf

def _sorted_parts(z):
    srt, idx = z.sort(-1, descending=True)
    return srt, idx, F.softmax(srt, -1)

def p_crossing(z, p):                            # the classic: drops the token that takes the total past p
    srt, idx, pr = _sorted_parts(z)
    drop = pr.cumsum(-1) > p
    return z.masked_fill(torch.zeros_like(drop).scatter(-1, idx, drop), NEG)
def p_unsorted_mask(z, p):                       # mask computed in sorted order, applied to unsorted logits
    srt, idx, pr = _sorted_parts(z)
    return z.masked_fill(pr.cumsum(-1) - pr >= p, NEG)
def p_ascending(z, p):
    srt, idx = z.sort(-1)
    pr = F.softmax(srt, -1)
    drop = pr.cumsum(-1) - pr >= p
    return z.masked_fill(torch.zeros_like(drop).scatter(-1, idx, drop), NEG)
def p_zero(z, p):
    srt, idx, pr = _sorted_parts(z)
    drop = pr.cumsum(-1) - pr >= p
    return z.masked_fill(torch.zeros_like(drop).scatter(-1, idx, drop), 0.)
def p_logit_cumsum(z, p):                        # sums logits instead of probabilities
    srt, idx = z.sort(-1, descending=True)
    drop = srt.cumsum(-1) - srt >= p
    return z.masked_fill(torch.zeros_like(drop).scatter(-1, idx, drop), NEG)
def p_probs_out(z, p): return F.softmax(top_p_filter(z, p), -1)

def test_top_p():
    assert_check(check_top_p, top_p_filter, [
        (stub, 'not solved'), (p_crossing, 'off by one'), (p_unsorted_mask, 'sorted order'),
        (p_ascending, 'least probable'), (p_zero, 'are 0'), (p_logit_cumsum, 'wrong tokens were kept|adds up the logits'),
        (p_probs_out, 'returned probabilities')])


# --- new wrong answers (issue 11): one row for all, shared randomness, in place, dtype, sizes, batch of one, 3-D ------
def _p(z, T): return F.softmax(z / T, -1)
def s_row0(z, T=1.0): return torch.multinomial(_p(z[0], T), z.size(0), replacement=True)       # row 0 for every row
def s_inplace(z, T=1.0):
    z /= T                                                   # divides the caller's logits
    return torch.multinomial(F.softmax(z, -1), 1).squeeze(-1)
def s_shared_u(z, T=1.0):                                    # inverse CDF with one uniform number for the whole batch
    u = torch.rand(())
    return (_p(z, T).cumsum(-1) < u).sum(-1).clamp(max=z.size(-1) - 1)
def s_int32(z, T=1.0): return torch.multinomial(_p(z, T), 1).squeeze(-1).int()
def s_squeeze(z, T=1.0): return torch.multinomial(_p(z, T), 1).squeeze()
def s_twice(z, T=1.0): return torch.multinomial(_p(z / T, T), 1).squeeze(-1)
def s_sorted(z, T=1.0): return torch.multinomial(_p(z, T).sort(-1, descending=True).values, 1).squeeze(-1)
def s_vocab_5(z, T=1.0): return torch.multinomial(_p(z[:, :5], T), 1).squeeze(-1)
def s_range2(z, T=1.0): return torch.stack([torch.multinomial(_p(z[i], T), 1) for i in range(2)]).squeeze(-1)
def s_default_07(z, T=0.7): return torch.multinomial(_p(z, T), 1).squeeze(-1)
def s_gumbel(z, T=1.0, generator=None):                     # right: the Gumbel-max trick
    u = torch.rand(z.shape, generator=generator, device=z.device)
    return (z / T - torch.log(-torch.log(u))).argmax(-1)
def s_inverse_cdf(z, T=1.0, generator=None):                # right: one uniform number per row
    u = torch.rand(z.shape[:-1] + (1,), device=z.device, generator=generator)
    return (_p(z.float(), T).cumsum(-1) < u).sum(-1).clamp(max=z.size(-1) - 1)

def s_inverse_cdf_cpu(z, T=1.0, generator=None):            # the uniform numbers are drawn on the CPU
    u = torch.rand(z.shape[:-1] + (1,), generator=generator)
    return (_p(z.float(), T).cumsum(-1) < u).sum(-1).clamp(max=z.size(-1) - 1)

def test_sample_device():   # issue 16: run on `meta` (or the GPU), new tensors must follow the logits
    assert_check(check_sample, sample, [(s_inverse_cdf_cpu, "stay on the inputs' device")])

def test_sample_issue11():
    assert_check(check_sample, sample, [
        (s_row0, "first row's distribution"), (s_inplace, 'in place'), (s_shared_u, 'independently'), (s_int32, 'LongTensor'),
        (s_squeeze, 'squeeze'), (s_twice, 'applied twice'), (s_sorted, 'sorted order'), (s_vocab_5, 'hard-coded'),
        (s_range2, 'shape'), (s_default_07, 'default temperature')])
    assert_check(check_sample, s_gumbel)
    assert_check(check_sample, s_inverse_cdf)


def _kth(z, k): return torch.topk(z, min(k, z.size(-1))).values[..., -1:]
def k_inplace(z, k): return z.masked_fill_(z < _kth(z, k), NEG)
def k_index_assign(z, k):
    z[z < _kth(z, k)] = NEG
    return z
def k_fixed_3(z, k): return z.masked_fill(z < _kth(z, 3), NEG)                               # ignores k
def k_2d_only(z, k): return z.masked_fill(z < torch.topk(z, min(k, z.size(-1))).values[:, -1:], NEG)
def k_vocab_10(z, k): return z.masked_fill(z < torch.topk(z, min(k, 10)).values[..., -1:], NEG)
def k_float32_out(z, k):
    out = torch.full(z.shape, NEG)                           # float32 whatever the logits
    keep = z >= _kth(z, k)
    out[keep] = z[keep].float()
    return out
def k_minus_1e9(z, k): return z.masked_fill(z < _kth(z, k), -1e9)
def k_finfo32(z, k): return z.masked_fill(z < _kth(z, k), torch.finfo(torch.float32).min)    # overflows in bfloat16
def k_squeeze(z, k): return top_k_filter(z, k).squeeze()
def k_sort_kth(z, k):                                        # the (k+1)-th largest as the threshold: breaks when k >= v
    return z.masked_fill(z <= z.sort(-1, descending=True).values[..., k:k + 1], NEG)

def k_dim0(z, k): return z.masked_fill(z < torch.topk(z, min(k, z.size(0)), dim=0).values[-1:], NEG)   # down the batch
def k_mask_times_inf(z, k): return z + (z < _kth(z, k)) * NEG                              # 0 * -inf is NaN

def test_top_k_issue11():
    assert_check(check_top_k, top_k_filter, [
        (k_inplace, 'in place'), (k_index_assign, 'in place'), (k_fixed_3, 'hard-coded'), (k_2d_only, '3-D'),
        (k_vocab_10, 'hard-coded'), (k_float32_out, 'dtype'), (k_minus_1e9, 'not a finite'), (k_finfo32, 'bfloat16'),
        (k_squeeze, 'squeeze'), (k_sort_kth, r'min\(k, v\)'), (k_dim0, 'down the batch'),
        (k_mask_times_inf, 'NaN')])


def _nucleus(z, p, dim=-1, fill=NEG):
    srt, idx = z.sort(-1, descending=True)
    pr = F.softmax(srt, -1)
    drop = pr.cumsum(-1) - pr >= p
    return torch.zeros_like(drop).scatter(dim, idx, drop)
def p_inplace(z, p): return z.masked_fill_(_nucleus(z, p), NEG)
def p_fixed_09(z, p): return z.masked_fill(_nucleus(z, 0.9), NEG)                       # ignores p
def p_scatter_dim1(z, p): return z.masked_fill(_nucleus(z, p, dim=1), NEG)              # right for 2-D only
def p_float32_out(z, p): return z.float().masked_fill(_nucleus(z.float(), p), NEG)
def p_finfo32(z, p): return z.masked_fill(_nucleus(z, p), torch.finfo(torch.float32).min)
def p_squeeze(z, p): return top_p_filter(z, p).squeeze()
def p_fixed_shape(z, p):                                     # a mask of 3 rows of 5
    srt, idx = z.sort(-1, descending=True)
    pr = F.softmax(srt, -1)
    return z.masked_fill(torch.zeros(3, 5, dtype=torch.bool).scatter(-1, idx, pr.cumsum(-1) - pr >= p), NEG)
def p_ge(z, p):                                              # drops the token that reaches p exactly: the crossing one
    srt, idx = z.sort(-1, descending=True)
    drop = F.softmax(srt, -1).cumsum(-1) >= p
    return z.masked_fill(torch.zeros_like(drop).scatter(-1, idx, drop), NEG)
def p_dim0(z, p):                                            # softmax over the batch
    srt, idx = z.sort(-1, descending=True)
    pr = F.softmax(srt, 0)
    drop = pr.cumsum(-1) - pr >= p
    return z.masked_fill(torch.zeros_like(drop).scatter(-1, idx, drop), NEG)

def test_top_p_issue11():
    assert_check(check_top_p, top_p_filter, [
        (p_inplace, 'in place'), (p_fixed_09, 'p=0.9'), (p_scatter_dim1, '3-D'), (p_float32_out, 'dtype'),
        (p_finfo32, 'bfloat16'), (p_squeeze, 'squeeze'), (p_fixed_shape, 'batch of one|raised'), (p_ge, 'off by one'),
        (p_dim0, 'wrong tokens')])


# --- issue 23: the lesson samples with the learner's `sample` (one row at a time, with a generator), so the exercise
# covers (..., v) logits and a generator ---------------------------------------------------------------------------
def s_no_generator(z, T=1.0): return torch.multinomial(_p(z.reshape(-1, z.size(-1)), T), 1).view(z.shape[:-1])
def s_ignores_generator(z, T=1.0, generator=None): return s_no_generator(z, T)
def s_2d_only(z, T=1.0, generator=None): return torch.multinomial(_p(z, T), 1, generator=generator).squeeze(-1)   # right on 1-D too
def s_dim1(z, T=1.0, generator=None):                       # softmax over dim 1: the vocabulary only for 2-D logits
    pr = F.softmax(z / T, 1)
    return torch.multinomial(pr.reshape(-1, z.size(-1)), 1, generator=generator).view(z.shape[:-1])
def s_dim1_any(z, T=1.0, generator=None):                   # dim=1, patched for one row: wrong on 3-D only
    pr = F.softmax(z / T, min(1, z.dim() - 1))
    return torch.multinomial(pr.reshape(-1, z.size(-1)), 1, generator=generator).view(z.shape[:-1])
def s_one_row_1(z, T=1.0, generator=None):                  # (1,) for one row (v,)
    return torch.multinomial(_p(z.reshape(-1, z.size(-1)), T), 1, generator=generator).view(-1) if z.dim() == 1 else sample(z, T, generator)

def test_sample_rows_and_generator():
    assert_check(check_sample, sample, [
        (s_no_generator, 'third argument, generator'), (s_ignores_generator, 'does not use `generator`'),
        (s_2d_only, '3-D'), (s_dim1, r'one row of logits \(7,\)'), (s_dim1_any, r'3-D.*dim=-1'), (s_one_row_1, r'shape \(\), not \(1,\)')])
    assert_check(check_sample, s_gumbel)


def k_1d_fails(z, k):                                       # indexes a batch dim: no good for one row of logits
    return z.masked_fill(z < torch.topk(z, min(k, z.size(-1))).values[..., -1:], NEG) if z.dim() > 1 else z[:, 0]
def p_1d_fails(z, p): return top_p_filter(z, p) if z.dim() > 1 else z.unsqueeze(0)

def test_filters_one_row():
    "generate filters the logits of one position, (v,): the checks try one row"
    assert_check(check_top_k, top_k_filter, [(k_1d_fails, r'one row of logits \(9,\)')])
    assert_check(check_top_p, top_p_filter, [(p_1d_fails, r'shape \(8,\)')])


# --- issue 31: more valid styles, and mistakes from nanoGPT/Hugging Face habits ---------------------------------------
def s_exp_race(z, T=1.0, generator=None):                   # valid: the exponential race, argmin E / p
    p = _p(z.float(), T)
    e = torch.empty_like(p).exponential_(generator=generator)
    return (e / p).argmin(-1)
def s_log_space(z, T=1.0, generator=None):                  # valid: log-probabilities over T, renormalised by the draw
    lp = F.log_softmax(z.float(), -1) / T
    return torch.multinomial(lp.exp().reshape(-1, z.size(-1)), 1, generator=generator).view(z.shape[:-1])
def s_searchsorted(z, T=1.0, generator=None):               # valid: inverse CDF with searchsorted
    c = _p(z.float(), T).cumsum(-1)
    u = torch.rand(z.shape[:-1] + (1,), generator=generator, device=z.device) * c[..., -1:]
    return torch.searchsorted(c.contiguous(), u).squeeze(-1).clamp(max=z.size(-1) - 1)

def test_sample_valid_styles():
    for ok in (s_gumbel, s_inverse_cdf, s_exp_race, s_log_space, s_searchsorted): assert_check(check_sample, ok)

def s_probs_over_T(z, T=1.0, generator=None):              # the temperature divides the probabilities: no effect
    return torch.multinomial((F.softmax(z, -1) / T).reshape(-1, z.size(-1)), 1, generator=generator).view(z.shape[:-1])
def s_argmax_noise(z, T=1.0, generator=None):               # argmax of probabilities times uniform noise: not a draw from p
    p = _p(z, T)
    return (p * torch.rand(p.shape, generator=generator, device=z.device)).argmax(-1)
def s_cpu_gumbel(z, T=1.0, generator=None):                 # Gumbel noise made on the CPU
    return (z / T - torch.log(-torch.log(torch.rand(z.shape, generator=generator)))).argmax(-1)

def test_sample_issue31():
    assert_check(check_sample, sample, [
        (s_probs_over_T, 'temperature has no effect'), (s_argmax_noise, 'do not follow|most likely'), (s_cpu_gumbel, 'device')])


def k_sort(z, k):                                           # valid: the k-th value of the sorted row
    kth = z.sort(-1, descending=True).values[..., min(k, z.size(-1)) - 1:min(k, z.size(-1))]
    return torch.where(z >= kth, z, torch.full_like(z, NEG))
def k_scatter(z, k):                                        # valid: the top-k values scattered into a row of -inf
    vals, idx = torch.topk(z, min(k, z.size(-1)), dim=-1)
    return torch.full_like(z, NEG).scatter(-1, idx, vals)
def k_clone_assign(z, k):                                   # valid: on a copy
    out = z.clone()
    out[out < _kth(z, k)] = NEG
    return out

def test_top_k_valid_styles():
    for ok in (top_k_filter, k_finfo, k_sort, k_scatter, k_clone_assign): assert_check(check_top_k, ok)

def k_no_keepdim(z, k): return z.masked_fill(z < torch.topk(z, min(k, z.size(-1))).values[..., -1], NEG)   # (..., ) does not broadcast
def k_global_min(z, k): return z.masked_fill(z < torch.topk(z, min(k, z.size(-1))).values.min(), NEG)      # one threshold for all rows
def k_ge_threshold(z, k): return z.masked_fill(z >= _kth(z, k), NEG)                                       # the mask inverted

def test_top_k_issue31():
    assert_check(check_top_k, top_k_filter, [
        (k_no_keepdim, r'keep.*last dim|\.\.\., -1:'), (k_global_min, 'each row|whole batch'), (k_ge_threshold, 'smallest|inverted')])


def p_hf(z, p):                                             # valid: Hugging Face's shift right of cumsum > p
    srt, idx = z.sort(-1, descending=True)
    remove = F.softmax(srt, -1).cumsum(-1) > p
    remove = torch.cat([torch.zeros_like(remove[..., :1]), remove[..., :-1]], -1)
    return z.masked_fill(remove.scatter(-1, idx, remove), NEG)
def p_hf_ascending(z, p):                                   # valid: Hugging Face's ascending sort, cumsum <= 1 - p
    srt, idx = z.sort(-1)
    remove = F.softmax(srt.float(), -1).cumsum(-1) <= 1 - p
    remove[..., -1:] = False
    return z.masked_fill(remove.scatter(-1, idx, remove), NEG)
def p_argsort(z, p):                                        # valid: the mask gathered back with the inverse permutation
    srt, idx = z.sort(-1, descending=True)
    pr = F.softmax(srt, -1)
    keep = pr.cumsum(-1) - pr < p
    return torch.where(keep.gather(-1, idx.argsort(-1)), z, torch.full_like(z, NEG))

def test_top_p_valid_styles():
    for ok in (p_hf, p_hf_ascending, p_argsort): assert_check(check_top_p, ok)

def p_unsorted_cumsum(z, p):                                # the running total in token order: never sorted
    pr = F.softmax(z, -1)
    return z.masked_fill(pr.cumsum(-1) - pr >= p, NEG)
def p_one_minus(z, p):                                      # the nucleus of 1 - p
    return top_p_filter(z, 1 - p) if p < 1 else top_p_filter(z, p)

def test_top_p_issue31():
    assert_check(check_top_p, top_p_filter, [
        (p_unsorted_cumsum, 'sort|sorted order'), (p_one_minus, 'wrong tokens|p=')])


def s_pow(z, T=1.0, generator=None):                        # valid: probabilities to the power 1/T, renormalised by the draw
    q = F.softmax(z.float(), -1) ** (1 / T)
    return torch.multinomial(q.reshape(-1, z.size(-1)), 1, generator=generator).view(z.shape[:-1])
def k_kthvalue(z, k):                                       # valid: the (v - k + 1)-th smallest
    v = z.size(-1)
    kth = torch.kthvalue(z.float(), max(v - k + 1, 1), dim=-1, keepdim=True).values.to(z.dtype)
    return z.masked_fill(z < kth, NEG)
def p_strict_keep(z, p):                                    # keeps while the running total stays below p: drops the crossing token
    srt, idx = z.sort(-1, descending=True)
    keep = F.softmax(srt, -1).cumsum(-1) < p
    return z.masked_fill(~keep.scatter(-1, idx, keep), NEG)

def test_fresh_batch():
    assert_check(check_sample, s_pow)
    assert_check(check_top_k, k_kthvalue)
    assert_check(check_top_p, top_p_filter, [(p_strict_keep, 'off by one')])


# issue 31, second audit: the tie rule of top-p, an ascending threshold in top-k, a hard-coded k
def p_gt(z, p):                                             # valid: drops a token when the mass before it is > p (keeps it at an exact tie)
    srt, idx = z.sort(-1, descending=True)
    pr = F.softmax(srt, -1)
    drop = pr.cumsum(-1) - pr > p
    return z.masked_fill(torch.zeros_like(drop).scatter(-1, idx, drop), NEG)
def p_searchsorted(z, p):                                   # valid: the crossing token found with searchsorted, >= p
    srt, idx = z.sort(-1, descending=True)
    c = F.softmax(srt.float(), -1).cumsum(-1).contiguous()
    n = torch.searchsorted(c, torch.full_like(c[..., :1], p)).clamp(max=z.size(-1) - 1)   # index of the first total >= p
    keep = torch.arange(z.size(-1), device=z.device) <= n
    return z.masked_fill(~torch.zeros_like(keep).scatter(-1, idx, keep), NEG)
def p_one_extra(z, p):                                      # keeps one token after the crossing one
    srt, idx = z.sort(-1, descending=True)
    pr = F.softmax(srt, -1)
    before = pr.cumsum(-1) - pr
    keep = torch.cat([torch.ones_like(before[..., :1], dtype=torch.bool), before[..., :-1] < p], -1)
    return z.masked_fill(~torch.zeros_like(keep).scatter(-1, idx, keep), NEG)
def p_tie_cases():                                          # exact ties: uniform rows, probabilities 1/4 and 1/8 exactly
    return [(torch.zeros(2, 4), 0.5, 2, 3), (torch.zeros(1, 8), 0.75, 6, 7), (torch.zeros(3, 4, dtype=torch.float64), 0.25, 1, 2)]

def test_top_p_tie_rule():
    for ok in (p_gt, p_searchsorted, top_p_filter): assert_check(check_top_p, ok)
    for z, p, n_ge, n_gt in p_tie_cases():                 # the lesson's rule (>= p) and the other one (> p) at an exact tie
        assert int((top_p_filter(z, p) > NEG).sum(-1)[0]) == n_ge
        assert int((p_gt(z, p) > NEG).sum(-1)[0]) == n_gt
    assert_check(check_top_p, top_p_filter, [(p_one_extra, 'one token more')])

def k_ascending(z, k): return z.masked_fill(z < z.sort(-1).values[..., k - 1:k], NEG)       # the k-th smallest as threshold
def k_fixed(z, k): return top_k_filter(z, 3)                                                # k hard-coded
def k_first_sorted(z, k): return z.masked_fill(z < z.sort(-1, descending=True).values[..., :1], NEG)   # [..., 0]: always one token

def test_top_k_causes():
    assert_check(check_top_k, top_k_filter, [(k_ascending, 'smallest'), (k_fixed, 'k hard-coded'), (k_first_sorted, 'wrong tokens|kept 1|k hard')])

def s_never_first(z, T=1.0, generator=None):                # id 0 can never come out: not a size, one id
    z = (z / T).clone()
    z[..., 0] = NEG
    return torch.multinomial(F.softmax(z, -1).reshape(-1, z.size(-1)), 1, generator=generator).view(z.shape[:-1])

def test_sample_missing_id_named():
    assert_check(check_sample, sample, [(s_never_first, r'id \[0\] never came out')])

def p_no_softmax(z, p):                                     # the running total of the logits themselves
    srt, idx = z.sort(-1, descending=True)
    drop = srt.cumsum(-1) - srt >= p
    return z.masked_fill(torch.zeros_like(drop).scatter(-1, idx, drop), NEG)
def p_gather_back(z, p):                                    # gather(-1, idx) to "unsort": the wrong permutation
    srt, idx = z.sort(-1, descending=True)
    pr = F.softmax(srt, -1)
    return z.masked_fill((pr.cumsum(-1) - pr >= p).gather(-1, idx), NEG)
def p_threshold(z, p): return z.masked_fill(F.softmax(z, -1) < p, NEG)     # each token's own probability against p

def test_top_p_more_causes():
    assert_check(check_top_p, top_p_filter, [(p_no_softmax, 'adds up the logits'), (p_gather_back, 'does not undo the sort'),
                                             (p_threshold, 'own probability')])


# audit of lessons 20-28: a generator of one's own (or the global RNG reseeded inside) gives the same ids whatever the seed
def s_own_generator(z, T=1.0, generator=None):              # ignores the generator given for one of its own, fixed seed
    g = torch.Generator(device=z.device).manual_seed(42)
    return torch.multinomial(F.softmax(z.float() / T, -1).reshape(-1, z.size(-1)), 1, generator=g).view(z.shape[:-1])
def s_reseeded(z, T=1.0, generator=None):                   # torch.manual_seed inside, the global RNG drawn
    torch.manual_seed(0)
    return torch.multinomial(F.softmax(z.float() / T, -1).reshape(-1, z.size(-1)), 1).view(z.shape[:-1])

def test_sample_follows_the_generator():
    assert_check(check_sample, sample, [(s_own_generator, 'different seeds gave the same ids'),
                                        (s_reseeded, 'different seeds gave the same ids')])

def tk_cpu_fill(z, k):            # masked_fill with a 0-dim CPU value: CUDA takes it (as a scalar), so the check's meta stand-in does too
    kth = torch.topk(z, min(k, z.size(-1)), dim=-1).values[..., -1:]
    return z.masked_fill(z < kth, torch.tensor(float('-inf')))
def tk_cpu_fill_kw(z, k):
    kth = torch.topk(z, min(k, z.size(-1)), dim=-1).values[..., -1:]
    return z.masked_fill(mask=z < kth, value=torch.tensor(float('-inf')))
def tk_cpu_mask(z, k):            # the mask itself on the CPU: fails on a GPU
    kth = torch.topk(z, min(k, z.size(-1)), dim=-1).values[..., -1:]
    return z.masked_fill((z < kth).cpu(), float('-inf'))

def test_top_k_check_takes_a_cpu_scalar_fill():
    "A 0-dim CPU fill value is fine on a GPU (torch's masked_fill moves it); only meta refused it, with a wrong device hint"
    for ok in (tk_cpu_fill, tk_cpu_fill_kw): assert_check(check_top_k, ok)
    assert_check(check_top_k, top_k_filter, [(tk_cpu_mask, "inputs' device")])
