"Lesson 29 (inside a trained model): the attention-only block, the recording and ablation hooks, and the checks of its exercises."
import pytest, torch
from transformers_scratch.config import ModelConfig, ConfigError
from transformers_scratch.block import TransformerBlock, block_params

pytestmark = pytest.mark.usefixtures('one_thread')

@pytest.mark.parametrize('prenorm', [True, False])
def test_attention_only_block_adds_only_the_attention(prenorm):
    "`mlp='none'`: the block is its attention sublayer alone (pre-norm: x + attention(norm1(x)); post-norm: norm2(norm1(...)))"
    torch.manual_seed(0)
    c = ModelConfig(emb=16, heads=2, depth=2, seq_len=8, n_tokens=10, mlp='none', prenorm=prenorm)
    blk = TransformerBlock(c, causal=True).eval()
    x = torch.randn(3, 8, 16)
    h = x + blk.attention(blk.norm1(x)) if prenorm else blk.norm2(blk.norm1(x + blk.attention(x)))
    assert torch.equal(blk(x), h)
    assert block_params(c) == sum(p.numel() for p in blk.parameters())
    with pytest.raises(ConfigError, match='mlp'): ModelConfig(mlp='None')


# --- the recording and ablation tools -------------------------------------------------------------------------------
import torch.nn.functional as F
from transformers_scratch.checks.toolkit import assert_check
from transformers_scratch.models import GenerationTransformer
from transformers_scratch.interpret import (repeated_tokens, token_losses, half_losses, record, hooked, ablating, head_means, train_induction,
                                            induction_score, prev_token_score, ablated_loss, logit_lens, INDUCTION_QUICK)
from transformers_scratch.checks.interpret import (check_induction_score, check_prev_token_score, check_ablated_loss,
                                                   check_logit_lens)
from conftest import stub

def _hooks(m): return sum(len(mod._forward_hooks) + len(mod._forward_pre_hooks) for mod in m.modules())

@pytest.fixture(scope='module')
def tiny():
    torch.manual_seed(0)
    m = GenerationTransformer(ModelConfig(emb=16, heads=4, depth=2, seq_len=20, n_tokens=11, pos='rope', mlp='none')).eval()
    return m, repeated_tokens(3, 8, 11, torch.Generator().manual_seed(1))

def test_record_sees_the_normal_forward_and_leaves_nothing(tiny):
    m, x = tiny
    with torch.no_grad(): want = m(x[:, :-1])
    rec = record(m, x[:, :-1])
    assert torch.equal(rec.logits, want) and _hooks(m) == 0
    assert [w.shape for w in rec.attn] == [(3, 4, 15, 15)] * 2 and len(rec.resid) == 3
    h = m.trunk.token_emb(x[:, :-1])                                                  # RoPE: no position embedding
    for i, blk in enumerate(m.blocks):
        assert torch.allclose(rec.resid[i], h); h = blk(h)
    assert torch.allclose(m.toprobs(m.norm(rec.resid[-1])), want, atol=1e-6)
    with torch.no_grad(): assert torch.equal(m(x[:, :-1]), want)                     # nothing changed after

def test_hooks_are_removed_on_an_error(tiny):
    m, x = tiny
    with pytest.raises(RuntimeError, match='boom'):
        with hooked(forward=[(m.blocks[0], lambda *a: None)], pre=[(m.blocks[1], lambda *a: None)]): raise RuntimeError('boom')
    assert _hooks(m) == 0

def test_ablating_one_head_changes_only_that_head(tiny):
    "Zeroing head j changes block l's attention output by exactly unifyheads' columns of head j, and nothing before block l"
    m, x = tiny
    s, xin = m.config.head_size, x[:, :-1]
    base = record(m, xin)
    for l, hd in ((0, 1), (1, 3)):
        with ablating(m, [(l, hd)]): rec = record(m, xin)
        for i in range(l + 1): assert torch.equal(rec.resid[i], base.resid[i])        # before the block: untouched
        for i in range(l + 1): assert torch.equal(rec.attn[i], base.attn[i])           # the block's own weights too
        a = m.blocks[l].attention
        heads_out = {}
        with hooked(pre=[(a.unifyheads, lambda mod, inp: heads_out.setdefault('z', inp[0]))]), torch.no_grad(): m(xin)
        lost = heads_out['z'][..., hd * s:(hd + 1) * s] @ a.unifyheads.weight[:, hd * s:(hd + 1) * s].T
        assert torch.allclose(rec.resid[l + 1], base.resid[l + 1] - lost, atol=1e-5)
    assert _hooks(m) == 0
    with torch.no_grad(): assert torch.equal(m(xin), base.logits)

def test_mean_ablation_and_ablated_loss_agree(tiny):
    m, x = tiny
    with ablating(m, [(1, 2)]): z = half_losses(token_losses(m, x), 8)[1].item()
    assert abs(z - ablated_loss(m, x, 8, 1, 2)) < 1e-6
    means = head_means(m, x[:, :-1])
    assert [mu.shape for mu in means] == [(16,)] * 2
    with ablating(m, [(0, 0), (1, 1)], means): mz = token_losses(m, x)
    assert not torch.equal(mz, token_losses(m, x))
    with pytest.raises(ValueError, match='heads'):
        with ablating(m, [(0, 4)]): pass
    assert _hooks(m) == 0

def test_the_normal_path_has_no_hooks_and_no_cost():
    "Recording is opt-in: a model that was never recorded has no hooks, and its forward is the library's"
    m = GenerationTransformer(INDUCTION_QUICK.model)
    assert _hooks(m) == 0 and all(type(b.ff).__name__ == 'NoMLP' for b in m.blocks)


# --- the checks: the solution and valid answers in other styles pass; the stub and typical mistakes are named --------
def ind_loop(w, t):
    n = w.size(-1)
    return torch.stack([w[:, :, i, i - t + 1] for i in range(t, n)], -1).mean(-1).mean(0)
def ind_gather(w, t):
    n = w.size(-1)
    q = torch.arange(t, n, device=w.device)
    return w[:, :, q, q - t + 1].mean((0, 2))
def ind_mask(w, t):
    n = w.size(-1)
    i = torch.arange(n, device=w.device)
    m = (i[:, None] - i[None] == t - 1) & (i[:, None] >= t)
    return (w * m).sum((-2, -1)).mean(0) / m.sum()
def ind_slice(w, t): return w[..., t:, 1:].diagonal(0, -2, -1).mean((0, -1))
def ind_rows_then_diag(w, t): return w[..., t:, :].diagonal(1, -2, -1).mean((0, -1))
def ind_einsum_diag(w, t):
    n = w.size(-1)
    return torch.einsum('bhii->h', w[:, :, t:, 1:n - t + 1]) / (w.size(0) * (n - t))
def ind_where(w, t):
    n = w.size(-1)
    i = torch.arange(n, device=w.device)
    sel = torch.where((i[:, None] - i[None] == t - 1) & (i[:, None] >= t), w, torch.zeros_like(w))
    return sel.sum((0, -2, -1)) / (w.size(0) * (n - t))
def ind_batch_first(w, t): return w.mean(0).diagonal(-(t - 1), -2, -1)[..., 1:].mean(-1)
def ind_einsum(w, t):
    n = w.size(-1)
    sel = torch.zeros(n, n, dtype=w.dtype, device=w.device)
    sel[torch.arange(t, n), torch.arange(1, n - t + 1)] = 1
    return torch.einsum('bhqk,qk->h', w, sel) / (w.size(0) * (n - t))

def ind_self(w, t): return w.diagonal(-t, -2, -1).mean((0, -1))
def ind_plus(w, t): return w.diagonal(-(t - 2), -2, -1)[..., 2:].mean((0, -1))
def ind_from_end_of_first(w, t): return w.diagonal(-(t - 1), -2, -1).mean((0, -1))
def ind_upper(w, t): return w.diagonal(t - 1, -2, -1).mean((0, -1))
def ind_heads(w, t): return w.diagonal(-(t - 1), -2, -1)[..., 1:].mean((1, -1))
def ind_sum(w, t): return w.diagonal(-(t - 1), -2, -1)[..., 1:].sum(-1).mean(0)
def ind_keys_rows(w, t): return w.transpose(-2, -1).diagonal(-(t - 1), -2, -1)[..., 1:].mean((0, -1))
def ind_fixed_t(w, t): return w.diagonal(-7, -2, -1)[..., 1:].mean((0, -1))
def ind_first_half(w, t): return w[..., :t, :t].diagonal(-1, -2, -1).mean((0, -1))
def ind_list(w, t): return w.diagonal(-(t - 1), -2, -1)[..., 1:].mean((0, -1)).tolist()
def ind_bsum(w, t): return w.diagonal(-(t - 1), -2, -1)[..., 1:].mean(-1).sum(0)
def ind_cpu_mask(w, t):                      # a mask made on the CPU: on a GPU, w * m fails
    n = w.size(-1)
    i = torch.arange(n)
    m = ((i[:, None] - i[None] == t - 1) & (i[:, None] >= t)).to(w.dtype)
    return (w * m).sum((-2, -1)).mean(0) / m.sum()
def ind_median(w, t): return w.diagonal(-(t - 1), -2, -1)[..., 1:].median(-1).values.mean(0)
def ind_over_t(w, t): return w.diagonal(-(t - 1), -2, -1)[..., 1:].sum(-1).mean(0) / t

def test_induction_score():
    assert_check(check_induction_score, induction_score, [
        (stub, 'not solved'), (ind_self, r'earlier occurrence .* itself'), (ind_plus, 'off by one: key i - t \\+ 2'),
        (ind_from_end_of_first, 'query t - 1'), (ind_upper, 'every score is 0'), (ind_heads, 'averaged over the heads'),
        (ind_sum, "don't sum"), (ind_keys_rows, 'every score is 0'), (ind_fixed_t, 'hard-coded t|wrong diagonal'),
        (ind_first_half, 'first half|wrong diagonal'), (ind_list, 'return a tensor'), (ind_bsum, "don't sum"),
        (lambda w, t: w.diagonal(-(t + 1), -2, -1).mean((0, -1)), r'\*before\* the earlier occurrence'),
        (ind_cpu_mask, 'made on the CPU'), (ind_median, 'differ'), (ind_over_t, 'differ')])
    for ok in (ind_loop, ind_gather, ind_mask, ind_slice, ind_einsum, ind_rows_then_diag, ind_einsum_diag, ind_where, ind_batch_first):
        assert_check(check_induction_score, ok)

def prev_loop(w): return torch.stack([w[:, :, i, i - 1] for i in range(1, w.size(-1))], -1).mean((0, -1))
def prev_slice(w): return w[..., 1:, :-1].diagonal(0, -2, -1).mean((0, -1))
def prev_gather(w):
    i = torch.arange(1, w.size(-1), device=w.device)
    return w[:, :, i, i - 1].mean((0, -1))
def prev_roll(w):
    n = w.size(-1)
    m = torch.eye(n, dtype=torch.bool, device=w.device).roll(-1, -1) & ~torch.eye(n, n, dtype=torch.bool, device=w.device).roll(-1, -1).triu()
    return (w * m).sum((-2, -1)).mean(0) / (n - 1)

def prev_einsum(w): return torch.einsum('bhii->h', w[..., 1:, :-1]) / (w.size(0) * (w.size(-1) - 1))
def prev_where(w):
    n = w.size(-1)
    i = torch.arange(n, device=w.device)
    return torch.where(i[:, None] - i[None] == 1, w, 0.).sum((0, -2, -1)) / (w.size(0) * (n - 1))

def prev_cpu_mask(w):                        # a mask made on the CPU
    n = w.size(-1)
    m = torch.diag(torch.ones(n - 1, dtype=w.dtype), -1)
    return (w * m).sum((-2, -1)).mean(0) / (n - 1)
def prev_second_half(w): return w.diagonal(-1, -2, -1)[..., w.size(-1) // 2:].mean((0, -1))
def prev_self(w): return w.diagonal(0, -2, -1).mean((0, -1))
def prev_upper(w): return w.diagonal(1, -2, -1).mean((0, -1))
def prev_two(w): return w.diagonal(-2, -2, -1).mean((0, -1))
def prev_with_q0(w): return F.pad(w.diagonal(-1, -2, -1), (1, 0)).mean((0, -1))
def prev_heads(w): return w.diagonal(-1, -2, -1).mean((1, -1))
def prev_sum(w): return w.diagonal(-1, -2, -1).sum(-1).mean(0)
def prev_wrong_dims(w): return w.diagonal(-1).mean((0, -1))

def test_prev_token_score():
    assert_check(check_prev_token_score, prev_token_score, [
        (stub, 'not solved'), (prev_self, 'the token itself'), (prev_upper, 'every score is 0'), (prev_two, 'two tokens back'),
        (prev_with_q0, 'query 0'), (prev_heads, 'averaged over the heads'), (prev_sum, "don't sum"),
        (prev_wrong_dims, r'\(h,\)|shape|raised'), (lambda w: w.diagonal(-1, -2, -1)[..., 1:].mean((0, -1)), 'query 1'),
        (prev_cpu_mask, 'made on the CPU'), (prev_second_half, 'differ')])
    for ok in (prev_loop, prev_slice, prev_gather, prev_roll, prev_einsum, prev_where): assert_check(check_prev_token_score, ok)


def _zero_pre(model, layer, head, zero):
    return model.blocks[layer].attention.unifyheads.register_forward_pre_hook(zero)

def abl_manual(model, x, t, layer, head):                 # a hook by hand, try/finally, the model's mode restored
    s = model.config.head_size
    def zero(mod, inp):
        z = inp[0].clone(); z[..., head * s:(head + 1) * s] = 0; return (z,)
    h, was = _zero_pre(model, layer, head, zero), model.training
    try:
        model.eval()
        with torch.no_grad(): logits = model(x[:, :-1])
    finally: h.remove(); model.train(was)
    return F.cross_entropy(logits[:, t:].reshape(-1, logits.size(-1)), x[:, t + 1:].reshape(-1))
def abl_mask(model, x, t, layer, head):                   # multiplies by a mask of ones with the head's columns 0
    s = model.config.head_size
    keep = torch.ones(model.config.heads * s, device=x.device); keep[head * s:(head + 1) * s] = 0
    h = _zero_pre(model, layer, head, lambda mod, inp: (inp[0] * keep,))
    try: return half_losses(token_losses(model, x), t)[1]
    finally: h.remove()
def abl_view(model, x, t, layer, head):                   # views the heads apart, as split_heads does
    H = model.config.heads
    def zero(mod, inp):
        z = inp[0].unflatten(-1, (H, -1)).clone(); z[..., head, :] = 0; return (z.flatten(-2),)
    h = _zero_pre(model, layer, head, zero)
    try: return half_losses(token_losses(model, x), t)[1].item()
    finally: h.remove()
def abl_weights_restored(model, x, t, layer, head):       # zeroes unifyheads' columns of the head, then puts them back
    u, s = model.blocks[layer].attention.unifyheads, model.config.head_size
    keep = u.weight.detach().clone()
    with torch.no_grad(): u.weight[:, head * s:(head + 1) * s] = 0
    try: return half_losses(token_losses(model, x), t)[1].item()
    finally:
        with torch.no_grad(): u.weight.copy_(keep)
def abl_values(model, x, t, layer, head):                 # zeroes the head's values: what it writes is 0 as well
    a, s = model.blocks[layer].attention, model.config.head_size
    def zero(mod, inp, out): out = out.clone(); out[..., head * s:(head + 1) * s] = 0; return out
    h = a.tovalues.register_forward_hook(zero)
    try: return half_losses(token_losses(model, x), t)[1].item()
    finally: h.remove()
def abl_in_place(model, x, t, layer, head):               # the pre-hook zeroes its input in place and returns nothing
    s = model.config.head_size
    def zero(mod, inp): inp[0][..., head * s:(head + 1) * s] = 0
    h = _zero_pre(model, layer, head, zero)
    try: return half_losses(token_losses(model, x), t)[1].item()
    finally: h.remove()
def abl_library(model, x, t, layer, head):
    with ablating(model, [(layer, head)]): return half_losses(token_losses(model, x), t)[1]

def _abl(model, x, t, layer, head, zero_out=False, interleave=False, layer_shift=0, lo=None, hi=None, evalmode=True, remove=True, inplace=False):
    s, H = model.config.head_size, model.config.heads
    a = model.blocks[layer - layer_shift].attention
    if inplace:
        with torch.no_grad(): a.unifyheads.weight[:, head * s:(head + 1) * s] = 0
    def zero(z):
        z = z.clone()
        if interleave: z[..., head::H] = 0
        else: z[..., head * s:(head + 1) * s] = 0
        return z
    h = (a.register_forward_hook(lambda mod, inp, out: zero(out)) if zero_out else
         a.unifyheads.register_forward_pre_hook(lambda mod, inp: (zero(inp[0]),)))
    try:
        if evalmode: ls = token_losses(model, x)
        else:
            with torch.no_grad(): z = model(x[:, :-1])
            ls = F.cross_entropy(z.transpose(1, 2), x[:, 1:], reduction='none')
    finally:
        if remove: h.remove()
    return ls[:, t if lo is None else lo:hi].mean().item()

def abl_queries(model, x, t, layer, head):              # zeroes where the head looks, not what it writes
    a, s = model.blocks[layer].attention, model.config.head_size
    w = a.toqueries.weight.detach().clone()
    with torch.no_grad(): a.toqueries.weight[head * s:(head + 1) * s] = 0
    try: return half_losses(token_losses(model, x), t)[1].item()
    finally:
        with torch.no_grad(): a.toqueries.weight.copy_(w)
def abl_keys(model, x, t, layer, head):                 # zeroes where the head looks (its keys): uniform attention
    a, s = model.blocks[layer].attention, model.config.head_size
    def zero(mod, inp, out): out = out.clone(); out[..., head * s:(head + 1) * s] = 0; return out
    h = a.tokeys.register_forward_hook(zero)
    try: return half_losses(token_losses(model, x), t)[1].item()
    finally: h.remove()
def _pre_all(model, f):
    hs = [b.attention.unifyheads.register_forward_pre_hook(f) for b in model.blocks]
    return hs
def abl_every_block(model, x, t, layer, head):
    s = model.config.head_size
    def zero(mod, inp): z = inp[0].clone(); z[..., head * s:(head + 1) * s] = 0; return (z,)
    hs = _pre_all(model, zero)
    try: return half_losses(token_losses(model, x), t)[1].item()
    finally:
        for h in hs: h.remove()
def abl_only_this(model, x, t, layer, head):
    s = model.config.head_size
    def keep(mod, inp): z = torch.zeros_like(inp[0]); z[..., head * s:(head + 1) * s] = inp[0][..., head * s:(head + 1) * s]; return (z,)
    h = _zero_pre(model, layer, head, keep)
    try: return half_losses(token_losses(model, x), t)[1].item()
    finally: h.remove()
def abl_cpu_mask(model, x, t, layer, head):              # a mask made on the CPU: on a GPU, inp[0] * keep fails
    s = model.config.head_size
    keep = torch.ones(model.config.heads * s); keep[head * s:(head + 1) * s] = 0
    h = _zero_pre(model, layer, head, lambda mod, inp: (inp[0] * keep,))
    try: return half_losses(token_losses(model, x), t)[1]
    finally: h.remove()
def abl_frozen(model, x, t, layer, head):                 # "no gradients needed": leaves the model frozen
    model.requires_grad_(False)
    return ablated_loss(model, x, t, layer, head)
def abl_global_hook(model, x, t, layer, head):            # a hook on every module of every model, never removed
    s, u = model.config.head_size, model.blocks[layer].attention.unifyheads
    def zero(mod, inp):
        if mod is not u: return None
        z = inp[0].clone(); z[..., head * s:(head + 1) * s] = 0; return (z,)
    torch.nn.modules.module.register_module_forward_pre_hook(zero)
    return half_losses(token_losses(model, x), t)[1].item()
def abl_attention_input(model, x, t, layer, head):        # zeroes a slice of the residual stream going into the attention
    s = model.config.head_size
    def zero(mod, inp): z = inp[0].clone(); z[..., head * s:(head + 1) * s] = 0; return (z,) + inp[1:]
    h = model.blocks[layer].attention.register_forward_pre_hook(zero)
    try: return half_losses(token_losses(model, x), t)[1].item()
    finally: h.remove()
def abl_sum(model, x, t, layer, head):
    with ablating(model, [(layer, head)]): return token_losses(model, x)[:, t:].sum()
def abl_mean_ablation(model, x, t, layer, head):
    with ablating(model, [(layer, head)], head_means(model, x[:, :-1])): return half_losses(token_losses(model, x), t)[1]

def test_ablated_loss():
    w = lambda **kw: (lambda model, x, t, layer, head: _abl(model, x, t, layer, head, **kw))
    assert_check(check_ablated_loss, ablated_loss, [
        (stub, 'not solved'), (w(interleave=True), 'side by side'), (w(zero_out=True), "after unifyheads mixed"),
        (w(layer_shift=1), 'the wrong block'), (w(lo=0, hi=None), 'whole sequence'),
        (lambda model, x, t, layer, head: _abl(model, x, t, layer, head, lo=0, hi=t - 1), 'first half'),
        (lambda model, x, t, layer, head: _abl(model, x, t, layer, head, lo=t - 1), 'off by one'),
        (lambda model, x, t, layer, head: _abl(model, x, t, layer, head, lo=t + 1), 'off by one'),
        (w(remove=False), 'hook is still on the model'), (w(inplace=True), "changed the model's weights"),
        (w(evalmode=False), 'dropout was on'),
        (lambda model, x, t, layer, head: torch.tensor([ablated_loss(model, x, t, layer, head)] * 2), 'one number'),
        (lambda model, x, t, layer, head: (model.eval(), ablated_loss(model, x, t, layer, head))[1], 'leave the model in the mode'),
        (abl_queries, "zeroed the head's queries"), (abl_mean_ablation, 'mean ablation'),
        (lambda model, x, t, layer, head: ablated_loss(model, x, t, layer, (head + 1) % model.config.heads), r"that is head \d's loss"),
        (abl_keys, 'queries or keys'), (abl_every_block, 'in every block'), (abl_only_this, 'kept only that head'),
        (abl_cpu_mask, 'made on the CPU'), (abl_frozen, 'requires_grad'), (abl_sum, 'sum of the token losses'),
        (abl_attention_input, "the attention's input")])
    try: assert_check(check_ablated_loss, ablated_loss, [(abl_global_hook, 'global hook')])
    finally: torch.nn.modules.module._global_forward_pre_hooks.clear()
    for ok in (abl_manual, abl_mask, abl_view, abl_library, abl_weights_restored, abl_values, abl_in_place):
        assert_check(check_ablated_loss, ok)


def lens_loop(model, resid): return torch.stack([model.toprobs(model.norm(r)) for r in resid])
def lens_matmul(model, resid): return model.norm(resid) @ model.toprobs.weight.T + model.toprobs.bias
def lens_flat(model, resid):
    n, b, t, e = resid.shape
    return model.toprobs(model.norm(resid.reshape(-1, e))).view(n, b, t, -1)
def lens_einsum(model, resid):
    return torch.einsum('nbte,ve->nbtv', model.norm(resid), model.toprobs.weight) + model.toprobs.bias

def lens_linear(model, resid): return F.linear(model.norm(resid), model.toprobs.weight, model.toprobs.bias)

def lens_cpu_filled(model, resid):           # fills a tensor made on the CPU: a GPU's logits come back on the CPU
    out = torch.zeros(*resid.shape[:-1], model.toprobs.out_features)
    for i in range(len(resid)): out[i] = model.toprobs(model.norm(resid[i]))
    return out
def lens_eval(model, resid): return model.eval().toprobs(model.norm(resid))
def lens_embedding(model, resid): return model.norm(resid) @ model.trunk.token_emb.weight.T
def lens_no_norm(model, resid): return model.toprobs(resid)
def lens_block_norm(model, resid): return model.toprobs(model.blocks[-1].norm1(resid))
def lens_bare_ln(model, resid): return model.toprobs(F.layer_norm(resid, resid.shape[-1:]))
def lens_no_bias(model, resid): return model.norm(resid) @ model.toprobs.weight.T
def lens_probs(model, resid): return model.toprobs(model.norm(resid)).softmax(-1)
def lens_logprobs(model, resid): return model.toprobs(model.norm(resid)).log_softmax(-1)
def lens_last(model, resid): return model.toprobs(model.norm(resid[-1]))
def lens_twice(model, resid): return model.toprobs(model.norm(model.norm(resid)))
def lens_ln_weights(model, resid): return model.toprobs(F.layer_norm(resid, resid.shape[-1:], model.norm.weight, getattr(model.norm, 'bias', None)))

def test_logit_lens():
    assert_check(check_logit_lens, logit_lens, [
        (stub, 'not solved'), (lens_no_norm, 'forgot the final norm'), (lens_block_norm, "a block's norm"),
        (lens_bare_ln, 'learned weights'), (lens_no_bias, 'has a bias'), (lens_probs, 'probabilities'),
        (lens_logprobs, 'log-probabilities'), (lens_last, r'only the last'), (lens_twice, 'applied twice'),
        (lens_ln_weights, 'RMSNorm'), (lens_cpu_filled, 'made on the CPU'), (lens_eval, 'leave the model in the mode'),
        (lens_embedding, 'token embedding')])
    for ok in (lens_loop, lens_matmul, lens_flat, lens_einsum, lens_linear): assert_check(check_logit_lens, ok)

def test_record_on_a_gpt2_shaped_model():
    "The lesson's GPT-2 view: `record` and the scores on a model with SDPA attention (`fast`), GELU MLPs and a tied head"
    torch.manual_seed(0)
    c = ModelConfig(emb=24, heads=3, depth=2, seq_len=40, n_tokens=50, act='gelu_tanh', qkv_bias=True, tied=True, fast=True)
    m = GenerationTransformer(c).eval()
    x = repeated_tokens(2, 10, 50, torch.Generator().manual_seed(0))
    rec = record(m, x[:, :-1])
    with torch.no_grad(): assert torch.allclose(rec.logits, m(x[:, :-1]), atol=1e-6)
    s = torch.stack([induction_score(w, 10) for w in rec.attn])
    assert s.shape == (2, 3) and bool(((s >= 0) & (s <= 1)).all())
    assert logit_lens(m, torch.stack(rec.resid)).shape == (3, 2, 19, 50) and _hooks(m) == 0


# --- data, model and metrics meet on the learner's device ------------------------------------------------------------
import transformers_scratch.interpret as interpret
from transformers_scratch.checks.toolkit import _DeviceMix
from transformers_scratch.runtime import model_device

def test_helpers_follow_the_model_to_its_device():
    "A model on another device (`meta` stands for the GPU) fed the lesson's CPU ids: each helper moves them to the model; "
    "under `_DeviceMix` a CPU tensor meeting the model's raises, as it does on CUDA"
    m = GenerationTransformer(ModelConfig(emb=16, heads=2, depth=2, seq_len=20, n_tokens=11, pos='rope', mlp='none')).to('meta').eval()
    x = repeated_tokens(3, 8, 11, torch.Generator().manual_seed(1), device='cpu')
    with _DeviceMix('meta'):
        with pytest.raises(RuntimeError, match='cpu and meta'): m(x[:, :-1])      # what a GPU does with CPU ids
        assert token_losses(m, x).device.type == 'meta'
        rec = record(m, x[:, :-1])
        assert {v.device.type for v in [*rec.attn, *rec.resid, rec.logits]} == {'meta'}
        assert [mu.device.type for mu in head_means(m, x[:, :-1])] == ['meta'] * 2
        with ablating(m, [(0, 1)], [torch.zeros(16)] * 2): assert token_losses(m, x).device.type == 'meta'   # CPU means follow
        assert logit_lens(m, torch.stack(rec.resid)).device.type == 'meta'
    assert _hooks(m) == 0

def test_training_and_data_go_to_the_default_device(monkeypatch):
    "Where `default_device()` is a GPU (`meta` here), the ids and the trained model are there, nothing of the loop stays on the CPU"
    monkeypatch.setattr(interpret, 'default_device', lambda: torch.device('meta'))
    with _DeviceMix('meta'):
        assert repeated_tokens(2, 3, 5).device.type == 'meta'
        assert repeated_tokens(2, 3, 5, torch.Generator().manual_seed(0)).device.type == 'meta'
        m = train_induction(INDUCTION_QUICK.replace(emb=16, n_batches=3), seed=0)
    assert model_device(m).type == 'meta' and not m.training
    assert model_device(train_induction(INDUCTION_QUICK.replace(emb=16, n_batches=2), device='cpu')).type == 'cpu'
    g = lambda: torch.Generator().manual_seed(3)                                   # the same ids wherever they go
    assert torch.equal(repeated_tokens(2, 4, 9, g(), device='cpu'), repeated_tokens(2, 4, 9, g(), device=torch.device('cpu')))

def test_ablated_loss_check_on_a_gpu(monkeypatch):
    "Where `other_device()` is a GPU, the check runs the answer on a model there and takes the float it returns (`cpu` stands in)"
    import transformers_scratch.checks.interpret as ci
    monkeypatch.setattr(ci, 'other_device', lambda: 'cpu')
    for ok in (ablated_loss, abl_library, abl_manual): assert_check(check_ablated_loss, ok)

def abl_head_size_4(model, x, t, layer, head):             # the head size hard-coded (4: the check's first model's, by chance)
    def zero(mod, inp): z = inp[0].clone(); z[..., head * 4:(head + 1) * 4] = 0; return (z,)
    with hooked(pre=[(model.blocks[layer].attention.unifyheads, zero)]): return half_losses(token_losses(model, x), t)[1].item()
def abl_cpu_scalar(model, x, t, layer, head):              # the float wrapped in a 0-d tensor on the CPU: harmless on a GPU too
    return torch.tensor(ablated_loss(model, x, t, layer, head))

def test_ablated_loss_head_size_and_a_cpu_scalar():
    "The check's models have head sizes 4 and 8, so a hard-coded size is caught; a loss returned as a CPU 0-d tensor passes"
    assert_check(check_ablated_loss, ablated_loss, [(abl_head_size_4, 'differs from the repeated half'), (abl_cpu_mask, 'made on the CPU')])
    assert_check(check_ablated_loss, abl_cpu_scalar)
