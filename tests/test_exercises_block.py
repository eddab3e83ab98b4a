"Each check in lesson 05 accepts the solution and rejects the stub and the typical wrong answers with the right hint."
import torch, torch.nn as nn, torch.nn.functional as F
from transformers_scratch.core import TODO, assert_check
from transformers_scratch.block import *


def stub(*args, **kwargs): raise TODO("not yet")


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

def test_check_feedforward():
    assert_check(check_feedforward, feedforward, [
        (stub, 'not solved'), (ff_linear, 'linear'), (ff_hidden_emb, 'mult\\*emb = 32'), (ff_fixed_4, 'mult=2'),
        (ff_gelu, 'ReLU'), (ff_no_dropout, 'nn.Dropout'), (ff_one_layer, 'two nn.Linear'), (ff_relu_last, 'differs'),
        (ff_functional_dropout, 'eval mode'), (ff_not_module, 'nn.Module')])


# --- post-norm block -----------------------------------------------------------------------------------------------
def post_no_residual(blk, x, pad_mask=None):
    h = blk.norm1(blk.attention(x, pad_mask))
    return blk.norm2(blk.ff(h))
def post_no_ff_residual(blk, x, pad_mask=None):
    h = blk.norm1(x + blk.attention(x, pad_mask))
    return blk.norm2(blk.ff(h))
def post_as_pre(blk, x, pad_mask=None):                      # norm before the sublayer
    h = x + blk.attention(blk.norm1(x), pad_mask)
    return h + blk.ff(blk.norm2(h))
def post_norm_branch(blk, x, pad_mask=None):                 # norm on the sublayer output only
    h = x + blk.norm1(blk.attention(x, pad_mask))
    return h + blk.norm2(blk.ff(h))
def post_swapped(blk, x, pad_mask=None):
    h = blk.norm2(x + blk.attention(x, pad_mask))
    return blk.norm1(h + blk.ff(h))
def post_ff_on_x(blk, x, pad_mask=None):
    h = blk.norm1(x + blk.attention(x, pad_mask))
    return blk.norm2(h + blk.ff(x))
def post_no_pad(blk, x, pad_mask=None):
    h = blk.norm1(x + blk.attention(x))
    return blk.norm2(h + blk.ff(h))
def post_one_norm(blk, x, pad_mask=None):
    h = x + blk.attention(x, pad_mask)
    return blk.norm2(h + blk.ff(h))

def test_check_postnorm_block():
    assert_check(check_postnorm_block, postnorm_block, [
        (stub, 'not solved'), (post_no_residual, 'residuals are missing'), (post_no_ff_residual, "MLP's residual"),
        (post_as_pre, 'pre-norm order'), (post_norm_branch, "sublayer's output only"), (post_swapped, 'swapped'),
        (post_ff_on_x, 'not x'), (post_no_pad, 'pad_mask'), (post_one_norm, 'first norm is missing')])


# --- pre-norm block ------------------------------------------------------------------------------------------------
def pre_as_post(blk, x, pad_mask=None): return postnorm_block(blk, x, pad_mask)
def pre_no_residual(blk, x, pad_mask=None):
    return blk.ff(blk.norm2(blk.attention(blk.norm1(x), pad_mask)))
def pre_no_ff_residual(blk, x, pad_mask=None):
    h = x + blk.attention(blk.norm1(x), pad_mask)
    return blk.ff(blk.norm2(h))
def pre_normed_residual(blk, x, pad_mask=None):              # x = norm(x); x = x + f(x)
    x = blk.norm1(x); x = x + blk.attention(x, pad_mask)
    x = blk.norm2(x); return x + blk.ff(x)
def pre_swapped(blk, x, pad_mask=None):
    h = x + blk.attention(blk.norm2(x), pad_mask)
    return h + blk.ff(blk.norm1(h))
def pre_final_norm(blk, x, pad_mask=None):
    return blk.norm2(prenorm_block(blk, x, pad_mask))
def pre_no_pad(blk, x, pad_mask=None): return prenorm_block(blk, x)
def pre_ff_on_x(blk, x, pad_mask=None):
    h = x + blk.attention(blk.norm1(x), pad_mask)
    return h + blk.ff(blk.norm2(x))

def test_check_prenorm_block():
    assert_check(check_prenorm_block, prenorm_block, [
        (stub, 'not solved'), (pre_as_post, 'post-norm order'), (pre_no_residual, 'residuals are missing'),
        (pre_no_ff_residual, "MLP's residual"), (pre_normed_residual, 'carry x itself'), (pre_swapped, 'swapped'),
        (pre_final_norm, 'no norm at the end'), (pre_no_pad, 'pad_mask'), (pre_ff_on_x, 'not norm2\\(x\\)')])


# --- the block uses the two functions ------------------------------------------------------------------------------
def test_block_forward_is_the_exercise_functions():
    torch.manual_seed(0)
    x, pad = torch.randn(2, 5, 16), torch.tensor([[1, 1, 1, 1, 1], [0, 0, 1, 1, 1]]).bool()
    for pre in (False, True):
        blk = TransformerBlock(16, 4, causal=True, prenorm=pre).eval()
        f = prenorm_block if pre else postnorm_block
        assert torch.allclose(blk(x, pad), f(blk, x, pad))
        cache = {}                                           # the cache goes through to the attention
        steps = torch.cat([blk(x[:, :3], cache=cache), blk(x[:, 3:], cache=cache)], 1)
        assert torch.allclose(steps, blk(x), atol=1e-5)


def test_block_params_formula():
    for emb, heads, mult, wide in ((8, 2, 4, False), (30, 5, 3, False), (8, 4, 4, True)):
        assert sum(p.numel() for p in TransformerBlock(emb, heads, mult, wide=wide).parameters()) == block_params(emb, heads, mult, wide)
