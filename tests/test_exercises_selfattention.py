"Lesson 01's checks accept the solutions and reject the stub and each typical mistake with its own hint."
import math
import torch, torch.nn.functional as F
from transformers_scratch.core import TODO, assert_check
from transformers_scratch.selfattention import (
    check_raw_weights, raw_weights, check_row_softmax, row_softmax, check_basic_self_attention, basic_self_attention,
    check_einsum_self_attention, einsum_self_attention)

def stub(*args): raise TODO("write it")

def test_raw_weights():
    assert_check(check_raw_weights, raw_weights, [
        (stub, 'not solved'),
        (lambda x: x.transpose(1, 2) @ x, r'xᵀx'),                                     # (b, e, e)
        (lambda x: x * x, r'shape \(2, 5, 5\)'),                                       # elementwise
        (lambda x: F.softmax(x @ x.transpose(1, 2), -1), 'softmax already'),
        (lambda x: x @ x.transpose(1, 2) / math.sqrt(x.size(-1)), 'no scaling'),
        (lambda x: x @ x.transpose(1, 2) + 1, 'values are wrong'),
        (lambda x: torch.bmm(x, x), 'raised RuntimeError'),                             # forgot the transpose
    ])
    assert_check(check_raw_weights, lambda x: torch.einsum('bie,bje->bij', x, x))     # any correct form passes

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
        (lambda w: F.softmax(w, -1)[..., :3], r'shape \(2, 4, 4\)'),
    ])
    def stable(w):
        z = (w - w.max(-1, keepdim=True).values).exp()
        return z / z.sum(-1, keepdim=True)
    assert_check(check_row_softmax, stable)

def bsa_dim1(x): return torch.bmm(F.softmax(torch.bmm(x, x.transpose(1, 2)), dim=1), x)
def bsa_transposed(x): return torch.bmm(F.softmax(torch.bmm(x, x.transpose(1, 2)), dim=-1).transpose(1, 2), x)
def bsa_nosoftmax(x): return torch.bmm(torch.bmm(x, x.transpose(1, 2)), x)
def bsa_scaled(x): return torch.bmm(F.softmax(torch.bmm(x, x.transpose(1, 2)) / math.sqrt(x.size(-1)), -1), x)
def bsa_scaled_e(x): return torch.bmm(F.softmax(torch.bmm(x, x.transpose(1, 2)) / x.size(-1), -1), x)
def bsa_weights(x): return F.softmax(torch.bmm(x, x.transpose(1, 2)), -1)
def bsa_sum(x): return torch.bmm(torch.ones(x.size(0), x.size(1), x.size(1)), x)

BASIC_WRONGS = [(stub, 'not solved'), (bsa_dim1, r'sum to 1.*dim=-1'), (bsa_transposed, r'not wᵀ x'),
                (bsa_nosoftmax, 'forgot the softmax'), (bsa_scaled, r'scaled by √e'), (bsa_scaled_e, r'scaled by e'),
                (bsa_weights, 'those are the weights'), (bsa_sum, 'values are wrong')]

def test_basic_self_attention():
    assert_check(check_basic_self_attention, basic_self_attention, BASIC_WRONGS)
    assert_check(check_basic_self_attention, einsum_self_attention)

def test_einsum_self_attention():
    def ein_transposed(x):                     # a wrong letter: w[b, j, i] used for y_i
        w = F.softmax(torch.einsum('bie,bje->bij', x, x), -1)
        return torch.einsum('bji,bje->bie', w, x)
    ein_wrongs = [(f, h) for f, h in BASIC_WRONGS if f is not bsa_sum]
    assert_check(check_einsum_self_attention, einsum_self_attention,
                 ein_wrongs + [(ein_transposed, r'not wᵀ x'),
                               (basic_self_attention, 'about torch.einsum')])   # right values, no einsum
