"Lesson 03's checks accept the solutions and reject the stub and each typical mistake with its own hint."
import math
import torch, torch.nn.functional as F
import pytest
from transformers_scratch.checks.toolkit import assert_check
from transformers_scratch.masks import masked_softmax

pytestmark = pytest.mark.usefixtures('one_thread')   # tiny tensors: one thread is faster
from transformers_scratch.attention import attention, fast_attention, split_heads, merge_heads, selfattention_forward
from transformers_scratch.checks.attention import check_attention, check_split_heads, check_merge_heads, check_selfattention_forward
from conftest import stub


# Hints of the families every check shares (issue 11)
HARD = r'hard-coded'                       # a size that worked on one fixture fails on the next
RANGE = r'fixed range'                     # a loop over a fixed range
SQUEEZE = r'batch dim of a batch of one is gone'
INPLACE = r'changed its input .* in place'
DTYPE = r"keep the inputs' dtype"
DEVICE = r"stay on the inputs' device"
FIRST = r'first one'                       # the first batch element used for all

def sdpa(scale=None, dim=-1, after=False, softmax=True):
    "A scaled dot-product attention with one typical mistake; `scale(q, k, v)` gives the divisor"
    def f(q, k, v, mask=None, dropout=0., training=False):
        raw = q @ k.transpose(-2, -1)
        d = scale(q, k, v) if scale else math.sqrt(q.size(-1))
        if not softmax: return raw / d @ v
        return (F.softmax(raw, dim) / d if after else F.softmax(raw / d, dim)) @ v
    return f

def masked(how='ok', drop='ok'):
    "Attention with a mask and dropout, with one typical mistake in `how` it masks or in where and how it drops"
    def f(q, k, v, mask=None, dropout=0., training=False):
        raw = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        if mask is None or how == 'ignore': w = F.softmax(raw, -1)
        elif how == 'ok': w = masked_softmax(raw, mask)
        elif how == 'invert': w = masked_softmax(raw, ~mask)
        elif how == 'inf': w = F.softmax(raw.masked_fill(~mask, float('-inf')), -1)      # NaN where a query sees no key
        elif how == 'finite': w = F.softmax(raw.masked_fill(~mask, -1e9), -1)            # an average there
        elif how == 'after': w = F.softmax(raw, -1) * mask
        elif how == 'mul': w = F.softmax(raw * mask, -1)
        if drop == 'ok': w = F.dropout(w, dropout, training)
        elif drop == 'always': w = F.dropout(w, dropout)                                 # training=True by default
        elif drop == 'module': w = torch.nn.Dropout(dropout)(w)                           # a new module is in train mode
        elif drop == 'keep': w = F.dropout(w, 1 - dropout, training) if dropout else w
        elif drop == 'noscale': w = w * (torch.rand_like(w) >= dropout) if training else w
        elif drop == 'scores':                                                           # before the softmax
            return F.softmax(F.dropout(raw, dropout, training), -1) @ v if mask is None else w @ v
        out = w @ v
        return F.dropout(out, dropout, training) if drop == 'output' else out
    return f

def att_bmm(q, k, v):                 # 3-D only
    return torch.bmm(F.softmax(torch.bmm(q, k.transpose(1, 2)) / math.sqrt(q.size(-1)), -1), v)
def att_unpack4(q, k, v):             # 4-D only
    b, h, t, s = q.size()
    return F.softmax(q @ k.transpose(-2, -1) / math.sqrt(s), -1) @ v
def att_squeeze(q, k, v): return sdpa()(q, k, v).squeeze()
def att_float(q, k, v): return sdpa()(q.float(), k.float(), v.float())
def att_out_float(q, k, v): return sdpa()(q, k, v).float()
def att_softmax_f32(q, k, v): return F.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), -1, dtype=torch.float32) @ v
def att_scale_q_inplace(q, k, v):
    q /= math.sqrt(q.size(-1))
    return F.softmax(q @ k.transpose(-2, -1), -1) @ v
def att_div_inplace(q, k, v):         # scales k in place "to save memory"
    k.div_(math.sqrt(k.size(-1)))
    return F.softmax(q @ k.transpose(-2, -1), -1) @ v
def att_first(q, k, v): return sdpa()(q[:1], k[:1], v[:1]).expand(*q.shape[:-1], v.size(-1))
def att_buffer_cpu(q, k, v):
    out = torch.zeros(*q.shape[:-1], v.size(-1), dtype=q.dtype)
    out[...] = sdpa()(q, k, v)
    return out
def att_mask_cpu(q, k, v):            # a mask made ready "for later", on the CPU
    keep = torch.ones(q.size(-2), k.size(-2), dtype=torch.bool)
    w = (q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))).masked_fill(~keep, float('-inf'))
    return F.softmax(w, -1) @ v
def att_qq(q, k, v): return F.softmax(q @ q.transpose(-2, -1) / math.sqrt(q.size(-1)), -1) @ v
def att_vk(q, k, v): return F.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), -1) @ k
def att_heads_loop(q, k, v):          # one head at a time, for a fixed number of heads
    return torch.stack([sdpa()(q[:, r], k[:, r], v[:, r]) for r in range(2)], 1)

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
        # issue 11's families
        (sdpa(lambda q, k, v: math.sqrt(8)), r'constant √8'), (sdpa(lambda q, k, v: 8.), r'constant √64'),
        (att_bmm, r'3-D tensors only'), (att_unpack4, r'not on \(b, t, s\)'), (att_squeeze, SQUEEZE),
        (att_float, DTYPE), (att_out_float, DTYPE), (att_softmax_f32, r'raised RuntimeError.*dtype'),
        (att_scale_q_inplace, INPLACE), (att_div_inplace, INPLACE), (att_first, FIRST),
        (att_buffer_cpu, DEVICE), (att_mask_cpu, DEVICE), (att_qq, 'raised RuntimeError'), (att_vk, r'not by k'),
        (att_heads_loop, HARD),
        # a mask and dropout, as SelfAttention passes them
        (lambda q, k, v: F.scaled_dot_product_attention(q, k, v), r'must also take mask, dropout and training'),
        (masked('ignore'), r'ignored mask'), (masked('invert'), r'hid the keys where mask is True'),
        (masked('inf'), r'sees? no key got NaN'), (masked('finite'), r'average of all the values'),
        (masked('after'), r'after the softmax'), (masked('mul'), r'multiplied the scores by the mask'),
        (masked(drop='none'), r'nothing was dropped'), (masked(drop='always'), r'training=False dropout must be off'),
        (masked(drop='module'), r'training=False dropout must be off'), (masked(drop='output'), r'parts of the output'),
        (masked(drop='scores'), r'before the softmax'), (masked(drop='keep'), r'keep probability'),
        (masked(drop='noscale'), r'scaled by 1/\(1 - dropout\)'),
    ])
    assert_check(check_attention, masked())
    assert_check(check_attention, lambda q, k, v, mask=None, dropout=0., training=False: fast_attention(q, k, v, mask, dropout, training))
    def einsum_att(q, k, v, mask=None, dropout=0., training=False):
        w = masked_softmax(torch.einsum('...is,...js->...ij', q, k) / q.size(-1) ** 0.5, mask)
        return torch.einsum('...ij,...jv->...iv', F.dropout(w, dropout, training), v)
    assert_check(check_attention, einsum_att)

def split_s4(x, h): b, t, e = x.size(); return x.view(b, t, h, 4).transpose(1, 2)
def split_e12(x, h): b, t, e = x.size(); return x.view(b, t, h, 12 // h).transpose(1, 2)
def split_squeeze(x, h): b, t, e = x.size(); return x.view(b, t, h, e // h).transpose(1, 2).squeeze()
def split_first(x, h): b, t, e = x.size(); return x[:1].view(1, t, h, e // h).transpose(1, 2).expand(b, -1, -1, -1)
def split_buffer(x, h):
    b, t, e = x.size(); s = e // h
    out = torch.zeros(b, h, t, s)
    for r in range(h): out[:, r] = x[:, :, r * s:(r + 1) * s]
    return out
def split_buffer_cpu(x, h):
    b, t, e = x.size(); s = e // h
    out = torch.empty(b, h, t, s, dtype=x.dtype)
    for r in range(h): out[:, r] = x[:, :, r * s:(r + 1) * s]
    return out
def split_resize(x, h):               # reshapes the caller's tensor in place
    b, t, e = x.size()
    return x.resize_(b, t, h, e // h).transpose(1, 2)
def split_loop3(x, h):                # a loop over a fixed number of heads
    b, t, e = x.size(); s = e // h
    return torch.stack([x[:, :, r * s:(r + 1) * s] for r in range(3)], 1)
def split_h8(x, h=8): b, t, e = x.size(); return x.view(b, t, 3, e // 3).transpose(1, 2) if e % 3 == 0 else x.view(b, t, 8, -1)

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
        (three_heads, r'split_heads\(x, 5\).*made 3 heads.*hard-coded'),
        (split_s4, HARD), (split_e12, HARD), (split_squeeze, SQUEEZE), (split_first, FIRST),
        (split_buffer, DTYPE), (split_buffer_cpu, DEVICE), (split_resize, INPLACE), (split_loop3, r'split_heads\(x, 5\)'),
        (split_h8, HARD),
    ])
    assert_check(check_split_heads, lambda x, h: torch.stack(x.chunk(h, -1), 1))
    assert_check(check_split_heads, lambda x, h: x.unflatten(-1, (h, -1)).transpose(1, 2))

def merge_12(x): b, h, t, s = x.size(); return x.transpose(1, 2).reshape(b, t, 12)
def merge_squeeze(x): return merge_heads(x).squeeze()
def merge_first(x): return merge_heads(x[:1]).expand(x.size(0), -1, -1)
def merge_buffer(x):
    b, h, t, s = x.size()
    out = torch.zeros(b, t, h * s)
    for r in range(h): out[:, :, r * s:(r + 1) * s] = x[:, r]
    return out
def merge_buffer_cpu(x):
    b, h, t, s = x.size()
    out = torch.zeros(b, t, h * s, dtype=x.dtype)
    for r in range(h): out[:, :, r * s:(r + 1) * s] = x[:, r]
    return out
def merge_loop3(x): return torch.cat([x[:, r] for r in range(3)], -1)
def merge_transpose_(x):              # transposes the caller's tensor in place
    b, h, t, s = x.size()
    return x.transpose_(1, 2).reshape(b, t, h * s)
def merge_float(x): return merge_heads(x).float()

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
        (lambda x: x.flatten(1, 3), r'shape \(1, 5, 12\)'),
        (lambda x: merge_heads(x).flip(1), 'not head r'),
        # issue 11's families
        (merge_12, HARD), (merge_squeeze, SQUEEZE), (merge_first, FIRST), (merge_buffer, DTYPE),
        (merge_buffer_cpu, DEVICE), (merge_loop3, RANGE), (merge_transpose_, INPLACE), (merge_float, DTYPE),
    ])
    assert_check(check_merge_heads, lambda x: x.transpose(1, 2).flatten(2))
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

def fixed(heads=None, s=None, scale=None, squeeze=False, first=False, x_float=False, buffer=None, inplace=False,
          loop=None, out_float=False):
    "The forward of `SelfAttention` with a size hard-coded or another of issue 11's mistakes"
    def f(sa, x):
        if first: return fixed()(sa, x[:1]).expand_as(x)
        if x_float: x = x.float()
        b, t, e = x.size()
        h = heads or sa.heads
        hs = s or sa.tokeys.out_features // h
        q, k, v = (f(x).view(b, t, h, hs).transpose(1, 2) for f in (sa.toqueries, sa.tokeys, sa.tovalues))
        out = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(scale or hs), -1) @ v          # (b, h, t, s)
        if buffer or loop:
            m = torch.zeros(b, t, h * hs, dtype=torch.float32 if buffer == 'float32' else x.dtype)
            for r in range(loop or h): m[:, :, r * hs:(r + 1) * hs] = out[:, r]
        else: m = out.transpose(1, 2).reshape(b, t, h * hs)
        y = sa.unifyheads(m)
        if inplace:                   # adds the residual into the caller's tensor
            x += y
            return y
        if out_float: y = y.float()
        return y.squeeze() if squeeze else y
    return f

def test_selfattention_forward():
    assert_check(check_selfattention_forward, selfattention_forward, [
        (stub, 'not solved'),
        (forward(unify=False), 'forgot sa.unifyheads'),
        (forward(split='view'), r'split the heads with a plain view.*split_heads'),
        (forward(merge='reshape'), r'merged the heads with a plain reshape.*merge_heads'),
        (forward(heads=1, scale='e'), 'one head of size e'),
        (forward(scale='e'), r'scaled by √e'),
        (forward(scale='1'), 'forgot to scale'),
        (forward(swap=True), 'swapped'),
        (forward(dim=-2), 'over the queries'),
        (forward(wide_ok=False), 'wide'),
        (lambda sa, x: sa.unifyheads(x), 'values are wrong'),
        # issue 11's families
        (fixed(heads=3), r'used 3 heads.*sa\.heads \(5\)'), (fixed(s=4), HARD), (fixed(scale=4), r'constant √4'),
        (fixed(squeeze=True), SQUEEZE), (fixed(first=True), FIRST), (fixed(x_float=True), r'raised RuntimeError.*dtype'),
        (fixed(buffer='float32'), r'dtype'), (fixed(buffer='cpu'), DEVICE), (fixed(inplace=True), INPLACE),
        (fixed(loop=3), 'values are wrong'), (fixed(out_float=True), DTYPE),
    ])
    assert_check(check_selfattention_forward, lambda sa, x: sa(x))        # the module itself passes too
    assert_check(check_selfattention_forward, forward())


# --- issue 31: new plausible mistakes, and valid answers in other styles ---------------------------------------------
def att_causal_default(q, k, v, mask=None, dropout=0., training=False):   # SDPA's is_causal where no mask was asked for
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=mask is None)
def att_tuple(q, k, v, mask=None, dropout=0., training=False):            # nn.MultiheadAttention's (output, weights)
    w = masked_softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), mask)
    return F.dropout(w, dropout, training) @ v, w
def att_drop_twice(q, k, v, mask=None, dropout=0., training=False):
    w = masked_softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), mask)
    return F.dropout(F.dropout(w, dropout, training), dropout, training) @ v
def att_sqrt_heads(q, k, v, mask=None, dropout=0., training=False):       # √h for √s: q.size(1) is h on (b, h, t, s)
    return masked_softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(1)), mask) @ v

def att_where(q, k, v, mask=None, dropout=0., training=False):            # torch.where for the mask, and for empty rows
    s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is None: w = F.softmax(s, -1)
    else:
        w = F.softmax(torch.where(mask, s, torch.full_like(s, float('-inf'))), -1)
        w = torch.where(mask.any(-1, keepdim=True), w, torch.zeros_like(w))
    return F.dropout(w, dropout, training) @ v
def att_bernoulli(q, k, v, mask=None, dropout=0., training=False):        # dropout by hand: a mask of its own draws
    w = masked_softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), mask)
    if training and dropout: w = w * (torch.rand_like(w) >= dropout) / (1 - dropout)
    return w @ v
def att_fold(q, k, v, mask=None, dropout=0., training=False):             # leading dims folded for torch.bmm, float64 softmax
    lead, (tq, s), tk = q.shape[:-2], q.shape[-2:], k.size(-2)
    q3, k3, v3 = q.reshape(-1, tq, s), k.reshape(-1, tk, s), v.reshape(-1, tk, v.size(-1))
    sc = torch.bmm(q3, k3.transpose(1, 2)).view(*lead, tq, tk) / math.sqrt(s)
    w = masked_softmax(sc.double(), mask).to(q.dtype)
    w = F.dropout(w, dropout, training)
    return torch.bmm(w.reshape(-1, tq, tk), v3).view(*lead, tq, v.size(-1))

def test_attention_issue31():
    assert_check(check_attention, attention, [
        (att_causal_default, r'causal mask\) when no mask was given'), (att_tuple, r'not \(output, weights\)'),
        (att_drop_twice, 'dropout twice'), (att_sqrt_heads, r'√h, h=2 the number of heads')])
    for ok in (att_where, att_bernoulli, att_fold): assert_check(check_attention, ok)

def sa_sqrt_heads(sa, x):
    q, k, v = (split_heads(f(x), sa.heads) for f in (sa.toqueries, sa.tokeys, sa.tovalues))
    return sa.unifyheads(merge_heads(F.softmax(q @ k.transpose(-2, -1) / math.sqrt(sa.heads), -1) @ v))
def sa_causal(sa, x):                                                      # a causal mask the module does not ask for
    q, k, v = (split_heads(f(x), sa.heads) for f in (sa.toqueries, sa.tokeys, sa.tovalues))
    return sa.unifyheads(merge_heads(F.scaled_dot_product_attention(q, k, v, is_causal=True)))
def sa_einsum(sa, x):                                                      # heads as an einsum letter
    b, t, _ = x.shape
    h = sa.heads
    q, k, v = (f(x).view(b, t, h, -1) for f in (sa.toqueries, sa.tokeys, sa.tovalues))
    w = torch.einsum('bihs,bjhs->bhij', q, k).div(q.size(-1) ** 0.5).softmax(-1)
    return sa.unifyheads(torch.einsum('bhij,bjhs->bihs', w, v).reshape(b, t, -1))
def sa_loop(sa, x):                                                        # one head at a time, sliced from the projections
    s = sa.tokeys.out_features // sa.heads
    q, k, v = sa.toqueries(x), sa.tokeys(x), sa.tovalues(x)
    return sa.unifyheads(torch.cat([F.scaled_dot_product_attention(q[..., r * s:(r + 1) * s], k[..., r * s:(r + 1) * s],
                                                                   v[..., r * s:(r + 1) * s]) for r in range(sa.heads)], -1))

def test_selfattention_forward_issue31():
    assert_check(check_selfattention_forward, selfattention_forward, [
        (sa_sqrt_heads, r'scaled by √h'), (sa_causal, 'values are wrong')])
    for ok in (sa_einsum, sa_loop): assert_check(check_selfattention_forward, ok)

def test_split_heads_valid_issue31():
    assert_check(check_split_heads, lambda x, h: x.reshape(x.size(0), x.size(1), h, -1).permute(0, 2, 1, 3))
    assert_check(check_split_heads, lambda x, h: torch.einsum('bths->bhts', x.unflatten(-1, (h, x.size(-1) // h))))

def att_row_dropout(q, k, v, mask=None, dropout=0., training=False):      # one draw per query: whole rows dropped
    w = masked_softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), mask)
    if training and dropout: w = w * (torch.rand(*w.shape[:-1], 1, device=w.device) >= dropout) / (1 - dropout)
    return w @ v

def test_attention_row_dropout_issue31():
    assert_check(check_attention, attention, [(att_row_dropout, "zeroes a query's weights all together")])


# --- issue 31, second audit: dropout in both modes, what a wrong merge holds -------------------------------------------
def _qkv(sa, x): return [split_heads(f(x), sa.heads) for f in (sa.toqueries, sa.tokeys, sa.tovalues)]
def sf_drop_always(sa, x): return sa.unifyheads(merge_heads(attention(*_qkv(sa, x), dropout=sa.dropout, training=True)))
def sf_drop_mode(sa, x): return sa.unifyheads(merge_heads(attention(*_qkv(sa, x), dropout=sa.dropout, training=sa.training)))
def sf_drop_output(sa, x): return F.dropout(selfattention_forward(sa, x), sa.dropout, sa.training)
def sf_drop_merged(sa, x): return sa.unifyheads(F.dropout(merge_heads(attention(*_qkv(sa, x))), sa.dropout, sa.training))
def sf_drop_twice(sa, x):
    q, k, v = _qkv(sa, x)
    w = F.dropout(F.dropout(masked_softmax(q @ k.mT / math.sqrt(q.size(-1))), sa.dropout, sa.training), sa.dropout, sa.training)
    return sa.unifyheads(merge_heads(w @ v))
def sf_sdpa(sa, x): return sa.unifyheads(merge_heads(F.scaled_dot_product_attention(*_qkv(sa, x))))
def sf_view_both(sa, x):
    b, t, e = x.shape
    q, k, v = (f(x).view(b, sa.heads, t, -1) for f in (sa.toqueries, sa.tokeys, sa.tovalues))
    return sa.unifyheads(attention(q, k, v).reshape(b, t, e))
def sf_view_no_unify(sa, x):
    b, t, e = x.shape
    return merge_heads(attention(*(f(x).view(b, sa.heads, t, -1) for f in (sa.toqueries, sa.tokeys, sa.tovalues))))

def test_selfattention_forward_dropout_issue31():
    assert_check(check_selfattention_forward, selfattention_forward, [
        (sf_drop_always, r'random in eval mode'), (sf_drop_output, r'on the output'), (sf_drop_merged, r'merged heads'),
        (sf_drop_twice, r'twice'), (sf_view_both, r'view .* and merged them with a plain reshape'),
        (sf_view_no_unify, r'unifyheads is missing')])
    for ok in (sf_drop_mode, sf_sdpa): assert_check(check_selfattention_forward, ok)

def mh_mean_repeat(x): return x.mean(1).repeat(1, 1, x.size(1))
def mh_sum_repeat(x): return x.sum(1).repeat(1, 1, x.size(1))
def mh_reversed(x): return merge_heads(x.flip(1))
def mh_first_wrong(x): y = merge_heads(x).clone(); y[..., :x.size(-1)] *= 2; return y
def mh_unbind(x): return torch.cat(x.unbind(1), -1)
def mh_flatten(x): return x.permute(0, 2, 1, 3).flatten(2)

def test_merge_heads_chunks_issue31():
    assert_check(check_merge_heads, merge_heads, [
        (mh_mean_repeat, r'chunks .* hold the same values'), (mh_sum_repeat, r'hold the same values'),
        (mh_reversed, r'hold the heads \[2, 1, 0\]'), (mh_first_wrong, r'chunks \[0\] .* not head r')])
    for ok in (mh_unbind, mh_flatten): assert_check(check_merge_heads, ok)

def sf_drop_projections(sa, x): return sa.unifyheads(merge_heads(attention(*[F.dropout(z, sa.dropout, sa.training) for z in _qkv(sa, x)])))
def sf_drop_scores(sa, x):
    q, k, v = _qkv(sa, x)
    w = masked_softmax(F.dropout(q @ k.mT / math.sqrt(q.size(-1)), sa.dropout, sa.training))
    return sa.unifyheads(merge_heads(w @ v))
def sf_module(sa, x): return sa(x)                                 # valid: the module's own forward (dropout on the weights)

def test_selfattention_forward_dropout_places_issue31():
    assert_check(check_selfattention_forward, selfattention_forward, [
        (sf_drop_projections, r'queries, keys and values'), (sf_drop_scores, r'before the softmax')])
    assert_check(check_selfattention_forward, sf_module)


# --- dropout with a mask, as a causal model trains (each of these was accepted: dropout was tried without a mask only) --
def _scores(q, k): return q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
def att_drop_no_mask_only(q, k, v, mask=None, dropout=0., training=False):   # two branches, dropout in one
    if mask is None: return F.dropout(F.softmax(_scores(q, k), -1), dropout, training) @ v
    return masked_softmax(_scores(q, k), mask) @ v
def att_mask_eval_only(q, k, v, mask=None, dropout=0., training=False):      # the mask forgotten in the training branch
    if training: return F.dropout(F.softmax(_scores(q, k), -1), dropout, training) @ v
    return masked_softmax(_scores(q, k), mask) @ v
def att_mask_overrides(q, k, v, mask=None, dropout=0., training=False):      # the masked weights replace the dropped ones
    w = F.dropout(F.softmax(_scores(q, k), -1), dropout, training)
    if mask is not None: w = masked_softmax(_scores(q, k), mask)
    return w @ v
def att_sdpa_masked(q, k, v, mask=None, dropout=0., training=False):         # valid: SDPA's dropout, an additive mask
    p = dropout if training else 0.
    if mask is None: return F.scaled_dot_product_attention(q, k, v, dropout_p=p)
    add = torch.zeros(mask.shape, dtype=q.dtype, device=q.device).masked_fill(~mask, torch.finfo(q.dtype).min)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=add, dropout_p=p).masked_fill(~mask.any(-1, keepdim=True), 0.)

def test_attention_dropout_with_a_mask():
    assert_check(check_attention, attention, [
        (att_drop_no_mask_only, 'with a mask .* no weight was dropped'), (att_mask_eval_only, 'hidden \\(future\\) keys got weight'),
        (att_mask_overrides, 'with a mask .* no weight was dropped')])
    for ok in (att_sdpa_masked, att_where, att_bernoulli, fast_attention): assert_check(check_attention, ok)


# a dropout mask of its own, shared by the batch or by the queries: each was accepted (the rate and scale were right)
def _att_drop_shape(shape):
    def at(q, k, v, mask=None, dropout=0., training=False):
        w = masked_softmax(_scores(q, k), mask)
        if training and dropout: w = w * (torch.rand(shape(w), device=w.device) >= dropout) / (1 - dropout)
        return w @ v
    return at
att_drop_per_key = _att_drop_shape(lambda w: w.shape[-1:])                      # one draw per key, for every query
att_drop_2d = _att_drop_shape(lambda w: w.shape[-2:])                           # a (t_q, t_k) mask for the whole batch
att_drop_over_queries = _att_drop_shape(lambda w: (*w.shape[:-2], 1, w.size(-1)))

def test_attention_dropout_drawn_per_weight():
    assert_check(check_attention, attention, [
        (att_drop_per_key, 'shared by the queries'), (att_drop_2d, 'shared by the elements of the batch'),
        (att_drop_over_queries, 'shared by the queries')])
