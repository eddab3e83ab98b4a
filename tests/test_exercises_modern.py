"Each check in lesson 27 accepts the solution and the library's own ops, and rejects the stub and the typical wrong answers with the right hint."
import pytest
import torch, torch.nn as nn, torch.nn.functional as F
from transformers_scratch.core import assert_check
from transformers_scratch.modern import rope_angles, apply_rope, repeat_kv
from transformers_scratch.modern import rms_norm, SwiGLU
from transformers_scratch.modern import rotary
from transformers_scratch.checks.modern import check_rotary, check_rms_norm, check_swiglu, check_repeat_kv
from conftest import stub

pytestmark = pytest.mark.usefixtures('one_thread')


# --- rotary --------------------------------------------------------------------------------------------------------
def _pos(q, start): return torch.arange(start, start + q.size(2), device=q.device)
def _lib(x, pos, theta, sign=1.):
    "x (..., t, s) turned at positions pos by lesson 03's rope_angles and apply_rope (sign -1: the other way)"
    cos, sin = (a.to(x.dtype) for a in rope_angles(pos, x.size(-1), theta))
    return apply_rope(x, cos, sign * sin)
def _neighbours(x, pos, theta):
    "x turned with pairs (2i, 2i+1), as the paper and Meta's original Llama code do, through complex numbers"
    s = x.size(-1)
    a = pos.double()[:, None] * theta ** (-torch.arange(0, s, 2, dtype=torch.float64) / s)           # (t, s/2)
    z = torch.view_as_complex(x.double().reshape(*x.shape[:-1], s // 2, 2).contiguous()) * torch.polar(torch.ones_like(a), a)
    return torch.view_as_real(z).flatten(-2).to(x.dtype)

def rot_library(q, k, v, start=0, theta=10000.):              # lesson 03's rope_angles and apply_rope: accepted
    p = _pos(q, start); return _lib(q, p, theta), _lib(k, p, theta), v
def rot_values(q, k, v, start=0, theta=10000.):
    p = _pos(q, start); return _lib(q, p, theta), _lib(k, p, theta), _lib(v, p, theta)
def rot_neighbours(q, k, v, start=0, theta=10000.):
    p = _pos(q, start); return _neighbours(q, p, theta), _neighbours(k, p, theta), v
def rot_theta_ignored(q, k, v, start=0, theta=10000.): return rot_library(q, k, v, start)
def rot_from_zero(q, k, v, start=0, theta=10000.): return rot_library(q, k, v, 0, theta)
def rot_backwards(q, k, v, start=0, theta=10000.):
    p = _pos(q, start); return _lib(q, p, theta, -1.), _lib(k, p, theta, -1.), v
def rot_freq_i(q, k, v, start=0, theta=10000.):               # θ^(-i/s) = (√θ)^(-2i/s)
    return rot_library(q, k, v, start, theta ** 0.5)
def rot_heads_as_time(q, k, v, start=0, theta=10000.):        # assumes (b, t, h, s)
    t = lambda x: _lib(x.transpose(1, 2), torch.arange(start, start + x.size(1)), theta).transpose(1, 2)
    return t(q), t(k), v
def rot_before_split(q, k, v, start=0, theta=10000.):         # the whole e = h·s vector turned, as before the head split
    def t(x):
        b, h, n, s = x.shape
        return _lib(x.transpose(1, 2).reshape(b, n, h * s), _pos(x, start), theta).view(b, n, h, s).transpose(1, 2)
    return t(q), t(k), v
def rot_mixed(q, k, v, start=0, theta=10000.):               # angles repeat_interleave'd, pairs by halves
    def t(x):
        cos, sin = (a[..., :x.size(-1) // 2].repeat_interleave(2, -1).to(x.dtype) for a in rope_angles(_pos(q, start), x.size(-1), theta))
        return apply_rope(x, cos, sin)
    return t(q), t(k), v
def rot_only_q(q, k, v, start=0, theta=10000.): return rot_library(q, k, v, start, theta)[0], k, v
def rot_two(q, k, v, start=0, theta=10000.): return rot_library(q, k, v, start, theta)[:2]
def rot_cpu(q, k, v, start=0, theta=10000.):                   # positions made on the CPU
    p = torch.arange(start, start + q.size(2)); return _lib(q, p, theta), _lib(k, p, theta), v
def rot_in_place(q, k, v, start=0, theta=10000.):
    q2, k2, _ = rot_library(q, k, v, start, theta); q.copy_(q2); return q, k2, v
def rot_float32(q, k, v, start=0, theta=10000.):
    return tuple(o.float() for o in rot_library(q, k, v, start, theta))

def test_check_rotary():
    assert_check(check_rotary, rotary, [
        (stub, 'not solved'), (rot_values, 'values are not rotated'), (rot_neighbours, r'neighbouring dims \(2i, 2i\+1\)'),
        (rot_theta_ignored, 'base theta'), (rot_from_zero, 'restart at 0'), (rot_backwards, 'wrong way'),
        (rot_freq_i, r'θ\^\(-i/s\)'), (rot_heads_as_time, 'dim 2'), (rot_before_split, 'before the head split'),
        (rot_mixed, 'laid out for neighbour pairs'), (rot_only_q, 'turn the keys too'), (rot_two, 'three tensors'), (rot_cpu, 'device'), (rot_in_place, 'in place'),
        (rot_float32, 'dtype')])
    assert_check(check_rotary, rot_library)


# --- rms_norm ------------------------------------------------------------------------------------------------------
def _ms(x, d=-1): return x.pow(2).mean(d, keepdim=True)
def rms_plain(x, w, eps=1e-5): return x / torch.sqrt(_ms(x) + eps) * w
def rms_torch(x, w, eps=1e-5): return F.rms_norm(x, x.shape[-1:], w, eps)              # PyTorch's own: accepted
def rms_mean(x, w, eps=1e-5):
    y = x - x.mean(-1, keepdim=True); return y / torch.sqrt(_ms(y) + eps) * w
def rms_std(x, w, eps=1e-5): return x / torch.sqrt(x.var(-1, keepdim=True, correction=0) + eps) * w
def rms_eps_out(x, w, eps=1e-5): return x / (_ms(x).sqrt() + eps) * w
def rms_no_eps(x, w, eps=1e-5): return x / _ms(x).sqrt() * w
def rms_eps_fixed(x, w, eps=1e-5): return rms_plain(x, w, 1e-6)
def rms_no_weight(x, w, eps=1e-5): return x / torch.sqrt(_ms(x) + eps)
def rms_weight_inside(x, w, eps=1e-5): return rms_no_weight(x * w, w, eps)
def rms_weight_added(x, w, eps=1e-5): return x / torch.sqrt(_ms(x) + eps) + w
def rms_sum(x, w, eps=1e-5): return x / torch.sqrt(x.pow(2).sum(-1, keepdim=True) + eps) * w
def rms_batch(x, w, eps=1e-5): return x / torch.sqrt(_ms(x, 0) + eps) * w
def rms_time(x, w, eps=1e-5): return x / torch.sqrt(_ms(x, -2) + eps) * w
def rms_squeeze(x, w, eps=1e-5): return rms_plain(x, w, eps).squeeze()
def rms_to_float(x, w, eps=1e-5): return rms_plain(x.float(), w.float(), eps)

def test_check_rms_norm():
    assert_check(check_rms_norm, rms_norm, [
        (stub, 'not solved'), (rms_mean, 'subtracted the mean'), (rms_std, 'standard deviation'),
        (rms_eps_out, 'inside the square root'), (rms_no_eps, 'eps is missing|eps you are given'), (rms_eps_fixed, 'you used 1e-06'),
        (rms_no_weight, 'multiply by weight'), (rms_weight_inside, 'not of x·weight'), (rms_weight_added, "don't add it"),
        (rms_sum, 'not their sum'), (rms_batch, r'the batch \(dim 0\)'), (rms_time, 'time steps'),
        (rms_squeeze, 'batch dim'), (rms_to_float, 'dtype')])
    assert_check(check_rms_norm, rms_torch)
    assert_check(check_rms_norm, rms_plain)


# --- SwiGLU --------------------------------------------------------------------------------------------------------
class _Glu(nn.Module):
    "A SwiGLU with a choice of mistakes"
    act, combine, hid, bias, dropout, names = F.silu, 'gate', None, None, True, ('gate', 'up', 'down')
    def __init__(self, config):
        super().__init__()
        c = config
        hid = type(self).hid(c) if self.hid else (c.hidden or c.mult * c.emb)
        bias = c.bias if self.bias is None else self.bias
        for n, (i, o) in zip(self.names, ((c.emb, hid), (c.emb, hid), (hid, c.emb))): setattr(self, n, nn.Linear(i, o, bias=bias))
        self.do = nn.Dropout(c.dropout if self.dropout else 0.)
    def forward(self, x):
        g, u = getattr(self, self.names[0])(x), getattr(self, self.names[1])(x)
        h = {'gate': lambda: type(self).act(g) * u, 'up': lambda: g * type(self).act(u), 'nogate': lambda: type(self).act(u),
             'sum': lambda: type(self).act(g) + u}[self.combine]()
        return self.do(getattr(self, self.names[2])(h))
def _glu(name, **kw): return type(name, (_Glu,), kw)

glu_ok = _glu('glu_ok')
glu_silu_on_up = _glu('glu_silu_on_up', combine='up')
glu_no_gate = _glu('glu_no_gate', combine='nogate')
glu_no_silu = _glu('glu_no_silu', act=lambda z: z)
glu_sigmoid = _glu('glu_sigmoid', act=torch.sigmoid)
glu_gelu = _glu('glu_gelu', act=F.gelu)
glu_sum = _glu('glu_sum', combine='sum')
glu_mult_emb = _glu('glu_mult_emb', hid=lambda c: c.mult * c.emb)
glu_four_emb = _glu('glu_four_emb', hid=lambda c: 4 * c.emb)
glu_two_thirds = _glu('glu_two_thirds', hid=lambda c: 8 * c.emb // 3)
glu_bias_always = _glu('glu_bias_always', bias=True)
glu_no_dropout = _glu('glu_no_dropout', dropout=False)
glu_names = _glu('glu_names', names=('w1', 'w3', 'w2'))
class glu_functional_dropout(glu_ok):                         # F.dropout is on in eval mode too
    def forward(self, x): return F.dropout(self.down(F.silu(self.gate(x)) * self.up(x)), self.do.p)
def glu_function(config): return lambda x: x

def test_check_swiglu():
    assert_check(check_swiglu, SwiGLU, [
        (stub, 'not solved'), (glu_silu_on_up, 'you put it on up'), (glu_no_gate, 'gate is missing'), (glu_no_silu, 'SiLU is missing'),
        (glu_sigmoid, 'sigmoid gate'), (glu_gelu, 'GEGLU'), (glu_sum, "don't add"), (glu_mult_emb, 'mult·emb'),
        (glu_four_emb, 'mult·emb|4·emb'), (glu_two_thirds, 'hidden size should be'), (glu_bias_always, 'config.bias'),
        (glu_no_dropout, 'random in training mode'), (glu_names, 'gate, up and down'), (glu_functional_dropout, 'eval mode'),
        (glu_function, 'nn.Module')])
    assert_check(check_swiglu, glu_ok)


# --- repeat_kv -----------------------------------------------------------------------------------------------------
def kv_interleave(x, n): return x.repeat_interleave(n, dim=1)
def kv_expand(x, n):                                           # the expand-and-reshape of Hugging Face's repeat_kv: accepted
    b, g, t, s = x.shape
    return x[:, :, None].expand(b, g, n, t, s).reshape(b, g * n, t, s)
def kv_repeat(x, n): return x.repeat(1, n, 1, 1)
def kv_expand_wrong(x, n):                                     # the new axis before the heads: tiles them
    b, g, t, s = x.shape
    return x[:, None].expand(b, n, g, t, s).reshape(b, g * n, t, s)
def kv_by_g(x, n): return x[:, torch.arange(x.size(1) * n) // x.size(1)]
def kv_time(x, n): return x.repeat_interleave(n, dim=2)
def kv_batch(x, n): return x.repeat_interleave(n, dim=0)
def kv_list(x, n): return torch.stack([x[:, j // n] for j in range(x.size(1) * n)], 1)

def test_check_repeat_kv():
    assert_check(check_repeat_kv, repeat_kv, [
        (stub, 'not solved'), (kv_repeat, 'repeat_interleave, not repeat'), (kv_expand_wrong, 'tiles the heads'),
        (kv_by_g, r'not j // g'), (kv_time, 'time'), (kv_batch, 'batch')])
    for ok in (kv_interleave, kv_expand, kv_list): assert_check(check_repeat_kv, ok)
