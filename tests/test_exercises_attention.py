"Lesson 02's checks accept the solutions and reject the stub and each typical mistake with its own hint."
import math
import torch, torch.nn.functional as F
from transformers_scratch.core import TODO, assert_check
from transformers_scratch.attention import (
    check_attention, attention, check_split_heads, split_heads, check_merge_heads, merge_heads,
    check_selfattention_forward, selfattention_forward)

def stub(*args): raise TODO("write it")

def sdpa(scale=None, dim=-1, after=False, softmax=True):
    "A scaled dot-product attention with one typical mistake; `scale(q, k, v)` gives the divisor"
    def f(q, k, v):
        raw = q @ k.transpose(-2, -1)
        d = scale(q, k, v) if scale else math.sqrt(q.size(-1))
        if not softmax: return raw / d @ v
        return (F.softmax(raw, dim) / d if after else F.softmax(raw / d, dim)) @ v
    return f

def test_attention():
    assert_check(check_attention, attention, [
        (stub, 'not solved'),
        (sdpa(lambda q, k, v: 1.), 'forgot to scale'),
        (sdpa(lambda q, k, v: q.size(-1)), r'divided by s: divide by √s'),
        (sdpa(lambda q, k, v: 1 / math.sqrt(q.size(-1))), r'multiplied by √s'),
        (sdpa(lambda q, k, v: math.sqrt(q.size(1) * q.size(-1))), r'full embedding size'),   # √e, e = h·s
        (sdpa(lambda q, k, v: math.sqrt(k.size(-2))), r'√t_k'),
        (sdpa(lambda q, k, v: math.sqrt(q.size(-2))), r'√t_q'),
        (sdpa(lambda q, k, v: math.sqrt(v.size(-1))), r'v\.size\(-1\)'),
        (sdpa(after=True), 'after the softmax'),
        (sdpa(dim=-2), r'over the queries'),
        (sdpa(dim=1), r'over the heads'),
        (sdpa(softmax=False), 'forgot the softmax'),
        (lambda q, k, v: F.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), -1), 'those are the weights'),
        (lambda q, k, v: F.softmax(q @ k.transpose(2, 3) / math.sqrt(q.size(-1)), -1) @ v, r'not on \(b, t, s\)'),
        (lambda q, k, v: F.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(3)), -1) @ v, r'not on \(b, t, s\)'),
        (lambda q, k, v: sdpa()(q, k, v) + 0.01, 'values are wrong'),
    ])
    assert_check(check_attention, lambda q, k, v: F.scaled_dot_product_attention(q, k, v))

def test_split_heads():
    def view_no_transpose(x, h): b, t, e = x.size(); return x.view(b, h, t, e // h)
    def transpose_first(x, h): b, t, e = x.size(); return x.transpose(1, 2).reshape(b, h, t, e // h)
    def interleaved(x, h): b, t, e = x.size(); return x.view(b, t, e // h, h).permute(0, 3, 1, 2)
    def folded(x, h): b, t, e = x.size(); return x.view(b, t, h, e // h).transpose(1, 2).reshape(b * h, t, e // h)
    def folded_view(x, h): b, t, e = x.size(); return x.reshape(b * h, t, e // h)
    def no_transpose(x, h): b, t, e = x.size(); return x.view(b, t, h, e // h)
    def s_before_t(x, h): b, t, e = x.size(); return x.view(b, t, h, e // h).permute(0, 2, 3, 1)
    def three_heads(x, h): b, t, e = x.size(); return x.view(b, t, 3, e // 3).transpose(1, 2)   # ignores h
    assert_check(check_split_heads, split_heads, [
        (stub, 'not solved'),
        (view_no_transpose, r'without a transpose'),
        (transpose_first, r'transposed before splitting'),
        (interleaved, r'every h-th feature'),
        (folded, r'\(b·h, t, s\)'), (folded_view, r'\(b·h, t, s\)'),
        (no_transpose, r'got \(b, t, h, s\)'),
        (s_before_t, r'got \(b, h, s, t\)'),
        (three_heads, r'split_heads\(x, 4\)'),
    ])
    assert_check(check_split_heads, lambda x, h: torch.stack(x.chunk(h, -1), 1))

def test_merge_heads():
    def no_transpose(x): b, h, t, s = x.size(); return x.reshape(b, t, h * s)
    def view_after_transpose(x): b, h, t, s = x.size(); return x.transpose(1, 2).view(b, t, h * s)
    def interleaved(x): b, h, t, s = x.size(); return x.permute(0, 2, 3, 1).reshape(b, t, h * s)
    def unflattened(x): return x.transpose(1, 2)
    def contiguous_view(x): b, h, t, s = x.size(); return x.transpose(1, 2).contiguous().view(b, t, h * s)
    assert_check(check_merge_heads, merge_heads, [
        (stub, 'not solved'),
        (no_transpose, r'without a transpose'),
        (view_after_transpose, r'not contiguous.*reshape'),
        (interleaved, r'interleaved'),
        (unflattened, r'flatten the last two dims'),
        (lambda x: x.flatten(1, 3), r'shape \(2, 5, 12\)'),
        (lambda x: merge_heads(x).flip(1), 'values are wrong'),
    ])
    assert_check(check_merge_heads, contiguous_view)
    assert_check(check_merge_heads, lambda x: torch.cat(x.unbind(1), -1))

def forward(split='ok', merge='ok', unify=True, heads=None, scale='s', swap=False, dim=-1, wide_ok=True):
    "The forward of `SelfAttention` with one typical mistake"
    def f(sa, x):
        b, t, e = x.size()
        h = sa.heads if heads is None else heads
        s = e // h if not wide_ok else sa.tokeys.out_features // h
        def sp(z):
            if split == 'view': return z.reshape(b, h, t, s)
            return z.view(b, t, h, s).transpose(1, 2)
        q, k, v = (sp(f(x)) for f in (sa.toqueries, sa.tokeys, sa.tovalues))
        if swap: q, k = k, q
        d = {'s': s, 'e': e, '1': 1}[scale]
        out = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(d), dim) @ v      # (b, h, t, s)
        out = out.reshape(b, t, h * s) if merge == 'reshape' else out.transpose(1, 2).reshape(b, t, h * s)
        return sa.unifyheads(out) if unify else out
    return f

def test_selfattention_forward():
    assert_check(check_selfattention_forward, selfattention_forward, [
        (stub, 'not solved'),
        (forward(unify=False), 'forgot sa.unifyheads'),
        (forward(split='view'), r'split the heads with view\(b, t, h, s\)\.transpose'),
        (forward(merge='reshape'), r'merge the heads with transpose'),
        (forward(heads=1, scale='e'), 'one head of size e'),
        (forward(scale='e'), r'scaled by √e'),
        (forward(scale='1'), 'forgot to scale'),
        (forward(swap=True), 'swapped'),
        (forward(dim=-2), 'over the queries'),
        (forward(wide_ok=False), 'wide'),
        (lambda sa, x: sa.unifyheads(x), 'values are wrong'),
    ])
    assert_check(check_selfattention_forward, lambda sa, x: sa(x))        # the module itself passes too
    assert_check(check_selfattention_forward, forward())
