"Lesson 01's checks accept the solutions and reject the stub and each typical mistake with its own hint."
import math, re
import numpy as np
import torch, torch.nn.functional as F
import pytest
from transformers_scratch.checks.toolkit import CheckError, assert_check

pytestmark = pytest.mark.usefixtures('one_thread')   # tiny tensors: one thread is faster
from transformers_scratch.selfattention import raw_weights, row_softmax, basic_self_attention, einsum_self_attention
from transformers_scratch.checks.selfattention import check_raw_weights, check_row_softmax, check_basic_self_attention, check_einsum_self_attention
from conftest import stub


# Hints of the families every check shares (issue 11)
HARD = r'hard-coded'                       # a size that worked on one fixture fails on the next
RANGE = r'fixed range'                     # a loop over range(2) on a batch of one
SQUEEZE = r'batch dim of a batch of one is gone'
INPLACE = r'changed its input .* in place'
DTYPE = r"keep the inputs' dtype"
DEVICE = r"stay on the inputs' device|made on the CPU"
FIRST = r'first one|row 0'                 # the first sequence (or row) used for all


# --- raw_weights -----------------------------------------------------------------------------------------------
def rw_range2(x): return torch.stack([x[i] @ x[i].T for i in range(2)])
def rw_squeeze(x): return torch.bmm(x, x.transpose(1, 2)).squeeze()
def rw_reshape5(x): return (x @ x.transpose(1, 2)).reshape(-1, 5, 5)
def rw_float(x): return torch.bmm(x.float(), x.float().transpose(1, 2))
def rw_buffer(x):                                     # float32 buffer: wrong dtype for float64 input
    b, t, e = x.size()
    out = torch.zeros(b, t, t)
    for i in range(b): out[i] = x[i] @ x[i].T
    return out
def rw_buffer_cpu(x):                                 # right dtype, but the buffer lives on the CPU
    b, t, e = x.size()
    out = torch.zeros(b, t, t, dtype=x.dtype)
    for i in range(b): out[i] = x[i] @ x[i].T
    return out
def rw_out_cpu(x):                                    # preallocated `out=` on the CPU
    out = torch.empty(x.size(0), x.size(1), x.size(1), dtype=x.dtype)
    return torch.bmm(x, x.transpose(1, 2), out=out)
def rw_numpy(x): return torch.from_numpy(np.einsum('bie,bje->bij', x.numpy(), x.numpy()))
def rw_center(x):                                     # centres the caller's tensor in place
    x -= x.mean(-1, keepdim=True)
    return x @ x.transpose(1, 2)
def rw_row0(x): return (x[:1] @ x[:1].transpose(1, 2)).expand(x.size(0), -1, -1)
def rw_sqrt3(x): return x @ x.transpose(1, 2) / math.sqrt(3)
def rw_by_e(x): return x @ x.transpose(1, 2) / x.size(-1)

def test_raw_weights():
    assert_check(check_raw_weights, raw_weights, [
        (stub, 'not solved'),
        (lambda x: x.transpose(1, 2) @ x, r'xᵀx'),                                     # (b, e, e)
        (lambda x: x * x, r'shape \(1, 5, 5\)'),                                       # elementwise
        (lambda x: F.softmax(x @ x.transpose(1, 2), -1), 'softmax already'),
        (lambda x: x @ x.transpose(1, 2) / math.sqrt(x.size(-1)), 'no scaling'),
        (lambda x: x @ x.transpose(1, 2) + 1, 'values are wrong'),
        (lambda x: torch.bmm(x, x), 'raised RuntimeError'),                             # forgot the transpose
        # issue 11's families
        (rw_range2, RANGE), (rw_squeeze, SQUEEZE), (rw_reshape5, HARD), (rw_float, DTYPE), (rw_buffer, DTYPE),
        (rw_buffer_cpu, DEVICE), (rw_out_cpu, r'out= tensor'), (rw_numpy, r'raised TypeError.*BFloat16'), (rw_center, INPLACE), (rw_row0, FIRST),
        (rw_sqrt3, r'scaled by √e'), (rw_by_e, r'scaled by e'),
    ])
    assert_check(check_raw_weights, lambda x: torch.einsum('bie,bje->bij', x, x))     # any correct form passes
    assert_check(check_raw_weights, lambda x: torch.stack([x[i] @ x[i].T for i in range(len(x))]))


# --- row_softmax -----------------------------------------------------------------------------------------------
def sm_range2(w): return torch.stack([F.softmax(w[i], -1) for i in range(2)])
def sm_squeeze(w): return F.softmax(w, -1).squeeze()
def sm_view5(w): return F.softmax(w.view(-1, 5), -1).view(w.shape)
def sm_dtype(w): return F.softmax(w, -1, dtype=torch.float32)
def sm_float(w): return F.softmax(w.float(), -1)
def sm_inplace(w):                                    # stable, but on the caller's tensor
    w -= w.max(-1, keepdim=True).values
    w.exp_()
    return w / w.sum(-1, keepdim=True)
def sm_exp_(w): e = w.exp_(); return e / e.sum(-1, keepdim=True)
def sm_row0(w): return F.softmax(w[:, :1], -1).expand_as(w)
def sm_seq0(w): return F.softmax(w[:1], -1).expand_as(w)
def sm_buffer_cpu(w):
    out = torch.zeros(w.shape, dtype=w.dtype)
    for i in range(w.size(0)): out[i] = F.softmax(w[i], -1)
    return out
def sm_max_dim1(w):                                   # subtracts the column max: no longer a row softmax of w
    z = (w - w.max(1, keepdim=True).values).exp()
    return z / z.sum(-1, keepdim=True) * 0.5 + 0.5 * F.softmax(w, 1)

def test_row_softmax():
    def naive(w): return w.exp() / w.exp().sum(-1, keepdim=True)                       # right, but overflows
    assert_check(check_row_softmax, row_softmax, [
        (stub, 'not solved'),
        (lambda w: F.softmax(w, dim=1), r'columns sum to 1.*dim=2'),
        (lambda w: F.softmax(w, dim=0), 'batch'),
        (lambda w: w, 'apply the softmax'),
        (lambda w: w.exp(), 'divide exp'),
        (lambda w: w / w.sum(-1, keepdim=True), 'without exp'),
        (lambda w: F.log_softmax(w, -1), 'log_softmax'),
        (naive, "subtract each row's max"),
        (lambda w: F.softmax(w, -1)[..., :3], r'shape \(1, 5, 5\)'),
        # issue 11's families
        (sm_range2, RANGE), (sm_squeeze, SQUEEZE), (sm_view5, HARD), (sm_dtype, DTYPE), (sm_float, DTYPE),
        (sm_inplace, INPLACE), (sm_exp_, INPLACE), (sm_row0, FIRST), (sm_seq0, FIRST), (sm_buffer_cpu, DEVICE),
        (sm_max_dim1, 'values are wrong'),
    ])
    def stable(w):
        z = (w - w.max(-1, keepdim=True).values).exp()
        return z / z.sum(-1, keepdim=True)
    assert_check(check_row_softmax, stable)
    assert_check(check_row_softmax, lambda w: F.softmax(w, dim=2))                    # dim=2 is right for (b, t, t)


# --- basic and einsum self-attention ---------------------------------------------------------------------------
def bsa_dim1(x): return torch.bmm(F.softmax(torch.bmm(x, x.transpose(1, 2)), dim=1), x)
def bsa_transposed(x): return torch.bmm(F.softmax(torch.bmm(x, x.transpose(1, 2)), dim=-1).transpose(1, 2), x)
def bsa_nosoftmax(x): return torch.bmm(torch.bmm(x, x.transpose(1, 2)), x)
def bsa_scaled(x): return torch.bmm(F.softmax(torch.bmm(x, x.transpose(1, 2)) / math.sqrt(x.size(-1)), -1), x)
def bsa_scaled_e(x): return torch.bmm(F.softmax(torch.bmm(x, x.transpose(1, 2)) / x.size(-1), -1), x)
def bsa_weights(x): return F.softmax(torch.bmm(x, x.transpose(1, 2)), -1)
def bsa_sum(x): return torch.bmm(torch.ones(x.size(0), x.size(1), x.size(1)), x)
# issue 11's families
def bsa_range2(x): return torch.stack([F.softmax(x[i] @ x[i].T, -1) @ x[i] for i in range(2)])
def bsa_squeeze(x): return basic_self_attention(x).squeeze()
def bsa_view(x): return basic_self_attention(x).view(-1, 5, 3)
def bsa_float(x): return basic_self_attention(x.float())
def bsa_buffer(x):
    b, t, e = x.size()
    y = torch.zeros(b, t, e)
    for i in range(b): y[i] = F.softmax(x[i] @ x[i].T, -1) @ x[i]
    return y
def bsa_buffer_cpu(x):
    b, t, e = x.size()
    y = torch.zeros(b, t, e, dtype=x.dtype)
    for i in range(b): y[i] = F.softmax(x[i] @ x[i].T, -1) @ x[i]
    return y
def bsa_overwrite(x):                                 # "saves memory" by writing the output over the input
    x[:] = basic_self_attention(x)
    return x
def bsa_row0_weights(x): return F.softmax(torch.bmm(x[:1], x[:1].transpose(1, 2)), -1) @ x
def bsa_row0_values(x): return F.softmax(torch.bmm(x, x.transpose(1, 2)), -1) @ x[:1]
def bsa_sqrt3(x): return F.softmax(x @ x.transpose(1, 2) / math.sqrt(3), -1) @ x

BASIC_WRONGS = [(stub, 'not solved'), (bsa_dim1, r'sum to 1.*dim=-1'), (bsa_transposed, r'not wᵀ x'),
                (bsa_nosoftmax, 'forgot the softmax'), (bsa_scaled, r'scaled by √e'), (bsa_scaled_e, r'scaled by e'),
                (bsa_weights, 'those are the weights'), (bsa_sum, 'every weight is 1'),
                (bsa_range2, RANGE), (bsa_squeeze, SQUEEZE), (bsa_view, HARD), (bsa_float, DTYPE), (bsa_buffer, DTYPE),
                (bsa_buffer_cpu, DEVICE), (bsa_overwrite, INPLACE), (bsa_row0_weights, FIRST),
                (bsa_row0_values, FIRST), (bsa_sqrt3, r'scaled by √e')]

def test_basic_self_attention():
    assert_check(check_basic_self_attention, basic_self_attention, BASIC_WRONGS)
    assert_check(check_basic_self_attention, einsum_self_attention)

def ein_range2(x):
    return torch.stack([torch.einsum('ij,je->ie', F.softmax(torch.einsum('ie,je->ij', x[i], x[i]), -1), x[i])
                        for i in range(2)])
def ein_first(x):                                     # letters without a batch: only the first sequence
    w = F.softmax(torch.einsum('ie,je->ij', x[0], x[0]), -1)
    return torch.einsum('ij,je->ie', w, x[0])
def ein_float(x): return einsum_self_attention(x.float())
def ein_inplace(x):
    w = F.softmax(torch.einsum('bie,bje->bij', x, x), -1)
    x.copy_(torch.einsum('bij,bje->bie', w, x))
    return x

def test_einsum_self_attention():
    def ein_transposed(x):                     # a wrong letter: w[b, j, i] used for y_i
        w = F.softmax(torch.einsum('bie,bje->bij', x, x), -1)
        return torch.einsum('bji,bje->bie', w, x)
    ein_wrongs = [(f, h) for f, h in BASIC_WRONGS if f is not bsa_sum]
    assert_check(check_einsum_self_attention, einsum_self_attention,
                 ein_wrongs + [(ein_transposed, r'not wᵀ x'),
                               (basic_self_attention, 'about torch.einsum'),   # right values, no einsum
                               (ein_range2, RANGE), (ein_first, SQUEEZE), (ein_float, DTYPE), (ein_inplace, INPLACE)])


# --- every check gives its own verdict, whatever comes back (issue 23: a crash in a check's own code is the course's bug)
NONSENSE = [(lambda *a, **k: None, 'should be a tensor, got NoneType'), (lambda *a, **k: [1., 2.], 'should be a tensor, got list'),
            (lambda *a, **k: 3, 'should be a tensor, got int'), (lambda *a, **k: torch.zeros(1), r'should have shape'),
            (lambda x, *a, **k: torch.zeros_like(x, dtype=torch.long), r'shape|dtype'),
            (lambda x, *a, **k: torch.full_like(x, float('nan')), r'shape|values|NaN'),
            (lambda *a, **k: 1 / 0, 'your code raised ZeroDivisionError')]

def test_checks_never_crash_on_nonsense():
    for check in (check_raw_weights, check_row_softmax, check_basic_self_attention, check_einsum_self_attention):
        for fn, pat in NONSENSE:
            try: check(fn)
            except CheckError as e: assert re.search(pat, str(e)), (check.__name__, pat, str(e))
            else: raise AssertionError(f"{check.__name__} accepted nonsense matching {pat!r}")


# --- issue 31: more mistakes learners make, and valid answers in other styles -----------------------------------------
def rw_cosine(x): return F.normalize(x, dim=-1) @ F.normalize(x, dim=-1).transpose(1, 2)
def rw_distance(x): return -torch.cdist(x, x).pow(2)
def sm_whole(w): return torch.softmax(w.reshape(w.size(0), -1), -1).reshape(w.shape)
def sm_scaled(w): return F.softmax(w / math.sqrt(w.size(-1)), -1)
def sm_transposed(w): return F.softmax(w, -1).mT
def sm_global_max(w):                                      # subtracts the max of the whole batch: rows underflow to 0 / 0
    z = (w - w.max()).exp()
    return z / z.sum(-1, keepdim=True)
def bsa_batch_softmax(x): return F.softmax(x @ x.mT, 0) @ x
def bsa_softmax_after(x): return F.softmax((x @ x.mT) @ x, -1)
def bsa_twice(x): w = F.softmax(x @ x.mT, -1); return w @ w @ x

def test_new_wrongs():
    assert_check(check_raw_weights, raw_weights, [(rw_cosine, 'cosine'), (rw_distance, 'distance')])
    assert_check(check_row_softmax, row_softmax, [(sm_whole, 'whole'), (sm_scaled, 'scaled the scores'),
                                                  (sm_transposed, 'transposed'), (sm_global_max, "each row's max")])
    for check, sol in ((check_basic_self_attention, basic_self_attention), (check_einsum_self_attention, einsum_self_attention)):
        assert_check(check, sol, [(bsa_batch_softmax, r'over the batch|batch \(dim 0\)'), (bsa_softmax_after, 'softmax of the outputs'),
                                  (bsa_twice, 'twice')])

VALID_RAW = [lambda x: torch.einsum('bie,bje->bij', x, x),
             lambda x: torch.stack([x[i] @ x[i].T for i in range(len(x))]),
             lambda x: (x.unsqueeze(2) * x.unsqueeze(1)).sum(-1),                                         # broadcasting
             lambda x: torch.baddbmm(torch.zeros(x.size(0), x.size(1), x.size(1), dtype=x.dtype, device=x.device), x, x.mT),
             lambda x: torch.matmul(x.double(), x.double().transpose(-1, -2)).to(x.dtype)]               # upcast and back
VALID_SOFTMAX = [lambda w: (w - w.logsumexp(-1, keepdim=True)).exp(),                                     # log-space
                 lambda w: torch.softmax(w, dim=2),
                 lambda w: F.softmax(w.double(), -1).to(w.dtype),                                          # upcast and back
                 lambda w: torch.stack([torch.stack([F.softmax(r, 0) for r in m]) for m in w])]            # loops
def _sa_loop(x):
    out = torch.empty_like(x)
    for b in range(x.size(0)):
        for i in range(x.size(1)):
            w = F.softmax(x[b] @ x[b, i], 0)
            out[b, i] = (w[:, None] * x[b]).sum(0)
    return out
VALID_SA = [lambda x: F.scaled_dot_product_attention(x, x, x, scale=1.0),                                 # SDPA, no scaling
            lambda x: torch.bmm(torch.softmax(torch.baddbmm(torch.zeros_like(x @ x.mT), x, x.mT), -1), x),
            lambda x: (F.softmax(x.float() @ x.float().mT, -1) @ x.float()).to(x.dtype) if x.dtype != torch.float64 else F.softmax(x @ x.mT, -1) @ x,
            _sa_loop]
VALID_EINSUM = [lambda x: torch.einsum('btu,bue->bte', F.softmax(torch.einsum('bte,bue->btu', x, x), -1), x),  # other letters
                lambda x: torch.einsum('...ij,...jd->...id', torch.einsum('...id,...jd->...ij', x, x).softmax(-1), x),
                lambda x: torch.einsum('bij,bjk->bik', (lambda w: (w - w.logsumexp(-1, keepdim=True)).exp())(torch.einsum('bik,bjk->bij', x, x)), x)]

def test_valid_styles_pass():
    for fn in VALID_RAW: assert_check(check_raw_weights, fn)
    for fn in VALID_SOFTMAX: assert_check(check_row_softmax, fn)
    for fn in VALID_SA + VALID_EINSUM: assert_check(check_basic_self_attention, fn)
    for fn in VALID_EINSUM: assert_check(check_einsum_self_attention, fn)

def sm_temp2(w): return F.softmax(w / 2, -1)
def sm_temp_e(w): return F.softmax(w * math.e, -1)
def sm_sigmoid(w): return torch.sigmoid(w)
def bsa_residual(x): return F.softmax(x @ x.mT, -1) @ x + x
def bsa_log_softmax(x): return F.log_softmax(x @ x.mT, -1) @ x
def bsa_sqrt_t(x): return F.softmax(x @ x.mT / math.sqrt(x.size(1)), -1) @ x

def test_new_wrongs_round_two():
    assert_check(check_row_softmax, row_softmax, [(sm_temp2, r'scaled the scores by 0.5'), (sm_temp_e, r'scaled the scores by 2.71'),
                                                  (sm_sigmoid, 'sigmoid')])
    assert_check(check_basic_self_attention, basic_self_attention, [(bsa_residual, 'residual'), (bsa_log_softmax, 'log_softmax'),
                                                                    (bsa_sqrt_t, '√t, the sequence length')])

def rw_half(x): return (x.half() @ x.half().mT).to(x.dtype)
def sm_half(w): return F.softmax(w.half(), -1).to(w.dtype)
def bsa_bf16(x): return (F.softmax(x.bfloat16() @ x.bfloat16().mT, -1) @ x.bfloat16()).to(x.dtype)
def bsa_sdpa_default(x): return F.scaled_dot_product_attention(x, x, x)

def test_lower_precision_is_named():
    assert_check(check_raw_weights, raw_weights, [(rw_half, 'lower precision')])
    assert_check(check_row_softmax, row_softmax, [(sm_half, 'lower precision')])
    assert_check(check_basic_self_attention, basic_self_attention, [(bsa_bf16, 'lower precision'), (bsa_sdpa_default, 'scale=1.0')])

def rw_lists(x): return torch.tensor([[[float(a @ b) for b in s] for a in s] for s in x], dtype=x.dtype)   # Python numbers
def sm_no_grad(w):
    with torch.no_grad(): return F.softmax(w, -1)
def bsa_item_loop(x):                                      # weights read out as Python floats
    out = torch.zeros_like(x)
    for b in range(x.size(0)):
        w = F.softmax(x[b] @ x[b].T, -1).tolist()
        out[b] = torch.tensor(w, dtype=x.dtype) @ x[b]
    return out

def test_gradient_cut_through_python_is_caught():
    assert_check(check_raw_weights, raw_weights, [(rw_lists, 'no gradient back to the input')])
    assert_check(check_row_softmax, row_softmax, [(sm_no_grad, 'no gradient back to the input')])
    assert_check(check_basic_self_attention, basic_self_attention, [(bsa_item_loop, r"no gradient back to the input|stay on the inputs' device")])

# issue 31, second audit: numerical stability outside row_softmax, one-sided raw weights, einsum letters
def _exp_softmax(raw, shift=False):
    e = (raw - raw.amax(-1, keepdim=True) if shift else raw).exp()
    return e / e.sum(-1, keepdim=True)
def sa_exp_no_max(x): return torch.bmm(_exp_softmax(torch.bmm(x, x.transpose(1, 2))), x)
def sa_exp_shift_global(x):                              # subtracts one max over the whole batch, not each row's
    raw = torch.bmm(x, x.transpose(1, 2))
    e = (raw - raw.max()).exp()
    return torch.bmm(e / e.sum(-1, keepdim=True), x)
def sa_exp_float64(x):                                   # float64 only delays the overflow: exp(710) is inf there too
    return torch.bmm(_exp_softmax(torch.bmm(x, x.transpose(1, 2)).double()).to(x.dtype), x)
def es_exp_no_max(x): return torch.einsum('bij,bje->bie', _exp_softmax(torch.einsum('bie,bje->bij', x, x)), x)
def es_out_bie(x): return torch.einsum('bij,bie->bie', F.softmax(torch.einsum('bie,bje->bij', x, x), -1), x)
def es_out_bje(x): return torch.einsum('bij,bje->bje', F.softmax(torch.einsum('bie,bje->bij', x, x), -1), x)
def es_weights_bii(x):                                   # 'bie,bie->bi': only x_i · x_i, broadcast over j
    return torch.einsum('bij,bje->bie', F.softmax(torch.einsum('bie,bie->bi', x, x)[..., None].expand(-1, -1, x.size(1)), -1), x)
def rw_norms_rows(x): return (x * x).sum(-1, keepdim=True).expand(-1, -1, x.size(1))
def rw_norms_cols(x): return (x * x).sum(-1)[:, None, :].expand(-1, x.size(1), -1)
def rw_einsum_bii(x): return torch.einsum('bie,bie->bi', x, x)[..., None].expand(-1, -1, x.size(1))
def rw_diag(x): return torch.diag_embed(torch.einsum('bie,bie->bi', x, x))
def rw_sums(x): return x.sum(-1, keepdim=True) * x.sum(-1)[:, None, :]

def test_issue31_audit_wrongs():
    assert_check(check_basic_self_attention, basic_self_attention, [
        (sa_exp_no_max, r'inf or NaN for long vectors.*max'), (sa_exp_shift_global, r'long vectors'),
        (sa_exp_float64, r'long vectors'), (es_out_bie, r'output is x itself'), (es_out_bje, r'column of weights')])
    assert_check(check_einsum_self_attention, einsum_self_attention, [
        (es_exp_no_max, r'inf or NaN for long vectors'), (es_out_bie, r"output is x itself.*'bij,bje->bie'"),
        (es_out_bje, r"->bje"), (es_weights_bii, r"letters of each einsum")])
    assert_check(check_raw_weights, raw_weights, [
        (rw_norms_rows, r'row i is the squared norm'), (rw_norms_cols, r'column j is the squared norm'),
        (rw_einsum_bii, r'row i is the squared norm'), (rw_diag, r'only the diagonal'), (rw_sums, r'sums of the vectors')])

def sa_stable_by_hand(x):                                # each row's max subtracted by hand, then exp
    return torch.bmm(_exp_softmax(torch.bmm(x, x.transpose(1, 2)), shift=True), x)
def sa_logsumexp(x):
    raw = x @ x.mT
    return (raw - raw.logsumexp(-1, keepdim=True)).exp() @ x
def es_stable_by_hand(x): return torch.einsum('bij,bje->bie', _exp_softmax(torch.einsum('bie,bje->bij', x, x), shift=True), x)

def test_issue31_audit_valid():
    for fn in (sa_stable_by_hand, sa_logsumexp, es_stable_by_hand): assert_check(check_basic_self_attention, fn)
    assert_check(check_einsum_self_attention, es_stable_by_hand)


# third audit: the einsum exercise wants einsum for both products, counted as calls (an alias or a helper counts too)
def es_one_einsum(x): return F.softmax(torch.einsum('bie,bje->bij', x, x), -1) @ x
def es_one_einsum_bmm(x): return torch.einsum('bij,bje->bie', F.softmax(torch.bmm(x, x.transpose(1, 2)), -1), x)
def es_alias(x):
    ein = torch.einsum
    return ein('bij,bje->bie', ein('bie,bje->bij', x, x).softmax(-1), x)
def _prod(spec, a, b): return torch.einsum(spec, a, b)
def es_helper(x): return _prod('bij,bje->bie', F.softmax(_prod('bie,bje->bij', x, x), -1), x)

def test_audit3_einsum_twice():
    assert_check(check_einsum_self_attention, einsum_self_attention, [
        (es_one_einsum, r'both products.*once'), (es_one_einsum_bmm, r'both products.*once')])
    for fn in (es_alias, es_helper): assert_check(check_einsum_self_attention, fn)

def sm_eps(raw): return raw.exp() / (raw.exp().sum(-1, keepdim=True) + 1e-3)      # an epsilon in the sum (no max either)
def rw_rounded(x): return (x @ x.transpose(1, 2)).round(decimals=3)

def test_audit3_close_values_named_apart():
    assert_check(check_row_softmax, row_softmax, [(sm_eps, r'not from a lower precision.*epsilon'), (sm_half, r'lower precision \(half')])
    assert_check(check_raw_weights, raw_weights, [(rw_rounded, r'not from a lower precision.*rounding')])
