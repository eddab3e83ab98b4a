"Each check in lesson 27 accepts the solution and the library's own ops, and rejects the stub and the typical wrong answers with the right hint."
import pytest
import torch, torch.nn as nn, torch.nn.functional as F
from transformers_scratch.checks.toolkit import assert_check
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

def test_rotary_takes_a_caches_position_tensor():
    "A static decode step (CUDA graphs, `compile=True`) passes the cache's position as a 1-element tensor, not an int"
    q, k, v = torch.randn(2, 4, 3, 8), torch.randn(2, 2, 3, 8), torch.randn(2, 2, 3, 8)
    for a, b in zip(rotary(q, k, v, torch.tensor([5])), rotary(q, k, v, 5)): torch.testing.assert_close(a, b)

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
        (stub, 'not solved'), (kv_repeat, 'tiles the heads.*before the next one'), (kv_expand_wrong, 'tiles the heads'),
        (kv_by_g, r'not j // g'), (kv_time, 'time'), (kv_batch, 'batch')])
    for ok in (kv_interleave, kv_expand, kv_list): assert_check(check_repeat_kv, ok)


# --- issue 31: each RoPE mistake its own diagnosis, training-mode SwiGLU, new wrong and valid answers ----------------
def _freq(q, start, theta, step=2., sign=1., e=None):
    "Angles (t, s/2) of a turn by sign·p·θ^(-step·i/e), e the head size unless given"
    s = q.size(-1)
    return sign * _pos(q, start).double()[:, None] * theta ** (-torch.arange(s // 2, dtype=torch.float64, device=q.device) * step / (e or s))
def _halves(x, a, swap=False):
    c, n = a.cos().to(x.dtype), a.sin().to(x.dtype)
    if swap: c, n = n, c
    x1, x2 = x.chunk(2, -1)
    return torch.cat([x1 * c - x2 * n, x1 * n + x2 * c], -1)
def _rot(**kw):
    swap, shift, e_mult = kw.pop('swap', False), kw.pop('shift', 0), kw.pop('e_mult', False)
    def f(q, k, v, start=0, theta=10000.):
        a = _freq(q, start + shift, theta, e=q.size(-1) * q.size(1) if e_mult else None, **kw)
        return _halves(q, a, swap), _halves(k, a, swap), v
    return f
rot_swap_cos_sin = _rot(swap=True)
rot_from_one = _rot(shift=1)
rot_positive_exp = _rot(step=-2.)
rot_same_angle = _rot(step=0.)
rot_four_i = _rot(step=4.)
rot_e_in_freq = _rot(e_mult=True)                              # θ^(-2i/e), e = h·s, the embedding size

def rot_complex(q, k, v, start=0, theta=10000.):             # each pair (i, i + s/2) as one complex number times e^{iα}
    def t(x):
        a = _freq(x, start, theta)
        z = torch.complex(*(h.double() for h in x.chunk(2, -1))) * torch.polar(torch.ones_like(a), a)
        return torch.cat([z.real, z.imag], -1).to(x.dtype)
    return t(q), t(k), v
def rot_matrix(q, k, v, start=0, theta=10000.):              # a 2×2 rotation matrix per pair and position, with einsum
    def t(x):
        a = _freq(x, start, theta).to(x.dtype)
        R = torch.stack([torch.stack([a.cos(), -a.sin()], -1), torch.stack([a.sin(), a.cos()], -1)], -2)   # (t, s/2, 2, 2)
        pairs = torch.stack(x.chunk(2, -1), -1)                                                            # (..., t, s/2, 2)
        return torch.einsum('tiab,...tib->...tia', R, pairs).unbind(-1)
    def cat(x): return torch.cat(t(x), -1)
    return cat(q), cat(k), v

def test_check_rotary_issue31():
    assert_check(check_rotary, rotary, [
        (rot_swap_cos_sin, 'swapped cos and sin'), (rot_from_one, r'start \+ 1'), (rot_positive_exp, r'θ\^\(\+2i/s\)'),
        (rot_same_angle, 'same angle'), (rot_four_i, r'θ\^\(-4i/s\)'), (rot_e_in_freq, r'e = h·s')])
    for ok in (rot_complex, rot_matrix): assert_check(check_rotary, ok)

def rms_clamp(x, w, eps=1e-5): return x / torch.sqrt(_ms(x).clamp_min(eps)) * w
def rms_clamp_root(x, w, eps=1e-5): return x / _ms(x).sqrt().clamp_min(eps) * w
def rms_rsqrt_upcast(x, w, eps=1e-5): return (x.double() * torch.rsqrt(_ms(x.double()) + eps)).to(x.dtype) * w
def rms_norm_fn(x, w, eps=1e-5): return x / (torch.linalg.vector_norm(x, dim=-1, keepdim=True) ** 2 / x.size(-1) + eps).sqrt() * w

def test_check_rms_norm_issue31():
    assert_check(check_rms_norm, rms_norm, [(lambda x, w, eps=1e-5: x / torch.sqrt(x.pow(2).mean() + eps) * w, 'whole tensor'),
                                            (rms_clamp, 'clamped the mean square'), (rms_clamp_root, 'clamped the root mean square')])
    for ok in (rms_rsqrt_upcast, rms_norm_fn): assert_check(check_rms_norm, ok)

class glu_drop_hidden(glu_ok):                                   # dropout on the hidden product
    def forward(self, x): return self.down(self.do(F.silu(self.gate(x)) * self.up(x)))
class glu_drop_twice(glu_ok):
    def forward(self, x): return self.do(self.do(self.down(F.silu(self.gate(x)) * self.up(x))))
class glu_drop_up(glu_ok):
    def forward(self, x): return self.down(F.silu(self.gate(x)) * self.do(self.up(x)))
class glu_extra(glu_ok):                                         # a learned scale of its own: the library's weights won't load
    def __init__(self, config):
        super().__init__(config); self.scale = nn.Parameter(torch.ones(1))
class glu_silu_module(nn.Module):                                # nn.SiLU as a module, functional dropout with self.training
    def __init__(self, config):
        super().__init__()
        hid = config.hidden or config.mult * config.emb
        self.gate, self.up = (nn.Linear(config.emb, hid, bias=config.bias) for _ in range(2))
        self.down, self.act, self.p = nn.Linear(hid, config.emb, bias=config.bias), nn.SiLU(), config.dropout
    def forward(self, x): return F.dropout(self.down(self.act(self.gate(x)) * self.up(x)), self.p, self.training)
class glu_own_mask(glu_ok):                                      # dropout by hand: its own draws, right statistics
    def forward(self, x):
        y = self.down(F.silu(self.gate(x)) * self.up(x))
        p = self.do.p
        return y * (torch.rand_like(y) >= p) / (1 - p) if self.training and p else y

def test_check_swiglu_issue31():
    assert_check(check_swiglu, SwiGLU, [
        (glu_drop_hidden, 'hidden layer'), (glu_drop_twice, 'dropout twice'), (glu_drop_up, 'hidden layer'),
        (glu_extra, 'more than gate, up and down')])
    for ok in (glu_silu_module, glu_own_mask): assert_check(check_swiglu, ok)

def kv_by_g_times(x, n): return x.repeat_interleave(x.size(1), dim=1)   # g for n
def kv_5d(x, n): return x[:, :, None].expand(-1, -1, n, -1, -1)       # the expand without its reshape
def kv_same(x, n): return x                                             # forgot to repeat

def test_check_repeat_kv_issue31():
    assert_check(check_repeat_kv, repeat_kv, [
        (kv_by_g_times, 'each head g=4 times'), (kv_5d, 'merge the two head dims'), (kv_same, 'as they are')])


# --- issue 31: once the learner's pieces pass, the lesson's model and its ablation run them ---------------------------
ANSWERS = '''
import transformers_scratch.modern as _lib
CALLS = {'rotary': 0, 'rms_norm': 0, 'SwiGLU': 0, 'repeat_kv': 0}
def my_rotary(q, k, v, start=0, theta=10000.):
    CALLS['rotary'] += 1
    return _lib.rotary(q, k, v, start, theta)
def my_rms_norm(x, weight, eps=1e-5):
    CALLS['rms_norm'] += 1
    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight
class my_SwiGLU(_lib.SwiGLU):
    def forward(self, x):
        CALLS['SwiGLU'] += 1
        return super().forward(x)
def my_repeat_kv(x, n):
    CALLS['repeat_kv'] += 1
    return x.repeat_interleave(n, dim=1)
'''

RUN = r"""
import json, re, sys, torch
from IPython.core.interactiveshell import InteractiveShell
sys.modules['nbdev'] = None
nb = json.load(open(sys.argv[1], encoding='utf-8'))
answers = open(sys.argv[2], encoding='utf-8').read()
shell = InteractiveShell.instance()
ns, seen = shell.user_ns, {}
for i, src in enumerate(''.join(c['source']) for c in nb['cells'] if c['cell_type'] == 'code'):
    if re.search(r'^(def|class) my_\w+', src, re.M): src = answers if 'def my_rotary' in src else 'pass'
    if 'run_ablation(recipe' in src: seen['before ablation'] = dict(ns['CALLS'])
    if 'class YourAttention' in src: seen['checks'] = dict(ns['CALLS'])      # after the checks, the cells the lesson goes on with
    r = shell.run_cell(src, silent=True)
    if not r.success: sys.exit(f"code cell {i} raised {r.error_in_exec!r}: {src[:300]}")
    if isinstance(ns.get('cfg'), dict) and ns['cfg'].get('n_batches', 0) > 10: ns['cfg']['n_batches'] = 10   # keep it short
    if 'run_ablation(recipe' in src: seen['after ablation'] = dict(ns['CALLS'])
seen['passed'] = [n for n in ('rotary', 'rms_norm', 'SwiGLU', 'repeat_kv') if ns[n].__name__.startswith('my_')]
print(json.dumps(seen))
"""

def test_lesson_27_runs_the_learners_pieces(tmp_path):
    "The learner's edition with the four exercises answered (counting their calls): after the checks pass, the Llama-style model and every ablation run call them"
    import json, os, subprocess, sys, pathlib
    (tmp_path/'run.py').write_text(RUN); (tmp_path/'answers.py').write_text(ANSWERS)
    env = {k: v for k, v in os.environ.items() if k not in ('TFS_CHECKS', 'TFS_QUICK')}
    nb = pathlib.Path(__file__).resolve().parents[1]/'handout'/'27_modern.ipynb'
    r = subprocess.run([sys.executable, 'run.py', str(nb), 'answers.py'], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-3000:])
    seen = json.loads(r.stdout.strip().splitlines()[-1])
    assert seen['passed'] == ['rotary', 'rms_norm', 'SwiGLU', 'repeat_kv'], seen['passed']
    for k in seen['checks']:
        assert seen['before ablation'][k] > seen['checks'][k], f"the Llama-style model never called the learner's {k}"
        assert seen['after ablation'][k] > seen['before ablation'][k], f"the ablation never called the learner's {k}"

def rot_half_positions(q, k, v, start=0, theta=10000.):       # positions in float16: exact only up to 2048
    a = (_pos(q, start).half().double()[:, None] * theta ** (-torch.arange(0, q.size(-1), 2, dtype=torch.float64, device=q.device) / q.size(-1)))
    return _halves(q, a), _halves(k, a), v
def rms_normalize(x, w, eps=1e-5): return F.normalize(x, dim=-1) * x.size(-1) ** 0.5 * w   # its clamp is no eps

def test_far_positions_and_hidden_clamps_issue31():
    assert_check(check_rotary, rotary, [(rot_half_positions, 'far into a sequence.*float16')])
    assert_check(check_rms_norm, rms_norm, [(rms_normalize, "F.normalize's")])


# --- issue 31, second audit: what the turn differs in (pair lengths, precision, frequencies); RMSNorm's variants -------

def _rope_with(q, k, v, start, theta, pos_dtype=torch.float64, denom=None, freqs='pairs', half=False):
    "RoPE with one knob turned: the positions' dtype, the exponent's denominator, s distinct frequencies, angles rounded to float16"
    t, s = q.size(2), q.size(-1)
    pos = torch.arange(start, start + t, device=q.device).to(pos_dtype).double()
    if freqs == 'pairs':
        f = theta ** (-torch.arange(0, s, 2, dtype=torch.float64, device=q.device) / (denom or s))
        a = (pos[:, None] * f).repeat(1, 2)
    else: a = pos[:, None] * theta ** (-torch.arange(s, dtype=torch.float64, device=q.device) / s)   # one per dim
    if half: a = a.half().double()
    c, sn = a.cos().to(q.dtype), a.sin().to(q.dtype)
    def turn(x): x1, x2 = x.chunk(2, -1); return x * c + torch.cat([-x2, x1], -1) * sn
    return turn(q), turn(k), v

def rot_f16_angles(q, k, v, start=0, theta=10000.): return _rope_with(q, k, v, start, theta, half=True)
def rot_bf16_pos(q, k, v, start=0, theta=10000.): return _rope_with(q, k, v, start, theta, pos_dtype=torch.bfloat16)
def rot_denom_heads(q, k, v, start=0, theta=10000.): return _rope_with(q, k, v, start, theta, denom=2 * q.size(1))
def rot_denom_s2(q, k, v, start=0, theta=10000.): return _rope_with(q, k, v, start, theta, denom=q.size(-1) + 2)
def rot_s_freqs(q, k, v, start=0, theta=10000.): return _rope_with(q, k, v, start, theta, freqs='dims')
def rot_float64(q, k, v, start=0, theta=10000.): return _rope_with(q, k, v, start, theta)          # valid: float64 angles
def rot_polar(q, k, v, start=0, theta=10000.):                                                    # valid: complex numbers
    t, s = q.size(2), q.size(-1)
    a = torch.arange(start, start + t, dtype=torch.float64, device=q.device)[:, None] * theta ** (-torch.arange(0, s, 2, dtype=torch.float64, device=q.device) / s)
    z = torch.polar(torch.ones_like(a), a)
    def turn(x): x1, x2 = x.double().chunk(2, -1); y = torch.complex(x1, x2) * z; return torch.cat([y.real, y.imag], -1).to(x.dtype)
    return turn(q), turn(k), v

def test_check_rotary_angles_issue31():
    assert_check(check_rotary, rotary, [
        (rot_f16_angles, r'off by up to .* low precision'), (rot_bf16_pos, r'low precision'),
        (rot_denom_heads, r'θ\^\(-2i/12\).*denominator is s'), (rot_denom_s2, r'denominator is s'),
        (rot_s_freqs, r'changes the length .* pairs')])
    for ok in (rot_float64, rot_polar): assert_check(check_rotary, ok)

def rms_gemma(x, w, eps=1e-5): return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * (1 + w)
def rms_eps_sq(x, w, eps=1e-5): return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps * eps) * w
def rms_half(x, w, eps=1e-5): return (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)).half().to(x.dtype) * w
def rms_bf16(x, w, eps=1e-5): return rms_norm(x, w, eps).bfloat16().to(x.dtype)
def rms_upcast(x, w, eps=1e-5): x64 = x.double(); return (x64 * (x64.square().mean(-1, keepdim=True) + eps).rsqrt() * w.double()).to(x.dtype)
def rms_vector_norm(x, w, eps=1e-5): return x / torch.sqrt(torch.linalg.vector_norm(x, dim=-1, keepdim=True) ** 2 / x.size(-1) + eps) * w

def test_check_rms_norm_variants_issue31():
    assert_check(check_rms_norm, rms_norm, [(rms_gemma, r'\(1 \+ weight\)'), (rms_eps_sq, r'eps²'),
                                            (rms_half, r'off by up to .* lower precision'), (rms_bf16, r'lower precision')])
    for ok in (rms_upcast, rms_vector_norm, lambda x, w, eps=1e-5: F.rms_norm(x, x.shape[-1:], w, eps)):
        assert_check(check_rms_norm, ok)

def rms_float_out(x, w, eps=1e-5): x = x.float(); return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w   # float32 for bfloat16
def rms_bf16_native(x, w, eps=1e-5): return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w                 # valid in x's dtype

def test_check_rms_norm_bfloat16_issue31():
    assert_check(check_rms_norm, rms_norm, [(rms_float_out, r'bfloat16, got torch.float32')])
    assert_check(check_rms_norm, rms_bf16_native)

def rot_f32_out(q, k, v, start=0, theta=10000.):           # cos and sin left in float32: bfloat16 inputs come back float32
    t, s = q.size(2), q.size(-1)
    a = torch.arange(start, start + t, device=q.device, dtype=torch.float32)[:, None] * theta ** (-torch.arange(0, s, 2, device=q.device).float() / s)
    a = a.repeat(1, 2)
    def turn(x): x1, x2 = x.chunk(2, -1); return x * a.cos() + torch.cat([-x2, x1], -1) * a.sin()
    return turn(q), turn(k), v

def test_check_rotary_bfloat16_issue31():
    assert_check(check_rotary, rotary, [(rot_f32_out, r'bfloat16, got torch.float32')])
    for ok in (rot_float64, rot_polar): assert_check(check_rotary, ok)


# audit of lessons 20-28: F.rms_norm without its eps uses torch.finfo(dtype).eps; the hint named no cause
def rms_torch_no_eps(x, w, eps=1e-5): return F.rms_norm(x, x.shape[-1:], w)

def test_check_rms_norm_eps_not_passed():
    assert_check(check_rms_norm, rms_norm, [(rms_torch_no_eps, r"finfo\(torch.float32\).eps.*F.rms_norm's default: pass it eps")])
