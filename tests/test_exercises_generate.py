"Lesson 20's checks accept the solutions and reject the stub and each typical mistake with its own hint."
import torch, torch.nn.functional as F
from transformers_scratch.core import TODO, assert_check
from transformers_scratch.generate import check_sample, sample, check_top_k, top_k_filter, check_top_p, top_p_filter

def stub(*args): raise TODO("write it")
NEG = float('-inf')

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
        (s_b1, r'\(b, 1\)'), (s_float, 'integers'), (s_log_softmax, 'do not follow')])
    assert_check(check_sample, lambda z, T: torch.distributions.Categorical(logits=z / T).sample())  # any right way passes

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
        (k_zero, 'are 0'), (k_global, 'per row'), (k_changed, 'kept logits changed'), (lambda z, k: F.softmax(top_k_filter(z, k), -1), 'returned probabilities'), (k_no_clamp, 'raised RuntimeError')])
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
        (p_ascending, 'least probable'), (p_zero, 'are 0'), (p_logit_cumsum, 'wrong tokens were kept'),
        (p_probs_out, 'returned probabilities')])
