"Each check in lesson 05 accepts the solution and rejects the stub and the typical wrong answers with the right hint."
import pytest
import torch, torch.nn as nn, torch.nn.functional as F
from transformers_scratch.config import ModelConfig
from transformers_scratch.checks.toolkit import assert_check
from transformers_scratch.block import layer_norm, feedforward, postnorm_block, prenorm_block, TransformerBlock, block_params, ACTIVATIONS
from transformers_scratch.checks.block import check_layer_norm, check_feedforward, check_postnorm_block, check_prenorm_block
from conftest import stub



pytestmark = pytest.mark.usefixtures('one_thread')


# --- layer_norm ----------------------------------------------------------------------------------------------------
def _ln(x, w, b, eps, dim=-1, correction=0, eps_inside=True):
    mu, var = x.mean(dim, keepdim=True), x.var(dim, keepdim=True, correction=correction)
    return (x - mu) / (torch.sqrt(var + eps) if eps_inside else var.sqrt() + eps) * w + b
def ln_batch(x, w, b, eps=1e-5):    return _ln(x, w, b, eps, dim=0)
def ln_time(x, w, b, eps=1e-5):     return _ln(x, w, b, eps, dim=1)
def ln_unbiased(x, w, b, eps=1e-5): return _ln(x, w, b, eps, correction=1)
def ln_eps_out(x, w, b, eps=1e-5):  return _ln(x, w, b, eps, eps_inside=False)
def ln_no_eps(x, w, b, eps=1e-5):   return _ln(x, w, b, 0.)
def ln_no_affine(x, w, b, eps=1e-5): return _ln(x, 1., 0., eps)
def ln_no_bias(x, w, b, eps=1e-5):  return _ln(x, w, 0., eps)
def ln_no_weight(x, w, b, eps=1e-5): return _ln(x, 1., b, eps)
def ln_torch(x, w, b, eps=1e-5):    return F.layer_norm(x, x.shape[-1:], w, b, eps)     # the library op is fine

def test_check_layer_norm():
    assert_check(check_layer_norm, layer_norm, [
        (stub, 'not solved'), (ln_batch, 'batch'), (ln_time, 'time steps'), (ln_unbiased, 'biased variance'),
        (ln_eps_out, 'inside the square root'), (ln_no_eps, 'NaN'), (ln_no_affine, 'scale by weight'),
        (ln_no_bias, 'add bias'), (ln_no_weight, 'multiply by weight')])
    assert_check(check_layer_norm, ln_torch)


# --- feedforward ---------------------------------------------------------------------------------------------------
def ff_linear(emb, mult=4, dropout=0.):
    return nn.Sequential(nn.Linear(emb, mult * emb), nn.Linear(mult * emb, emb), nn.Dropout(dropout))
def ff_hidden_emb(emb, mult=4, dropout=0.):
    return nn.Sequential(nn.Linear(emb, emb), nn.ReLU(), nn.Linear(emb, emb), nn.Dropout(dropout))
def ff_fixed_4(emb, mult=4, dropout=0.):                     # ignores mult
    return nn.Sequential(nn.Linear(emb, 4 * emb), nn.ReLU(), nn.Linear(4 * emb, emb), nn.Dropout(dropout))
def ff_gelu(emb, mult=4, dropout=0.):
    return nn.Sequential(nn.Linear(emb, mult * emb), nn.GELU(), nn.Linear(mult * emb, emb), nn.Dropout(dropout))
def ff_no_dropout(emb, mult=4, dropout=0.):
    return nn.Sequential(nn.Linear(emb, mult * emb), nn.ReLU(), nn.Linear(mult * emb, emb))
def ff_one_layer(emb, mult=4, dropout=0.):
    return nn.Sequential(nn.Linear(emb, emb), nn.ReLU(), nn.Dropout(dropout))
def ff_relu_last(emb, mult=4, dropout=0.):                   # ReLU on the output instead of between the layers
    return nn.Sequential(nn.Linear(emb, mult * emb), nn.Linear(mult * emb, emb), nn.ReLU(), nn.Dropout(dropout))
class _AlwaysDrop(nn.Module):
    def __init__(self, emb, mult, p): super().__init__(); self.l1, self.l2, self.p = nn.Linear(emb, mult * emb), nn.Linear(mult * emb, emb), p
    def forward(self, x): return F.dropout(self.l2(F.relu(self.l1(x))), self.p)          # training=True by default
def ff_functional_dropout(emb, mult=4, dropout=0.): return _AlwaysDrop(emb, mult, dropout)
def ff_not_module(emb, mult=4, dropout=0.): return lambda x: x
def ff_no_act(emb, mult=4, dropout=0.):                       # right, but TransformerBlock passes act too
    return nn.Sequential(nn.Linear(emb, mult * emb), nn.ReLU(), nn.Linear(mult * emb, emb), nn.Dropout(dropout))
def ff_act_ignored(emb, mult=4, dropout=0., act='relu'): return ff_no_act(emb, mult, dropout)
def ff_gelu_exact(emb, mult=4, dropout=0., act='relu'):      # 'gelu_tanh' taken for the exact GELU
    return nn.Sequential(nn.Linear(emb, mult * emb), nn.ReLU() if act == 'relu' else nn.GELU(), nn.Linear(mult * emb, emb),
                         nn.Dropout(dropout))
def ff_crash(emb, mult=4, dropout=0., act='relu'):
    return nn.Sequential(nn.Linear(emb, mult * emb), nn.ReLU(), nn.Linear(mult * emb, emb), nn.Dropout(dropout), nn.Softmax(dim=7))

def test_check_feedforward():
    assert_check(check_feedforward, feedforward, [
        (stub, 'not solved'), (ff_linear, 'linear'), (ff_hidden_emb, 'mult\\*emb = 32'), (ff_fixed_4, 'mult=2'),
        (ff_gelu, 'ReLU'), (ff_no_dropout, 'nn.Dropout'), (ff_one_layer, 'two nn.Linear'), (ff_relu_last, 'differs'),
        (ff_functional_dropout, 'eval mode'), (ff_not_module, 'nn.Module'),
        (ff_no_act, 'must take act too'), (ff_act_ignored, 'kept the ReLU'), (ff_gelu_exact, 'tanh approximation'),
        (ff_crash, 'raised IndexError')])


# --- post-norm block -----------------------------------------------------------------------------------------------
def post_no_residual(blk, x, pad_mask=None):
    h = blk.norm1(blk.do(blk.attention(x, pad_mask)))
    return blk.norm2(blk.ff(h))
def post_no_ff_residual(blk, x, pad_mask=None):
    h = blk.norm1(x + blk.do(blk.attention(x, pad_mask)))
    return blk.norm2(blk.ff(h))
def post_as_pre(blk, x, pad_mask=None):                      # norm before the sublayer
    h = x + blk.do(blk.attention(blk.norm1(x), pad_mask))
    return h + blk.ff(blk.norm2(h))
def post_norm_branch(blk, x, pad_mask=None):                 # norm on the sublayer output only
    h = x + blk.norm1(blk.do(blk.attention(x, pad_mask)))
    return h + blk.norm2(blk.ff(h))
def post_swapped(blk, x, pad_mask=None):
    h = blk.norm2(x + blk.do(blk.attention(x, pad_mask)))
    return blk.norm1(h + blk.ff(h))
def post_ff_on_x(blk, x, pad_mask=None):
    h = blk.norm1(x + blk.do(blk.attention(x, pad_mask)))
    return blk.norm2(h + blk.ff(x))
def post_no_pad(blk, x, pad_mask=None):
    h = blk.norm1(x + blk.do(blk.attention(x)))
    return blk.norm2(h + blk.ff(h))
def post_one_norm(blk, x, pad_mask=None):
    h = x + blk.do(blk.attention(x, pad_mask))
    return blk.norm2(h + blk.ff(h))

def post_no_cache_param(blk, x, pad_mask=None):             # right, but TransformerBlock passes a cache too
    h = blk.norm1(x + blk.do(blk.attention(x, pad_mask)))
    return blk.norm2(h + blk.ff(h))
def post_cache_ignored(blk, x, pad_mask=None, cache=None): return post_no_cache_param(blk, x, pad_mask)

def test_check_postnorm_block():
    assert_check(check_postnorm_block, postnorm_block, [
        (post_no_cache_param, 'must take cache too'), (post_cache_ignored, 'pass cache on'),
        (stub, 'not solved'), (post_no_residual, 'residuals are missing'), (post_no_ff_residual, "MLP's residual"),
        (post_as_pre, 'pre-norm order'), (post_norm_branch, "sublayer's output only"), (post_swapped, 'swapped'),
        (post_ff_on_x, 'not x'), (post_no_pad, 'pad_mask'), (post_one_norm, 'first norm is missing')])


# --- pre-norm block ------------------------------------------------------------------------------------------------
def pre_as_post(blk, x, pad_mask=None): return postnorm_block(blk, x, pad_mask)
def pre_no_residual(blk, x, pad_mask=None):
    return blk.ff(blk.norm2(blk.do(blk.attention(blk.norm1(x), pad_mask))))
def pre_no_ff_residual(blk, x, pad_mask=None):
    h = x + blk.do(blk.attention(blk.norm1(x), pad_mask))
    return blk.ff(blk.norm2(h))
def pre_normed_residual(blk, x, pad_mask=None):              # x = norm(x); x = x + f(x)
    x = blk.norm1(x); x = x + blk.do(blk.attention(x, pad_mask))
    x = blk.norm2(x); return x + blk.ff(x)
def pre_swapped(blk, x, pad_mask=None):
    h = x + blk.do(blk.attention(blk.norm2(x), pad_mask))
    return h + blk.ff(blk.norm1(h))
def pre_final_norm(blk, x, pad_mask=None):
    return blk.norm2(prenorm_block(blk, x, pad_mask))
def pre_no_pad(blk, x, pad_mask=None): return prenorm_block(blk, x)
def pre_ff_on_x(blk, x, pad_mask=None):
    h = x + blk.do(blk.attention(blk.norm1(x), pad_mask))
    return h + blk.ff(blk.norm2(x))

def pre_no_cache_param(blk, x, pad_mask=None):
    h = x + blk.do(blk.attention(blk.norm1(x), pad_mask))
    return h + blk.ff(blk.norm2(h))
def pre_cache_ignored(blk, x, pad_mask=None, cache=None): return pre_no_cache_param(blk, x, pad_mask)

def test_check_prenorm_block():
    assert_check(check_prenorm_block, prenorm_block, [
        (pre_no_cache_param, 'must take cache too'), (pre_cache_ignored, 'pass cache on'),
        (stub, 'not solved'), (pre_as_post, 'post-norm order'), (pre_no_residual, 'residuals are missing'),
        (pre_no_ff_residual, "MLP's residual"), (pre_normed_residual, 'carry x itself'), (pre_swapped, 'swapped'),
        (pre_final_norm, 'no norm at the end'), (pre_no_pad, 'pad_mask'), (pre_ff_on_x, 'not norm2\\(x\\)')])


# --- the block uses the two functions ------------------------------------------------------------------------------
class _CatCache:
    "A layer cache of the protocol `SelfAttention` takes (`update(k, v, pad_mask)`), growing with torch.cat"
    k = v = None
    def update(self, k, v, pad_mask=None):
        self.k, self.v = (k, v) if self.k is None else (torch.cat([self.k, k], 2), torch.cat([self.v, v], 2))
        return self.k, self.v, pad_mask

def test_block_forward_is_the_exercise_functions():
    torch.manual_seed(0)
    x, pad = torch.randn(2, 5, 16), torch.tensor([[1, 1, 1, 1, 1], [0, 0, 1, 1, 1]]).bool()
    for pre in (False, True):
        blk = TransformerBlock(ModelConfig(emb=16, heads=4, prenorm=pre), causal=True).eval()
        f = prenorm_block if pre else postnorm_block
        assert torch.allclose(blk(x, pad), f(blk, x, pad))
        cache = _CatCache()                                  # the cache goes through to the attention
        steps = torch.cat([blk(x[:, :3], cache=cache), blk(x[:, 3:], cache=cache)], 1)
        assert torch.allclose(steps, blk(x), atol=1e-5)


def test_block_params_formula():
    for emb, heads, mult, wide in ((8, 2, 4, False), (30, 5, 3, False), (8, 4, 4, True)):
        c = ModelConfig(emb=emb, heads=heads, mult=mult, wide=wide)
        assert sum(p.numel() for p in TransformerBlock(c).parameters()) == block_params(c)


# --- new wrong answers (issue 11): ignored arguments, hard-coded sizes, dropout, in place, dtype, batch of one --------
def ln_eps_fixed(x, w, b, eps=1e-5): return _ln(x, w, b, 1e-5)                   # ignores eps
def ln_default_1e6(x, w, b, eps=1e-6): return _ln(x, w, b, eps)                  # another default
def ln_e8(x, w, b, eps=1e-5):                                                    # e = 8 hard-coded
    mu = x.mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(((x - mu) ** 2).sum(-1, keepdim=True) / 8 + eps) * w + b
def ln_dim2(x, w, b, eps=1e-5): return _ln(x, w, b, eps, dim=2 if x.dim() > 2 else -1)   # right for 3-D only
def ln_unpack(x, w, b, eps=1e-5):
    bs, t, e = x.shape                                                           # 3-D only
    return _ln(x, w, b, eps)
def ln_inplace(x, w, b, eps=1e-5):
    x -= x.mean(-1, keepdim=True)
    return x / torch.sqrt(x.var(-1, keepdim=True, correction=0) + eps) * w + b
def ln_float(x, w, b, eps=1e-5): return _ln(x.float(), w.float(), b.float(), eps)
def ln_squeeze(x, w, b, eps=1e-5): return _ln(x, w, b, eps).squeeze()

def ln_swapped(x, w, b, eps=1e-5): return _ln(x, b, w, eps)

def test_check_layer_norm_issue11():
    assert_check(check_layer_norm, layer_norm, [
        (ln_eps_fixed, 'eps you are given'), (ln_default_1e6, 'default eps is 1e-5.*you used 1e-06'), (ln_e8, 'hard-coded'), (ln_dim2, 'dim 2'),
        (ln_unpack, 'leading dims'), (ln_inplace, 'in place'), (ln_float, 'dtype torch.float64'), (ln_squeeze, 'squeeze'),
        (ln_swapped, 'swapped')])


def _mlp(emb, hid, *drops):
    "Linear -> ReLU -> Linear with dropouts `drops = (where, module)` inserted at positions 0 (input), 2 (hidden), 4 (end)"
    layers = [nn.Linear(emb, hid), nn.ReLU(), nn.Linear(hid, emb)]
    for where, m in sorted(drops, key=lambda d: -d[0]): layers.insert(where if where < 4 else 3, m)
    return nn.Sequential(*layers)
def ff_drop_hidden(emb, mult=4, dropout=0.): return _mlp(emb, mult * emb, (2, nn.Dropout(dropout)))
def ff_drop_input(emb, mult=4, dropout=0.):  return _mlp(emb, mult * emb, (0, nn.Dropout(dropout)))
def ff_drop_twice(emb, mult=4, dropout=0.):  return _mlp(emb, mult * emb, (2, nn.Dropout(dropout)), (4, nn.Dropout(dropout)))
def ff_keep_prob(emb, mult=4, dropout=0.):   return _mlp(emb, mult * emb, (4, nn.Dropout(1 - dropout)))
def ff_fixed_p(emb, mult=4, dropout=0.):     return _mlp(emb, mult * emb, (4, nn.Dropout(0.1)))
def ff_bare_dropout(emb, mult=4, dropout=0.): return _mlp(emb, mult * emb, (4, nn.Dropout()))       # p = 0.5 whatever dropout is
def ff_half_p(emb, mult=4, dropout=0.):      return _mlp(emb, mult * emb, (4, nn.Dropout(dropout / 2)))
def ff_keep_prob_nonzero(emb, mult=4, dropout=0.):
    return _mlp(emb, mult * emb, (4, nn.Dropout(1 - dropout if dropout else 0.)))
class _NoScale(nn.Module):                                    # zeroes with probability p but forgets 1/(1-p)
    def __init__(self, p): super().__init__(); self.p = p
    def forward(self, x): return x * (torch.rand_like(x) >= self.p) if self.training else x
def ff_no_scale(emb, mult=4, dropout=0.):    return _mlp(emb, mult * emb, (4, _NoScale(dropout)))
def ff_no_bias(emb, mult=4, dropout=0.):
    return nn.Sequential(nn.Linear(emb, mult * emb, bias=False), nn.ReLU(), nn.Linear(mult * emb, emb, bias=False), nn.Dropout(dropout))
def ff_emb_8(emb, mult=4, dropout=0.): return _mlp(8, mult * 8, (4, nn.Dropout(dropout)))
class _Float(nn.Sequential):
    def forward(self, x): return super().forward(x).float()
def ff_float32(emb, mult=4, dropout=0.): return _Float(nn.Linear(emb, mult * emb), nn.ReLU(), nn.Linear(mult * emb, emb), nn.Dropout(dropout))
class _Inplace(nn.Sequential):
    def forward(self, x): x.clamp_(-1, 1); return super().forward(x)     # "keep the inputs small"
def ff_inplace(emb, mult=4, dropout=0.): return _Inplace(nn.Linear(emb, mult * emb), nn.ReLU(), nn.Linear(mult * emb, emb), nn.Dropout(dropout))

class _TokenDrop(nn.Module):                                 # one mask per token, shared by its features
    def __init__(self, p): super().__init__(); self.p = p
    def forward(self, x): return x * (torch.rand(x.shape[:-1] + (1,)) >= self.p) / (1 - self.p) if self.training else x
def ff_token_dropout(emb, mult=4, dropout=0.): return _mlp(emb, mult * emb, (4, _TokenDrop(dropout)))

def test_check_feedforward_issue11():
    assert_check(check_feedforward, feedforward, [
        (ff_drop_hidden, 'sits at the end'), (ff_drop_input, 'sits at the end'), (ff_drop_twice, 'sits at the end'),
        (ff_keep_prob, r'dropout=0 \(the default\)'), (ff_fixed_p, r'dropout=0 \(the default\)'), (ff_bare_dropout, r'dropout=0 \(the default\)'),
        (ff_half_p, 'a fraction 0.2'), (ff_keep_prob_nonzero, 'keep probability'), (ff_no_scale, 'not scaled'),
        (ff_no_bias, 'biases'), (ff_emb_8, 'emb=7'), (ff_float32, 'float64'), (ff_inplace, 'in place'), (ff_token_dropout, 'whole tokens')])


def post_no_do(blk, x, pad_mask=None):
    h = blk.norm1(x + blk.attention(x, pad_mask))
    return blk.norm2(h + blk.ff(h))
def post_do_on_ff(blk, x, pad_mask=None):                    # do on both sublayers
    h = blk.norm1(x + blk.do(blk.attention(x, pad_mask)))
    return blk.norm2(h + blk.do(blk.ff(h)))
def post_do_ff_only(blk, x, pad_mask=None):
    h = blk.norm1(x + blk.attention(x, pad_mask))
    return blk.norm2(h + blk.do(blk.ff(h)))
def post_do_after_norm(blk, x, pad_mask=None):
    h = blk.do(blk.norm1(x + blk.attention(x, pad_mask)))
    return blk.norm2(h + blk.ff(h))
def post_inplace(blk, x, pad_mask=None):
    x += blk.do(blk.attention(x, pad_mask))
    h = blk.norm1(x)
    return blk.norm2(h + blk.ff(h))
def post_squeeze(blk, x, pad_mask=None): return postnorm_block(blk, x, pad_mask).squeeze()
def post_float(blk, x, pad_mask=None): return postnorm_block(blk, x, pad_mask).float()
def post_view16(blk, x, pad_mask=None):                      # emb = 16 hard-coded
    h = blk.norm1(x + blk.do(blk.attention(x, pad_mask)))
    return blk.norm2(h + blk.ff(h.reshape(-1, 16)).view(h.shape))
def post_range2(blk, x, pad_mask=None):                      # a loop over a batch of 2
    return torch.stack([postnorm_block(blk, x[i:i + 1], None if pad_mask is None else pad_mask[i:i + 1])[0] for i in range(2)])

def post_norm1_twice(blk, x, pad_mask=None):
    h = blk.norm1(x + blk.do(blk.attention(x, pad_mask)))
    return blk.norm1(h + blk.ff(h))
def post_second_residual_x(blk, x, pad_mask=None):
    h = blk.norm1(x + blk.do(blk.attention(x, pad_mask)))
    return blk.norm2(x + blk.ff(h))

def test_check_postnorm_block_issue11():
    assert_check(check_postnorm_block, postnorm_block, [
        (post_no_do, 'apply blk.do'), (post_do_on_ff, 'own dropout'), (post_do_ff_only, 'own dropout'),
        (post_do_after_norm, 'not after the norm'), (post_inplace, 'in place'), (post_squeeze, 'squeeze'),
        (post_float, 'dtype torch.float64'), (post_view16, 'raised'), (post_range2, 'shape|raised'),
        (post_norm1_twice, 'its own norm'), (post_second_residual_x, 'second residual adds h')])


def pre_no_do(blk, x, pad_mask=None):
    h = x + blk.attention(blk.norm1(x), pad_mask)
    return h + blk.ff(blk.norm2(h))
def pre_do_on_sum(blk, x, pad_mask=None):
    h = blk.do(x + blk.attention(blk.norm1(x), pad_mask))
    return h + blk.ff(blk.norm2(h))
def pre_do_on_input(blk, x, pad_mask=None):
    h = x + blk.attention(blk.do(blk.norm1(x)), pad_mask)
    return h + blk.ff(blk.norm2(h))
def pre_do_on_ff(blk, x, pad_mask=None):
    h = x + blk.do(blk.attention(blk.norm1(x), pad_mask))
    return h + blk.do(blk.ff(blk.norm2(h)))
def pre_inplace(blk, x, pad_mask=None):
    x += blk.do(blk.attention(blk.norm1(x), pad_mask))
    return x + blk.ff(blk.norm2(x))
def pre_squeeze(blk, x, pad_mask=None): return prenorm_block(blk, x, pad_mask).squeeze(0)
def pre_float(blk, x, pad_mask=None): return prenorm_block(blk, x.float(), pad_mask) if x.dtype == torch.float32 else prenorm_block(blk, x, pad_mask).to(torch.float32)
def pre_unpack(blk, x, pad_mask=None):                       # builds the batch with a fixed number of tokens
    b, t, e = x.shape
    return prenorm_block(blk, x.reshape(b * 5, -1, e).reshape(b, t, e), pad_mask) if t == 5 else x.new_zeros(b, 5, e)

def pre_norm1_twice(blk, x, pad_mask=None):
    h = x + blk.do(blk.attention(blk.norm1(x), pad_mask))
    return h + blk.ff(blk.norm1(h))
def pre_second_residual_x(blk, x, pad_mask=None):
    h = x + blk.do(blk.attention(blk.norm1(x), pad_mask))
    return x + blk.ff(blk.norm2(h))

def test_check_prenorm_block_issue11():
    assert_check(check_prenorm_block, prenorm_block, [
        (pre_no_do, 'apply blk.do'), (pre_do_on_sum, 'not on the sum'), (pre_do_on_input, 'not on its input'),
        (pre_do_on_ff, 'own dropout'), (pre_inplace, 'in place'), (pre_squeeze, 'squeeze'), (pre_float, 'dtype torch.float64'),
        (pre_unpack, 'shape'), (pre_norm1_twice, 'its own norm'), (pre_second_residual_x, 'second residual adds h')])


# --- issue 31: numerically weak answers, training-mode mistakes, valid styles ------------------------------------------
def ln_one_pass(x, w, b, eps=1e-5):                    # var = E[x²] − E[x]²: right on paper, cancels in float32
    mu = x.mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt((x * x).mean(-1, keepdim=True) - mu * mu + eps) * w + b
def ln_clamp_var(x, w, b, eps=1e-5):
    mu, var = x.mean(-1, keepdim=True), x.var(-1, keepdim=True, correction=0)
    return (x - mu) / var.clamp_min(eps).sqrt() * w + b
def ln_clamp_std(x, w, b, eps=1e-5):
    mu, var = x.mean(-1, keepdim=True), x.var(-1, keepdim=True, correction=0)
    return (x - mu) / var.sqrt().clamp_min(eps) * w + b
def ln_var_mean(x, w, b, eps=1e-5):                     # torch.var_mean and rsqrt
    var, mu = torch.var_mean(x, -1, keepdim=True, correction=0)
    return (x - mu) * torch.rsqrt(var + eps) * w + b
def ln_upcast(x, w, b, eps=1e-5):                       # computed in float64, cast back
    xd = x.double(); mu = xd.mean(-1, keepdim=True)
    return ((xd - mu) / ((xd - mu).pow(2).mean(-1, keepdim=True) + eps).sqrt() * w.double() + b.double()).to(x.dtype)
def ln_addcmul(x, w, b, eps=1e-5):                      # the affine step in one op
    mu = x.mean(-1, keepdim=True)
    return torch.addcmul(b, (x - mu) / (x - mu).square().mean(-1, keepdim=True).add(eps).sqrt(), w)

def ln_global(x, w, b, eps=1e-5): return (x - x.mean()) / torch.sqrt(x.var(correction=0) + eps) * w + b   # no dim given

def test_check_layer_norm_issue31():
    assert_check(check_layer_norm, layer_norm, [(ln_global, 'whole tensor'),
        (ln_one_pass, r'cancellation'), (ln_clamp_var, r'clamped the variance'), (ln_clamp_std, r'clamped the standard deviation')])
    for ok in (ln_var_mean, ln_upcast, ln_addcmul): assert_check(check_layer_norm, ok)

class _FF(nn.Module):                                   # a module of its own, dropout through F.dropout and self.training
    def __init__(self, emb, mult=4, dropout=0., act='relu'):
        super().__init__()
        self.l1, self.l2, self.p = nn.Linear(emb, mult * emb), nn.Linear(mult * emb, emb), dropout
        self.act = {'relu': nn.ReLU, 'gelu': nn.GELU, 'gelu_tanh': lambda: nn.GELU(approximate='tanh')}[act]()
    def forward(self, x): return F.dropout(self.l2(self.act(self.l1(x))), self.p, self.training)
def ff_od(emb, mult=4, dropout=0., act='relu'):           # nn.Sequential from an OrderedDict, named layers
    from collections import OrderedDict
    from transformers_scratch.block import ACTIVATIONS
    return nn.Sequential(OrderedDict(fc=nn.Linear(emb, mult * emb), act=ACTIVATIONS[act](), proj=nn.Linear(mult * emb, emb),
                                     drop=nn.Dropout(dropout)))
def ff_twice_end(emb, mult=4, dropout=0., act='relu'):    # two dropouts at the end
    return nn.Sequential(*feedforward(emb, mult, dropout, act), nn.Dropout(dropout))

def test_check_feedforward_issue31():
    assert_check(check_feedforward, feedforward, [(ff_twice_end, 'dropout twice')])
    for ok in (_FF, ff_od): assert_check(check_feedforward, ok)

def post_extra_dropout(blk, x, pad_mask=None, cache=None):   # a dropout of its own on h, off in eval mode
    h = blk.norm1(x + blk.do(blk.attention(x, pad_mask, cache)))
    h = F.dropout(h, blk.config.dropout, blk.training)
    return blk.norm2(h + blk.ff(h))
def post_always_dropout(blk, x, pad_mask=None, cache=None):  # F.dropout without training=: on in eval mode too
    h = blk.norm1(x + F.dropout(blk.do(blk.attention(x, pad_mask, cache)), 0.1))
    return blk.norm2(h + blk.ff(h))
def post_eval_inside(blk, x, pad_mask=None, cache=None):     # switches the block to eval mode "to be safe"
    blk.eval()
    return postnorm_block(blk, x, pad_mask, cache)
def post_steps(blk, x, pad_mask=None, cache=None):           # in named steps, torch.add for the residuals
    a = blk.do(blk.attention(x, pad_mask=pad_mask, cache=cache))
    h = blk.norm1(torch.add(x, a))
    return blk.norm2(torch.add(h, blk.ff(h)))
def pre_extra_dropout(blk, x, pad_mask=None, cache=None):
    h = x + blk.do(blk.attention(blk.norm1(x), pad_mask, cache))
    return h + F.dropout(blk.ff(blk.norm2(h)), blk.config.dropout, blk.training)
def pre_eval_inside(blk, x, pad_mask=None, cache=None):
    blk.eval()
    return prenorm_block(blk, x, pad_mask, cache)
def pre_steps(blk, x, pad_mask=None, cache=None):
    n1 = blk.norm1(x)
    h = x.add(blk.do(blk.attention(n1, pad_mask=pad_mask, cache=cache)))
    return h.add(blk.ff(blk.norm2(h)))
def pre_loop(blk, x, pad_mask=None, cache=None):             # the two sublayers as a loop over (norm, sublayer)
    for norm, f in ((blk.norm1, lambda z: blk.do(blk.attention(z, pad_mask, cache))), (blk.norm2, blk.ff)): x = x + f(norm(x))
    return x

def test_check_blocks_issue31():
    assert_check(check_postnorm_block, postnorm_block, [
        (post_extra_dropout, 'in training mode'), (post_always_dropout, 'random in eval mode'), (post_eval_inside, r'mode')])
    assert_check(check_prenorm_block, prenorm_block, [(pre_extra_dropout, 'in training mode'), (pre_eval_inside, r'mode')])
    assert_check(check_postnorm_block, post_steps)
    assert_check(check_postnorm_block, lambda blk, x, pad_mask=None, cache=None: blk.norm2(
        (h := blk.norm1(x + blk.do(blk.attention(x, pad_mask, cache)))) + blk.ff(h)))
    for ok in (pre_steps, pre_loop): assert_check(check_prenorm_block, ok)

class _FFList(nn.Module):                               # the layers in a ModuleList, run in a loop
    def __init__(self, emb, mult=4, dropout=0., act='relu'):
        super().__init__()
        from transformers_scratch.block import ACTIVATIONS
        self.layers = nn.ModuleList([nn.Linear(emb, mult * emb), ACTIVATIONS[act](), nn.Linear(mult * emb, emb), nn.Dropout(dropout)])
    def forward(self, x):
        for l in self.layers: x = l(x)
        return x
def post_loop(blk, x, pad_mask=None, cache=None):          # (sublayer, norm) pairs in a loop
    for f, norm in ((lambda z: blk.do(blk.attention(z, pad_mask, cache)), blk.norm1), (blk.ff, blk.norm2)): x = norm(x + f(x))
    return x

def test_more_valid_styles_issue31():
    assert_check(check_feedforward, _FFList)
    assert_check(check_postnorm_block, post_loop)
    assert_check(check_prenorm_block, lambda blk, x, pad_mask=None, cache=None: (lambda h: torch.add(h, blk.ff(blk.norm2(h))))(
        torch.add(x, blk.do(blk.attention(blk.norm1(x), pad_mask=pad_mask, cache=cache)))))


# --- issue 31, second audit: dtype and precision, sharper hints, F.dropout with blk.do's rate -------------------------
def ln_float32(x, w, b, eps=1e-5):                           # computes and returns float32 whatever x is
    x = x.float(); mu = x.mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(x.var(-1, keepdim=True, correction=0) + eps) * w + b
def ln_float_out(x, w, b, eps=1e-5): return layer_norm(x, w, b, eps).float()
def ln_half_step(x, w, b, eps=1e-5): return layer_norm(x, w, b, eps).half().to(x.dtype)
def ln_bf16_step(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdim=True); return ((x - mu) / torch.sqrt(x.var(-1, keepdim=True, correction=0) + eps)).bfloat16().to(x.dtype) * w + b
def ln_bias_first(x, w, b, eps=1e-5): return (F.layer_norm(x, x.shape[-1:], None, None, eps) + b) * w
def ln_last_two(x, w, b, eps=1e-5):
    mu, var = x.mean((-2, -1), keepdim=True), x.var((-2, -1), keepdim=True, correction=0)
    return (x - mu) / torch.sqrt(var + eps) * w + b
def ln_f32_compute(x, w, b, eps=1e-5):                    # valid: upcast for the statistics, x's dtype at the end
    var, mu = torch.var_mean(x.float(), -1, keepdim=True, correction=0)
    return ((x.float() - mu) * torch.rsqrt(var + eps)).to(x.dtype) * w + b
def ln_centred(x, w, b, eps=1e-5):
    d = x - x.mean(-1, keepdim=True); return d / (d.pow(2).mean(-1, keepdim=True) + eps).sqrt() * w + b

def test_check_layer_norm_dtype_precision():
    assert_check(check_layer_norm, layer_norm, [(ln_float32, 'bfloat16, got torch.float32'), (ln_float_out, 'dtype'),
                                                (ln_half_step, 'lower precision'), (ln_bf16_step, 'lower precision'),
                                                (ln_bias_first, 'bias .β. before scaling'), (ln_last_two, 'last two dims')])
    for ok in (ln_f32_compute, ln_centred, lambda x, w, b, eps=1e-5: F.layer_norm(x, x.shape[-1:], w, b, eps)):
        assert_check(check_layer_norm, ok)

def ff_act_end(emb, mult=4, dropout=0., act='relu'):
    return nn.Sequential(nn.Linear(emb, mult * emb), ACTIVATIONS[act](), nn.Linear(mult * emb, emb), ACTIVATIONS[act](), nn.Dropout(dropout))
def ff_act_first(emb, mult=4, dropout=0., act='relu'):
    return nn.Sequential(ACTIVATIONS[act](), nn.Linear(emb, mult * emb), ACTIVATIONS[act](), nn.Linear(mult * emb, emb), nn.Dropout(dropout))

def test_check_feedforward_activation_place():
    assert_check(check_feedforward, feedforward, [(ff_act_end, 'went through the ReLU too'), (ff_act_first, 'to the input too')])

def post_fdrop(blk, x, pad_mask=None, cache=None):        # valid: F.dropout with blk.do's rate and mode
    h = blk.norm1(x + F.dropout(blk.attention(x, pad_mask, cache), blk.do.p, blk.training)); return blk.norm2(h + blk.ff(h))
def pre_fdrop(blk, x, pad_mask=None, cache=None):
    h = x + F.dropout(blk.attention(blk.norm1(x), pad_mask, cache), p=blk.do.p, training=blk.training); return h + blk.ff(blk.norm2(h))
def post_fdrop_on(blk, x, pad_mask=None, cache=None):     # always on, in eval too
    h = blk.norm1(x + F.dropout(blk.attention(x, pad_mask, cache), blk.do.p)); return blk.norm2(h + blk.ff(h))
def pre_fdrop_on(blk, x, pad_mask=None, cache=None):
    h = x + F.dropout(blk.attention(blk.norm1(x), pad_mask, cache), blk.do.p, True); return h + blk.ff(blk.norm2(h))
def post_fdrop_input(blk, x, pad_mask=None, cache=None):  # F.dropout on the attention's input
    h = blk.norm1(x + blk.attention(F.dropout(x, blk.do.p, blk.training), pad_mask, cache)); return blk.norm2(h + blk.ff(h))
def pre_fdrop_ff(blk, x, pad_mask=None, cache=None):      # F.dropout on the MLP's output too
    h = x + F.dropout(blk.attention(blk.norm1(x), pad_mask, cache), blk.do.p, blk.training)
    return h + F.dropout(blk.ff(blk.norm2(h)), blk.do.p, blk.training)
def post_do_input(blk, x, pad_mask=None, cache=None):
    h = blk.norm1(x + blk.attention(blk.do(x), pad_mask, cache)); return blk.norm2(h + blk.ff(h))
def post_do_twice(blk, x, pad_mask=None, cache=None):
    h = blk.norm1(x + blk.do(blk.do(blk.attention(x, pad_mask, cache)))); return blk.norm2(h + blk.ff(h))

def test_check_blocks_functional_dropout():
    for ok in (post_fdrop,): assert_check(check_postnorm_block, ok)
    assert_check(check_prenorm_block, pre_fdrop)
    assert_check(check_postnorm_block, postnorm_block, [(post_fdrop_on, 'random in eval mode.*training=blk.training'),
                                                        (post_fdrop_input, "dropout is on the attention's input"),
                                                        (post_do_input, "not on its input"), (post_do_twice, 'twice')])
    assert_check(check_prenorm_block, prenorm_block, [(pre_fdrop_on, 'random in eval mode'),
                                                      (pre_fdrop_ff, "MLP's output too")])

def post_fdrop_do_mode(blk, x, pad_mask=None, cache=None):   # valid: the mode read from blk.do itself
    h = blk.norm1(x + F.dropout(blk.attention(x, pad_mask, cache), blk.do.p, blk.do.training)); return blk.norm2(h + blk.ff(h))
def pre_fdrop_do_mode(blk, x, pad_mask=None, cache=None):
    h = x + F.dropout(blk.attention(blk.norm1(x), pad_mask, cache), blk.do.p, blk.do.training); return h + blk.ff(blk.norm2(h))

def test_check_blocks_dropout_mode_from_do():
    assert_check(check_postnorm_block, post_fdrop_do_mode)
    assert_check(check_prenorm_block, pre_fdrop_do_mode)


# the block's own dropout rate read from its config (blk.config.dropout, = blk.do.p): valid, it was refused with
# "apply blk.do"; a constant rate is not, and an answer without any dropout still gets "apply blk.do"
def post_fdrop_config(blk, x, pad_mask=None, cache=None):
    h = blk.norm1(x + F.dropout(blk.attention(x, pad_mask, cache), blk.config.dropout, blk.training)); return blk.norm2(h + blk.ff(h))
def pre_fdrop_config(blk, x, pad_mask=None, cache=None):
    h = x + F.dropout(blk.attention(blk.norm1(x), pad_mask, cache), blk.config.dropout, blk.training); return h + blk.ff(blk.norm2(h))
def pre_fdrop_const(blk, x, pad_mask=None, cache=None):
    h = x + F.dropout(blk.attention(blk.norm1(x), pad_mask, cache), 0.1, blk.training); return h + blk.ff(blk.norm2(h))
def pre_no_dropout(blk, x, pad_mask=None, cache=None):
    h = x + blk.attention(blk.norm1(x), pad_mask, cache); return h + blk.ff(blk.norm2(h))

def test_check_blocks_dropout_rate_from_config():
    assert_check(check_postnorm_block, post_fdrop_config)
    assert_check(check_prenorm_block, pre_fdrop_config)
    assert_check(check_prenorm_block, prenorm_block, [(pre_fdrop_const, 'in training mode .* differs from the formula'),
                                                      (pre_no_dropout, 'apply blk.do')])


# the MLP's dropout written by hand with a mask shared by the tokens or by the batch: the second was accepted, the
# first got a rate hint (7 features: its rate varies)
class _FFMask(nn.Module):
    def __init__(self, emb, mult=4, dropout=0., act='relu', shape=None):
        super().__init__()
        self.l1, self.act, self.l2, self.p, self.shape = nn.Linear(emb, mult * emb), ACTIVATIONS[act](), nn.Linear(mult * emb, emb), dropout, shape
    def forward(self, x):
        y = self.l2(self.act(self.l1(x)))
        if self.training and self.p: y = y * (torch.rand(self.shape(y), device=y.device) >= self.p) / (1 - self.p)
        return y
def ff_own_mask(*a):       return _FFMask(*a, shape=lambda y: y.shape)          # valid: one draw per output
def ff_mask_per_feature(*a): return _FFMask(*a, shape=lambda y: y.shape[-1:])
def ff_mask_2d(*a):        return _FFMask(*a, shape=lambda y: y.shape[-2:])     # (t, e) for the whole batch

def test_check_feedforward_dropout_per_output():
    assert_check(check_feedforward, ff_own_mask)
    assert_check(check_feedforward, feedforward, [(ff_mask_per_feature, 'shared by the tokens'),
                                                  (ff_mask_2d, 'shared by the elements of the batch')])
