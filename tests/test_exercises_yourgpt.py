"Each check in lesson 26 accepts the solution and rejects the stub and the typical wrong answers with the right hint."
import math
import pytest
import torch, torch.nn as nn, torch.nn.functional as F
from transformers_scratch.checks.toolkit import assert_check
from transformers_scratch.positions import PositionEmbedding
from transformers_scratch.yourgpt import CausalSelfAttention, Block, GPT, sample_next, gpt_generate
from transformers_scratch.checks.yourgpt import (check_causal_self_attention, check_block, check_gpt, check_sample_next,
                                                 check_generate)
from conftest import stub

pytestmark = pytest.mark.usefixtures('one_thread')


# --- CausalSelfAttention --------------------------------------------------------------------------------------------
class _Att(CausalSelfAttention):
    "The solution with one step changed by the keyword arguments of `attend`"
    kw = {}
    def forward(self, x): return self.attend(x, **self.kw)
    def attend(self, x, hide='future', scale=None, dim=-1, fill=float('-inf'), merge=True, split=True, unify=True,
               after=False, always_drop=False):
        b, t, e = x.size()
        h = self.heads
        s = e // h
        if split: q, k, v = (f(x).view(b, t, h, s).transpose(1, 2) for f in (self.toqueries, self.tokeys, self.tovalues))
        else: q, k, v = (f(x).view(b, h, t, s) for f in (self.toqueries, self.tokeys, self.tovalues))
        w = q @ k.transpose(-2, -1) / (math.sqrt(s) if scale is None else scale(s, e))
        ones = torch.ones(t, t, dtype=torch.bool, device=x.device)
        mask = {'future': ones.triu(1), 'none': ~ones, 'past': ones.tril(-1), 'diag': ones.triu(0)}[hide]
        w = w.softmax(dim).masked_fill(mask, 0.) if after else w.masked_fill(mask, fill).softmax(dim)
        w = F.dropout(w, self.dropout, self.training or always_drop)
        o = w @ v
        o = o.transpose(1, 2).reshape(b, t, e) if merge else o.reshape(b, t, e)
        return self.unifyheads(o) if unify else o

def _att(name, **kw): return type(name, (_Att,), {'kw': kw})

class att_qkv_bias(CausalSelfAttention):
    def __init__(self, config):
        super().__init__(config)
        e = config.emb
        self.tokeys, self.toqueries, self.tovalues = (nn.Linear(e, e) for _ in range(3))
class att_renamed(CausalSelfAttention):
    def __init__(self, config):
        super().__init__(config)
        self.proj = self.unifyheads; del self.unifyheads
    def forward(self, x): return x
class att_shared(CausalSelfAttention):
    def __init__(self, config):
        super().__init__(config)
        self.tokeys = self.toqueries
class att_two_args(CausalSelfAttention):
    def __init__(self, emb, heads): super().__init__(emb)
class att_fixed_heads(_Att):                                   # h hard-coded to 4
    def forward(self, x):
        self.heads = 4
        return self.attend(x)
class att_cpu_mask(_Att):
    def forward(self, x):
        t = x.size(1)
        b, _, e = x.size()
        h, s = self.heads, x.size(2) // self.heads
        q, k, v = (f(x).view(b, t, h, s).transpose(1, 2) for f in (self.toqueries, self.tokeys, self.tovalues))
        w = (q @ k.transpose(-2, -1) / math.sqrt(s)).masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float('-inf'))
        return self.unifyheads((w.softmax(-1) @ v).transpose(1, 2).reshape(b, t, e))
class att_inplace(_Att):
    def forward(self, x):
        x.mul_(1.)
        x += 0.
        x[0, 0, 0] += 1.
        return self.attend(x)

def test_check_causal_self_attention():
    assert_check(check_causal_self_attention, CausalSelfAttention, [
        (stub, 'not solved'),
        (_att('att_no_mask', hide='none'), 'no causal mask'),
        (_att('att_past', hide='past'), 'wrong way round'),
        (_att('att_diag', hide='diag'), 'NaN.*diagonal'),
        (_att('att_zero_fill', fill=0.), 'filled with 0'),
        (_att('att_after', after=True), 'after the softmax'),
        (_att('att_sqrt_e', scale=lambda s, e: math.sqrt(e)), 'not by 1/√e'),
        (_att('att_unscaled', scale=lambda s, e: 1.), 'not scaled'),
        (_att('att_by_s', scale=lambda s, e: s), 'not by s'),
        (_att('att_dim', dim=-2), 'over the queries'),
        (_att('att_merge', merge=False), 'merging the heads'),
        (_att('att_split', split=False), 'splitting the heads'),
        (_att('att_no_unify', unify=False), 'unifyheads'),
        (_att('att_drop_eval', always_drop=True), 'eval mode'),
        (att_qkv_bias, 'no bias'), (att_renamed, "proj is unifyheads"), (att_shared, 'one module'), (att_two_args, 'one argument'),
        (att_fixed_heads, 'raised|hard-coded'), (att_inplace, 'in place')])

def test_check_causal_self_attention_device():
    # the meta device stands in for a GPU: a mask made on the CPU is caught when a GPU is there; on meta torch may accept it
    from transformers_scratch.checks.toolkit import other_device
    if other_device() != 'meta': assert_check(check_causal_self_attention, CausalSelfAttention, [(att_cpu_mask, 'device')])


# --- Block ----------------------------------------------------------------------------------------------------------
class _Blk(Block):
    def forward(self, x): return self.order(x)

def _blk(name, order): return type(name, (_Blk,), {'order': order})
blk_post = _blk('blk_post', lambda s, x: (lambda h: s.norm2(h + s.ff(h)))(s.norm1(x + s.do(s.attention(x)))))
blk_no_res = _blk('blk_no_res', lambda s, x: s.ff(s.norm2(s.do(s.attention(s.norm1(x))))))
blk_no_ff_res = _blk('blk_no_ff_res', lambda s, x: s.ff(s.norm2(x + s.do(s.attention(s.norm1(x))))))
blk_normed_res = _blk('blk_normed_res', lambda s, x: (lambda n: (lambda h: s.norm2(h) + s.ff(s.norm2(h)))(n + s.do(s.attention(n))))(s.norm1(x)))
blk_swapped = _blk('blk_swapped', lambda s, x: (lambda h: h + s.ff(s.norm1(h)))(x + s.do(s.attention(s.norm2(x)))))
blk_end_norm = _blk('blk_end_norm', lambda s, x: s.norm2((lambda h: h + s.ff(s.norm2(h)))(x + s.do(s.attention(s.norm1(x))))))
blk_no_do = _blk('blk_no_do', lambda s, x: (lambda h: h + s.ff(s.norm2(h)))(x + s.attention(s.norm1(x))))
class blk_gelu(Block):
    def __init__(self, config):
        super().__init__(config)
        self.ff[1] = nn.GELU()
class blk_own_attention(Block):                               # a non-causal attention: the library's, not causal
    def __init__(self, config):
        super().__init__(config)
        from transformers_scratch.attention import SelfAttention
        self.attention = SelfAttention(config)
class blk_mult2(Block):
    def __init__(self, config):
        super().__init__(config)
        e = config.emb
        self.ff = nn.Sequential(nn.Linear(e, 2 * e), nn.ReLU(), nn.Linear(2 * e, e), nn.Dropout(config.dropout))
class blk_no_do_attr(Block):
    def __init__(self, config):
        super().__init__(config)
        del self.do
    def forward(self, x):
        h = x + self.attention(self.norm1(x))
        return h + self.ff(self.norm2(h))

def test_check_block():
    assert_check(check_block, Block, [
        (stub, 'not solved'), (blk_post, 'post-norm order'), (blk_no_res, 'residuals are missing'),
        (blk_no_ff_res, "MLP's residual"), (blk_normed_res, 'carry x itself'), (blk_swapped, 'swapped'),
        (blk_end_norm, 'no norm at the end'), (blk_no_do, 'blk.do'), (blk_gelu, "ReLU here"),
        (blk_own_attention, 'attention should be'), (blk_mult2, 'shape'), (blk_no_do_attr, 'self.do')])


# --- GPT ------------------------------------------------------------------------------------------------------------
class _GPT(GPT):
    def forward(self, x): return self.run(x)
def _gpt(name, run): return type(name, (_GPT,), {'run': run})

def _trunk(s, h, norm=True):
    for blk in s.trunk.blocks: h = blk(h)
    return s.toprobs(s.trunk.norm(h) if norm else h)
def _pos(x): return torch.arange(x.size(1), device=x.device)
gpt_no_pos = _gpt('gpt_no_pos', lambda s, x: _trunk(s, s.trunk.token_emb(x)))
gpt_ids_as_pos = _gpt('gpt_ids_as_pos', lambda s, x: _trunk(s, s.trunk.token_emb(x) + s.trunk.pos_emb(x)))
gpt_no_norm = _gpt('gpt_no_norm', lambda s, x: _trunk(s, s.trunk.token_emb(x) + s.trunk.pos_emb(_pos(x)), norm=False))
gpt_probs = _gpt('gpt_probs', lambda s, x: _trunk(s, s.trunk.token_emb(x) + s.trunk.pos_emb(_pos(x))).softmax(-1))
gpt_last = _gpt('gpt_last', lambda s, x: _trunk(s, s.trunk.token_emb(x) + s.trunk.pos_emb(_pos(x)))[:, -1])
gpt_full_pos = _gpt('gpt_full_pos', lambda s, x: _trunk(s, s.trunk.token_emb(x) + s.trunk.pos_emb(torch.arange(s.config.seq_len))))
gpt_reversed = _gpt('gpt_reversed', lambda s, x: _trunk(s, s.trunk.token_emb(x) + s.trunk.pos_emb(_pos(x).flip(0))))
class gpt_shared_blocks(GPT):
    def __init__(self, config):
        super().__init__(config)
        self.trunk.blocks = nn.ModuleList([Block(config)] * config.depth)
class gpt_flat(GPT):                                          # no trunk: the parts at the top level
    def __init__(self, config):
        super().__init__(config)
        for k, m in list(self.trunk.items()): setattr(self, k, m)
        del self.trunk
class gpt_pos_embedding(GPT):                                 # positions as a bare nn.Embedding: another name
    def __init__(self, config):
        super().__init__(config)
        self.trunk.pos_emb = nn.Embedding(config.seq_len, config.emb)
class gpt_no_config(GPT):
    def __init__(self, config):
        super().__init__(config)
        del self.config
    def forward(self, x):
        tr = self.trunk
        h = tr.do(tr.token_emb(x) + tr.pos_emb(_pos(x)))
        for blk in tr.blocks: h = blk(h)
        return self.toprobs(tr.norm(h))

def test_check_gpt():
    assert_check(check_gpt, GPT, [
        (stub, 'not solved'), (gpt_no_pos, 'positions are not added'), (gpt_ids_as_pos, 'out of range'),
        (gpt_no_norm, 'final LayerNorm'), (gpt_probs, 'not probabilities'), (gpt_last, 'not of the last one only'),
        (gpt_full_pos, 'arange\\(t\\)'), (gpt_reversed, 'differ|not causal'), (gpt_shared_blocks, 'one module'),
        (gpt_flat, "library's names"), (gpt_pos_embedding, "library's names"), (gpt_no_config, 'self.config')])

def test_library_weights_give_the_library_logits():
    from transformers_scratch.config import ModelConfig
    from transformers_scratch.models import GenerationTransformer
    torch.manual_seed(0)
    c = ModelConfig(emb=24, heads=3, depth=2, seq_len=10, n_tokens=17, dropout=0.1)
    lib, mine = GenerationTransformer(c).eval(), GPT(c).eval()
    mine.load_state_dict(lib.state_dict())
    x = torch.randint(0, 17, (3, 10))
    with torch.no_grad(): assert (mine(x) - lib(x)).abs().max() < 1e-5
    assert sum(p.numel() for p in mine.parameters()) == sum(p.numel() for p in lib.parameters())
    assert isinstance(mine.trunk.pos_emb, PositionEmbedding)
    lib2 = GenerationTransformer(c)                                # and the reverse
    lib2.load_state_dict(mine.state_dict())


# --- sample_next ----------------------------------------------------------------------------------------------------
def _topk(z, k):
    if k is None: return z
    kth = torch.topk(z, min(k, z.size(-1)), dim=-1).values[:, -1:]
    return z.masked_fill(z < kth, float('-inf'))
def _draw(z, g=None): return torch.multinomial(F.softmax(z, -1), 1, generator=g)[:, 0]
def sn_argmax(logits, temperature=1.0, top_k=None, generator=None): return _topk(logits / temperature, top_k).argmax(-1)
def sn_no_temp(logits, temperature=1.0, top_k=None, generator=None): return _draw(_topk(logits, top_k), generator)
def sn_times_temp(logits, temperature=1.0, top_k=None, generator=None): return _draw(_topk(logits * temperature, top_k), generator)
def sn_no_topk(logits, temperature=1.0, top_k=None, generator=None): return _draw(logits / temperature, generator)
def sn_topk_minus1(logits, temperature=1.0, top_k=None, generator=None):
    z = logits / temperature
    if top_k is not None and top_k > 1: z = _topk(z, top_k - 1) if top_k <= z.size(-1) else z
    return _draw(z, generator)
def sn_topk_plus1(logits, temperature=1.0, top_k=None, generator=None):
    return _draw(_topk(logits / temperature, None if top_k is None else top_k + 1), generator)
def sn_smallest(logits, temperature=1.0, top_k=None, generator=None):
    z = logits / temperature
    if top_k is not None: z = z.masked_fill(_topk(-z, top_k) == float('-inf'), float('-inf'))   # the k smallest kept
    return _draw(z, generator)
def sn_no_generator(logits, temperature=1.0, top_k=None, generator=None): return _draw(_topk(logits / temperature, top_k))
def sn_keepdim(logits, temperature=1.0, top_k=None, generator=None):
    return torch.multinomial(F.softmax(_topk(logits / temperature, top_k), -1), 1, generator=generator)
def sn_no_min(logits, temperature=1.0, top_k=None, generator=None):
    z = logits / temperature
    if top_k is not None: z = z.masked_fill(z < torch.topk(z, top_k, dim=-1).values[:, -1:], float('-inf'))
    return _draw(z, generator)
def sn_inplace(logits, temperature=1.0, top_k=None, generator=None):
    logits /= temperature
    return _draw(_topk(logits, top_k), generator)

def test_check_sample_next():
    assert_check(check_sample_next, sample_next, [
        (stub, 'not solved'), (sn_argmax, 'most likely token'), (sn_no_temp, 'temperature has no effect'),
        (sn_times_temp, 'multiplied'), (sn_no_topk, 'no effect'), (sn_topk_minus1, 'off by one.*kept 2'),
        (sn_topk_plus1, 'off by one.*kept 4'), (sn_smallest, 'k smallest'), (sn_no_generator, 'generator'),
        (sn_keepdim, 'drop that last dim'), (sn_no_min, 'min\\(top_k, v\\)'), (sn_inplace, 'in place')])


# --- generate -------------------------------------------------------------------------------------------------------
def _loop(model, prompt, n, temperature=1.0, top_k=None, generator=None, pos=-1, window=lambda s, L: s[-L:], keep=True,
          mode=True, grad=False):
    seq, L, was = prompt, model.config.seq_len, model.training
    if mode: model.eval()
    with torch.set_grad_enabled(grad):
        for _ in range(n):
            logits = model(window(seq, L)[None])[:, pos]
            seq = torch.cat([seq, sample_next(logits, temperature, top_k, generator)])
    if mode: model.train(was)
    return seq if keep else seq[len(prompt):]
def gen_first(model, prompt, n, temperature=1.0, top_k=None, generator=None):
    return _loop(model, prompt, n, temperature, top_k, generator, pos=0)
def gen_no_crop(model, prompt, n, temperature=1.0, top_k=None, generator=None):
    return _loop(model, prompt, n, temperature, top_k, generator, window=lambda s, L: s)
def gen_first_window(model, prompt, n, temperature=1.0, top_k=None, generator=None):
    return _loop(model, prompt, n, temperature, top_k, generator, window=lambda s, L: s[:L])
def gen_new_only(model, prompt, n, temperature=1.0, top_k=None, generator=None):
    return _loop(model, prompt, n, temperature, top_k, generator, keep=False)
def gen_train_mode(model, prompt, n, temperature=1.0, top_k=None, generator=None):
    return _loop(model, prompt, n, temperature, top_k, generator, mode=False)
def gen_grad(model, prompt, n, temperature=1.0, top_k=None, generator=None):
    return _loop(model, prompt, n, temperature, top_k, generator, grad=True)
def gen_left_eval(model, prompt, n, temperature=1.0, top_k=None, generator=None):
    model.eval()
    return _loop(model, prompt, n, temperature, top_k, generator, mode=False)
def gen_no_generator(model, prompt, n, temperature=1.0, top_k=None, generator=None):
    return _loop(model, prompt, n, temperature, top_k)
def gen_no_top_k(model, prompt, n, temperature=1.0, top_k=None, generator=None):
    return _loop(model, prompt, n, temperature, None, generator)
def gen_no_temperature(model, prompt, n, temperature=1.0, top_k=None, generator=None):
    return _loop(model, prompt, n, 1.0, top_k, generator)
def gen_greedy(model, prompt, n, temperature=1.0, top_k=None, generator=None):
    return _loop(model, prompt, n, temperature, 1, generator)
def gen_1d(model, prompt, n, temperature=1.0, top_k=None, generator=None):
    seq = prompt
    for _ in range(n): seq = torch.cat([seq, sample_next(model(seq)[-1:], temperature, top_k, generator)])
    return seq

def test_check_generate():
    assert_check(check_generate, gpt_generate, [
        (stub, 'not solved'), (gen_first, 'last position'), (gen_no_crop, 'longer than'), (gen_first_window, 'the last ones'),
        (gen_new_only, 'not the new ids alone'), (gen_train_mode, 'eval mode'), (gen_grad, 'without gradients'),
        (gen_left_eval, 'leave the model in the mode'), (gen_no_generator, 'same seed'), (gen_no_top_k, 'top_k=1'),
        (gen_no_temperature, 'temperature'), (gen_greedy, 'argmax'), (gen_1d, 'batch of ids')])


# --- issue 31: answers in other valid styles pass; nanoGPT's and Hugging Face's conventions get the lesson's; training
# mode (dropout drawn with the same seed), the whole generation window, several temperatures, the device -----------------
from transformers_scratch.block import feedforward

class _QKV(nn.Module):
    "The lesson's four layers; `forward` is each style's"
    def __init__(self, config):
        super().__init__()
        e = self.emb = config.emb
        self.heads, self.dropout = config.heads, config.dropout
        self.tokeys, self.toqueries, self.tovalues = (nn.Linear(e, e, bias=False) for _ in range(3))
        self.unifyheads = nn.Linear(e, e)
    def qkv(self, x):
        b, t, e = x.size()
        return [f(x).view(b, t, self.heads, e // self.heads).transpose(1, 2) for f in (self.toqueries, self.tokeys, self.tovalues)]
    def merge(self, o): return self.unifyheads(o.transpose(1, 2).reshape(o.size(0), o.size(2), -1))

class att_sdpa(_QKV):                                             # valid: PyTorch's fused attention, is_causal
    def forward(self, x):
        q, k, v = self.qkv(x)
        return self.merge(F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=self.dropout if self.training else 0.))
class att_einsum(_QKV):                                           # valid: einsum, a torch.where mask from positions
    def forward(self, x):
        q, k, v = self.qkv(x)
        t = x.size(1)
        i = torch.arange(t, device=x.device)
        w = torch.einsum('bhis,bhjs->bhij', q, k) / math.sqrt(q.size(-1))
        w = torch.where(i[None, :] <= i[:, None], w, torch.full_like(w, float('-inf'))).softmax(-1)
        return self.merge(torch.einsum('bhij,bhjs->bhis', F.dropout(w, self.dropout, self.training), v))
class att_nano_bias(_QKV):                                        # valid: nanoGPT's `bias` buffer (persistent=False), attn_dropout
    def __init__(self, config):
        super().__init__(config)
        L = config.seq_len
        self.register_buffer('bias', torch.tril(torch.ones(L, L)).view(1, 1, L, L), persistent=False)
        self.attn_dropout = nn.Dropout(config.dropout)
    def forward(self, x):
        q, k, v = self.qkv(x)
        t = x.size(1)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = self.attn_dropout(F.softmax(att.masked_fill(self.bias[:, :, :t, :t] == 0, float('-inf')), dim=-1))
        return self.merge(att @ v)
class att_bool_buffer(_QKV):                                      # valid: a bool mask buffer, persistent=False, additive -inf
    def __init__(self, config):
        super().__init__(config)
        self.register_buffer('future', torch.ones(config.seq_len, config.seq_len, dtype=torch.bool).triu(1), persistent=False)
    def forward(self, x):
        q, k, v = self.qkv(x)
        t = x.size(1)
        add = torch.zeros(t, t, dtype=x.dtype, device=x.device).masked_fill(self.future[:t, :t], float('-inf'))
        w = F.dropout((q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)) + add).softmax(-1), self.dropout, self.training)
        return self.merge(w @ v)

def test_attention_valid_styles():
    for ok in (att_sdpa, att_einsum, att_nano_bias, att_bool_buffer): assert_check(check_causal_self_attention, ok)

class att_nano_persistent(att_nano_bias):                         # nanoGPT's `bias` saved with the weights
    def __init__(self, config):
        super().__init__(config)
        self.register_buffer('bias', self.bias.clone())

class att_nano_double(att_nano_bias):                             # nanoGPT's attn_dropout and resid_dropout
    def __init__(self, config):
        super().__init__(config)
        self.resid_dropout = nn.Dropout(config.dropout)
    def merge(self, o): return self.resid_dropout(super().merge(o))
class att_resid_only(att_sdpa):                                   # dropout on the output only
    def forward(self, x):
        q, k, v = self.qkv(x)
        return F.dropout(self.merge(F.scaled_dot_product_attention(q, k, v, is_causal=True)), self.dropout, self.training)
class att_never_drops(att_sdpa):
    def forward(self, x):
        q, k, v = self.qkv(x)
        return self.merge(F.scaled_dot_product_attention(q, k, v, is_causal=True))
class att_drop_scores(att_einsum):                                # dropout before the softmax
    def forward(self, x):
        q, k, v = self.qkv(x)
        t = x.size(1)
        w = F.dropout(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), self.dropout, self.training)
        w = w.masked_fill(torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1), float('-inf')).softmax(-1)
        return self.merge(w @ v)
class att_fixed_p(att_sdpa):                                      # p hard-coded to 0.1
    def forward(self, x):
        q, k, v = self.qkv(x)
        return self.merge(F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=0.1 if self.training else 0.))
class att_tril_cpu(att_nano_bias):                                # nanoGPT's mask, made per call on the CPU
    def forward(self, x):
        q, k, v = self.qkv(x)
        t = x.size(1)
        att = (q @ k.transpose(-2, -1) / math.sqrt(k.size(-1))).masked_fill(torch.tril(torch.ones(t, t)) == 0, float('-inf'))
        return self.merge(self.attn_dropout(att.softmax(-1)) @ v)
class att_arange_cpu(att_einsum):                                 # positions without device=
    def forward(self, x):
        q, k, v = self.qkv(x)
        i = torch.arange(x.size(1))
        w = (q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))).masked_fill(i[None, :] > i[:, None], float('-inf')).softmax(-1)
        return self.merge(F.dropout(w, self.dropout, self.training) @ v)
class att_c_attn(nn.Module):                                      # nanoGPT's one Linear(e, 3e) and c_proj
    def __init__(self, config):
        super().__init__()
        self.c_attn, self.c_proj = nn.Linear(config.emb, 3 * config.emb, bias=False), nn.Linear(config.emb, config.emb)
    def forward(self, x): return self.c_proj(x)
class att_n_embd(att_sdpa):
    def __init__(self, config):
        super().__init__(config)
        self.n_embd = config.n_embd
class att_hf_tuple(att_nano_bias):                                # Hugging Face's (output, weights)
    def forward(self, x): return super().forward(x), None
class att_view(att_sdpa):                                         # .view after the transpose: not contiguous
    def forward(self, x):
        b, t, e = x.size()
        q, k, v = self.qkv(x)
        w = (q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))).masked_fill(torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1), float('-inf'))
        return self.unifyheads((F.dropout(w.softmax(-1), self.dropout, self.training) @ v).transpose(1, 2).view(b, t, e))

def test_attention_issue31_wrongs():
    assert_check(check_causal_self_attention, CausalSelfAttention, [
        (att_nano_double, 'applied twice.*resid_dropout'), (att_resid_only, "attention's output"),
        (att_never_drops, 'never drops'), (att_drop_scores, 'before the softmax'), (att_fixed_p, r'rate 0.1.*config.dropout'),
        (att_tril_cpu, 'device'), (att_arange_cpu, 'device'), (att_c_attn, 'c_attn'), (att_n_embd, 'n_embd.*config.emb'),
        (att_hf_tuple, 'tuple.*output alone'), (att_view, 'contiguous'), (att_nano_persistent, 'persistent=False')])


class blk_nano(Block):                                            # valid: nanoGPT's x = x + ... style
    def forward(self, x):
        x = x + self.do(self.attention(self.norm1(x)))
        x = x + self.ff(self.norm2(x))
        return x
class blk_feedforward(Block):                                     # valid: lesson 05's feedforward, an SDPA attention
    def __init__(self, config):
        super().__init__(config)
        self.attention, self.ff = att_sdpa(config), feedforward(config.emb, dropout=config.dropout)
class blk_einsum_att(blk_nano):                                   # valid: an einsum attention with its buffer
    def __init__(self, config):
        super().__init__(config)
        self.attention = att_nano_bias(config)

def test_block_valid_styles():
    for ok in (blk_nano, blk_feedforward, blk_einsum_att): assert_check(check_block, ok)

class blk_extra_drop(Block):                                      # the MLP's output dropped once more
    def __init__(self, config):
        super().__init__(config)
        self.mlp_drop = nn.Dropout(config.dropout)
    def forward(self, x):
        h = x + self.do(self.attention(self.norm1(x)))
        return h + self.mlp_drop(self.ff(self.norm2(h)))
class blk_ff_no_drop(Block):                                      # ff without its Dropout
    def __init__(self, config):
        super().__init__(config)
        self.ff = self.ff[:3]
class blk_out_drop(blk_ff_no_drop):                               # dropout on the residual stream
    def forward(self, x):
        h = x + self.do(self.attention(self.norm1(x)))
        return F.dropout(h + self.ff(self.norm2(h)), self.attention.dropout, self.training)
class blk_att_twice(Block):
    def forward(self, x):
        h = x + self.do(self.do(self.attention(self.norm1(x))))
        return h + self.ff(self.norm2(h))
class blk_nano_names(nn.Module):                                  # nanoGPT's names
    def __init__(self, config):
        super().__init__()
        e = config.emb
        self.ln_1, self.attn, self.ln_2 = nn.LayerNorm(e), CausalSelfAttention(config), nn.LayerNorm(e)
        self.mlp = feedforward(e, dropout=config.dropout)
    def forward(self, x): return x

def test_block_issue31_wrongs():
    assert_check(check_block, Block, [
        (blk_extra_drop, 'dropped twice'), (blk_ff_no_drop, "MLP's output is not dropped"), (blk_out_drop, "block's output"),
        (blk_att_twice, "attention's output is dropped twice"), (blk_nano_names, 'ln_1.*norm1|attn.*attention|mlp.*ff')])


class gpt_nano_style(GPT):                                        # valid: nanoGPT's forward(idx, targets=None), logits when no targets
    def forward(self, idx, targets=None):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.trunk.do(self.trunk.token_emb(idx) + self.trunk.pos_emb(pos))
        for block in self.trunk.blocks: x = block(x)
        logits = self.toprobs(self.trunk.norm(x))
        return logits if targets is None else (logits, F.cross_entropy(logits.flatten(0, 1), targets.flatten()))
class gpt_pos_buffer(GPT):                                        # valid: positions as a buffer, broadcast by expand; blocks of nano-bias attention
    def __init__(self, config):
        super().__init__(config)
        self.register_buffer('pos', torch.arange(config.seq_len), persistent=False)
        for blk in self.trunk.blocks: blk.attention = att_nano_bias(config)
    def forward(self, x):
        b, t = x.shape
        h = self.trunk.do(self.trunk.token_emb(x) + self.trunk.pos_emb(self.pos[:t])[None].expand(b, -1, -1))
        for blk in self.trunk.blocks: h = blk(h)
        return self.toprobs(self.trunk.norm(h))
class gpt_sequential(GPT):                                        # valid: the blocks in an nn.Sequential (the same names)
    def __init__(self, config):
        super().__init__(config)
        self.trunk.blocks = nn.Sequential(*self.trunk.blocks)
    def forward(self, x):
        tr = self.trunk
        return self.toprobs(tr.norm(tr.blocks(tr.do(tr.token_emb(x) + tr.pos_emb(torch.arange(x.size(1), device=x.device))))))

def test_gpt_valid_styles():
    for ok in (gpt_nano_style, gpt_pos_buffer, gpt_sequential): assert_check(check_gpt, ok)

gpt_tuple = _gpt('gpt_tuple', lambda s, x: (GPT.forward(s, x), None))
gpt_nano_last = _gpt('gpt_nano_last', lambda s, x: GPT.forward(s, x)[:, [-1], :])
gpt_cpu_pos = _gpt('gpt_cpu_pos', lambda s, x: _trunk(s, s.trunk.do(s.trunk.token_emb(x) + s.trunk.pos_emb(torch.arange(x.size(1))))))
gpt_no_emb_drop = _gpt('gpt_no_emb_drop', lambda s, x: _trunk(s, s.trunk.token_emb(x) + s.trunk.pos_emb(_pos(x))))
gpt_drop_tok = _gpt('gpt_drop_tok', lambda s, x: _trunk(s, s.trunk.do(s.trunk.token_emb(x)) + s.trunk.pos_emb(_pos(x))))
gpt_drop_head = _gpt('gpt_drop_head', lambda s, x: (lambda h: s.toprobs(s.trunk.do(s.trunk.norm(h))))(
    s.trunk.blocks[1](s.trunk.blocks[0](s.trunk.token_emb(x) + s.trunk.pos_emb(_pos(x)))) if len(s.trunk.blocks) == 2 else
    (lambda h: [h := b(h) for b in s.trunk.blocks][-1])(s.trunk.token_emb(x) + s.trunk.pos_emb(_pos(x)))))
gpt_log_softmax = _gpt('gpt_log_softmax', lambda s, x: GPT.forward(s, x).log_softmax(-1))
class gpt_tied(GPT):
    def __init__(self, config):
        super().__init__(config)
        self.toprobs.weight = self.trunk.token_emb.weight
class gpt_head_no_bias(GPT):
    def __init__(self, config):
        super().__init__(config)
        self.toprobs = nn.Linear(config.emb, config.n_tokens, bias=False)
class gpt_nano_names(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config, e = config, config.emb
        self.transformer = nn.ModuleDict(dict(wte=nn.Embedding(config.n_tokens, e), wpe=nn.Embedding(config.seq_len, e),
                                              ln_f=nn.LayerNorm(e)))
        self.lm_head = nn.Linear(e, config.n_tokens, bias=False)
    def forward(self, x): return self.lm_head(self.transformer.wte(x))
class gpt_block_size(GPT):
    def __init__(self, config):
        super().__init__(config)
        self.block_size = config.block_size

def test_gpt_issue31_wrongs():
    assert_check(check_gpt, GPT, [
        (gpt_tuple, r"nanoGPT's forward\(idx, targets\) returns \(logits, loss\)"), (gpt_nano_last, 'inference shortcut'),
        (gpt_cpu_pos, 'device'), (gpt_no_emb_drop, 'embeddings are not dropped'), (gpt_drop_tok, 'token embeddings alone'),
        (gpt_drop_head, 'after the final norm'), (gpt_log_softmax, 'log-probabilities'), (gpt_tied, 'share one weight'),
        (gpt_head_no_bias, 'toprobs has a bias'), (gpt_nano_names, 'wte|lm_head'), (gpt_block_size, 'block_size.*seq_len')])


def sn_gumbel(logits, temperature=1.0, top_k=None, generator=None):    # valid: the Gumbel-max trick
    z = _topk(logits / temperature, top_k)
    u = torch.rand(z.shape, generator=generator, device=z.device)
    return (z - torch.log(-torch.log(u))).argmax(-1)
def sn_inverse_cdf(logits, temperature=1.0, top_k=None, generator=None):   # valid: inverse CDF, searchsorted
    p = F.softmax(_topk(logits / temperature, top_k), -1)
    u = torch.rand(p.shape[:-1] + (1,), generator=generator, device=p.device)
    return torch.searchsorted(p.cumsum(-1), u * p.sum(-1, keepdim=True)).clamp(max=p.size(-1) - 1)[:, 0]
def sn_subset(logits, temperature=1.0, top_k=None, generator=None):   # valid: draw among the top-k, map back with gather
    k = logits.size(-1) if top_k is None else min(top_k, logits.size(-1))
    vals, idx = torch.topk(logits, k, dim=-1)
    j = torch.multinomial(F.softmax(vals / temperature, -1), 1, generator=generator)
    return idx.gather(-1, j)[:, 0]

def test_sample_next_valid_styles():
    for ok in (sn_gumbel, sn_inverse_cdf, sn_subset): assert_check(check_sample_next, ok)

def sn_zero_fill(logits, temperature=1.0, top_k=None, generator=None):
    z = logits / temperature
    if top_k is not None: z = z.masked_fill(z < torch.topk(z, min(top_k, z.size(-1))).values[:, -1:], 0.)
    return _draw(z, generator)
def sn_twice(logits, temperature=1.0, top_k=None, generator=None): return _draw(_topk(logits / temperature ** 2, top_k), generator)
def sn_cpu_uniform(logits, temperature=1.0, top_k=None, generator=None):   # uniforms made on the CPU
    p = F.softmax(_topk(logits / temperature, top_k), -1)
    u = torch.rand(p.shape[:-1] + (1,), generator=generator)
    return (p.cumsum(-1) < u).sum(-1).clamp(max=p.size(-1) - 1)
def sn_squeeze(logits, temperature=1.0, top_k=None, generator=None): return sample_next(logits, temperature, top_k, generator).squeeze()
def sn_greedy_cold(logits, temperature=1.0, top_k=None, generator=None):   # greedy below T=1
    return logits.argmax(-1) if temperature < 1 else sample_next(logits, temperature, top_k, generator)

def test_sample_next_issue31_wrongs():
    assert_check(check_sample_next, sample_next, [
        (sn_zero_fill, 'filled with 0'), (sn_twice, 'applied twice'), (sn_cpu_uniform, 'device'), (sn_squeeze, 'squeeze'),
        (sn_greedy_cold, 'most likely token')])


def gen_nano(model, prompt, n, temperature=1.0, top_k=None, generator=None):   # valid: nanoGPT's loop on a (1, t) batch
    was = model.training
    model.eval()
    idx = prompt[None]
    with torch.no_grad():
        for _ in range(n):
            idx_cond = idx if idx.size(1) <= model.config.seq_len else idx[:, -model.config.seq_len:]
            logits = model(idx_cond)[:, -1, :]
            idx = torch.cat((idx, sample_next(logits, temperature, top_k, generator)[:, None]), dim=1)
    model.train(was)
    return idx[0]
@torch.no_grad()
def gen_prealloc(model, prompt, n, temperature=1.0, top_k=None, generator=None):   # valid: one tensor, filled in place
    from transformers_scratch.runtime import evaluating
    L, p = model.config.seq_len, len(prompt)
    seq = torch.empty(p + n, dtype=torch.long, device=prompt.device)
    seq[:p] = prompt
    with evaluating(model):
        for i in range(p, p + n):
            seq[i] = sample_next(model(seq[max(0, i - L):i][None])[:, -1], temperature, top_k, generator)[0]
    return seq
def gen_inference(model, prompt, n, temperature=1.0, top_k=None, generator=None):   # valid: inference_mode, try/finally
    was = model.training
    try:
        model.eval()
        seq = prompt.clone()
        with torch.inference_mode():
            for _ in range(n):
                logits = model(seq.unsqueeze(0)[:, -model.config.seq_len:])
                seq = torch.cat((seq, sample_next(logits[:, -1, :], temperature, top_k, generator)), dim=-1)
        return seq
    finally: model.train(was)

def test_generate_valid_styles():
    for ok in (gen_nano, gen_prealloc, gen_inference): assert_check(check_generate, ok)

def gen_short(model, prompt, n, temperature=1.0, top_k=None, generator=None):
    return _loop(model, prompt, n, temperature, top_k, generator, window=lambda s, L: s[-(L - 1):])
def gen_long(model, prompt, n, temperature=1.0, top_k=None, generator=None):
    return _loop(model, prompt, n, temperature, top_k, generator, window=lambda s, L: s[-(L + 1):])
def gen_last_token(model, prompt, n, temperature=1.0, top_k=None, generator=None):
    return _loop(model, prompt, n, temperature, top_k, generator, window=lambda s, L: s[-1:])
def gen_no_newest(model, prompt, n, temperature=1.0, top_k=None, generator=None):
    return _loop(model, prompt, n, temperature, top_k, generator, window=lambda s, L: s[-L:-1] if len(s) > 1 else s)
def gen_temp_twice(model, prompt, n, temperature=1.0, top_k=None, generator=None):
    seq, L, was = prompt, model.config.seq_len, model.training
    model.eval()
    with torch.no_grad():
        for _ in range(n):
            logits = model(seq[-L:][None])[:, -1] / temperature
            seq = torch.cat([seq, sample_next(logits, temperature, top_k, generator)])
    model.train(was)
    return seq
def gen_to_cpu(model, prompt, n, temperature=1.0, top_k=None, generator=None):
    seq, L, was = prompt, model.config.seq_len, model.training
    model.eval()
    with torch.no_grad():
        for _ in range(n): seq = torch.cat([seq, sample_next(model(seq[-L:][None])[:, -1], temperature, top_k, generator).cpu()])
    model.train(was)
    return seq
def gen_always_train(model, prompt, n, temperature=1.0, top_k=None, generator=None):
    out = _loop(model, prompt, n, temperature, top_k, generator)
    model.train()
    return out
def gen_batch(model, prompt, n, temperature=1.0, top_k=None, generator=None): return gen_nano(model, prompt, n, temperature, top_k, generator)[None]

def test_generate_issue31_wrongs():
    assert_check(check_generate, gpt_generate, [
        (gen_short, 'one token short'), (gen_long, 'longer than'), (gen_last_token, 'last token only'),
        (gen_no_newest, 'newest token'), (gen_temp_twice, 'applied twice'), (gen_to_cpu, 'device'),
        (gen_always_train, 'leave the model in the mode'), (gen_batch, 'row 0')])


# --- issue 31: what a learner coming from Karpathy's "Let's build GPT" video writes ----------------------------------------
class _Head(nn.Module):                                           # the video's Head: key, query, value, a `tril` buffer
    def __init__(self, config, s):
        super().__init__()
        e = config.emb
        self.key, self.query, self.value = (nn.Linear(e, s, bias=False) for _ in range(3))
        self.register_buffer('tril', torch.tril(torch.ones(config.seq_len, config.seq_len)))
    def forward(self, x): return x[..., :self.key.out_features]
class att_video_heads(nn.Module):                                 # one module per head, then proj
    def __init__(self, config):
        super().__init__()
        self.heads = nn.ModuleList([_Head(config, config.emb // config.heads) for _ in range(config.heads)])
        self.proj = nn.Linear(config.emb, config.emb)
    def forward(self, x): return self.proj(torch.cat([h(x) for h in self.heads], -1))
class att_scale_C(att_nano_bias):                                 # the video's first version: wei = q @ kᵀ * C**-0.5, C = emb
    def forward(self, x):
        q, k, v = self.qkv(x)
        t = x.size(1)
        att = (q @ k.transpose(-2, -1)) * x.size(-1) ** -0.5
        return self.merge(self.attn_dropout(att.masked_fill(self.bias[:, :, :t, :t] == 0, float('-inf')).softmax(-1)) @ v)
class att_softmax_heads(att_nano_bias):                           # F.softmax(wei, dim=1) on (b, h, t, t): over the heads
    def forward(self, x):
        q, k, v = self.qkv(x)
        t = x.size(1)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
        return self.merge(self.attn_dropout(att.masked_fill(self.bias[:, :, :t, :t] == 0, float('-inf')).softmax(1)) @ v)
class _FeedForward(nn.Module):
    def __init__(self, e, p):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(e, 4 * e), nn.ReLU(), nn.Linear(4 * e, e), nn.Dropout(p))
    def forward(self, x): return self.net(x)
class blk_video_ffwd(Block):                                      # ff wrapped in a FeedForward module with .net
    def __init__(self, config):
        super().__init__(config)
        self.ff = _FeedForward(config.emb, config.dropout)
class blk_video_names(nn.Module):                                 # sa, ffwd, ln1, ln2
    def __init__(self, config):
        super().__init__()
        self.sa, self.ffwd = CausalSelfAttention(config), feedforward(config.emb, dropout=config.dropout)
        self.ln1, self.ln2 = nn.LayerNorm(config.emb), nn.LayerNorm(config.emb)
    def forward(self, x): return x
class gpt_video_names(nn.Module):                                 # token_embedding_table, position_embedding_table, lm_head
    def __init__(self, config):
        super().__init__()
        self.token_embedding_table = nn.Embedding(config.n_tokens, config.emb)
        self.position_embedding_table = nn.Embedding(config.seq_len, config.emb)
        self.lm_head = nn.Linear(config.emb, config.n_tokens)
    def forward(self, x): return self.lm_head(self.token_embedding_table(x))
gpt_pos_from_1 = _gpt('gpt_pos_from_1', lambda s, x: _trunk(s, s.trunk.do(s.trunk.token_emb(x) + s.trunk.pos_emb(_pos(x) + 1))))
gpt_flat_logits = _gpt('gpt_flat_logits', lambda s, x: GPT.forward(s, x).flatten(0, 1))
def gen_video(model, prompt, n, temperature=1.0, top_k=None, generator=None):   # logits, loss = self(idx_cond)
    idx = prompt[None]
    for _ in range(n):
        logits, loss = model(idx[:, -model.config.seq_len:])
        idx = torch.cat((idx, sample_next(logits[:, -1, :], temperature, top_k, generator)[:, None]), dim=1)
    return idx[0]
def gen_block_size(model, prompt, n, temperature=1.0, top_k=None, generator=None):
    return _loop(model, prompt, n, temperature, top_k, generator, window=lambda s, L: s[-model.config.block_size:])
def gen_model_seq_len(model, prompt, n, temperature=1.0, top_k=None, generator=None):   # the library model's attribute
    return _loop(model, prompt, n, temperature, top_k, generator, window=lambda s, L: s[-model.seq_len:])

def test_video_style_mistakes():
    assert_check(check_causal_self_attention, CausalSelfAttention, [
        (att_video_heads, 'one module per head'), (att_scale_C, 'not by 1/√e'), (att_softmax_heads, 'NaN.*another dim')])
    assert_check(check_block, Block, [(blk_video_ffwd, r'\.net'), (blk_video_names, 'sa.*attention|ffwd.*ff|ln1.*norm1')])
    assert_check(check_gpt, GPT, [(gpt_video_names, 'token_embedding_table|lm_head'), (gpt_pos_from_1, r'not 1\.\.t'),
                                  (gpt_flat_logits, r'view\(B\*T, C\)')])
    assert_check(check_generate, gpt_generate, [(gen_video, 'logits alone'), (gen_block_size, 'block_size.*seq_len'),
                                            (gen_model_seq_len, 'config.seq_len')])


# --- issue 31: more slips (a fresh batch, written against the lesson's text) ----------------------------------------------
class att_sqrt_h(_Att):                                           # √h, the number of heads
    def forward(self, x): return self.attend(x, scale=lambda s, e: math.sqrt(self.heads))
class att_renormalised(att_einsum):                               # valid: softmax, zero the future, renormalise
    def forward(self, x):
        q, k, v = self.qkv(x)
        t = x.size(1)
        w = (q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))).softmax(-1)
        w = w * torch.ones(t, t, device=x.device).tril()
        w = w / w.sum(-1, keepdim=True)
        return self.merge(F.dropout(w, self.dropout, self.training) @ v)
class att_bmm(_QKV):                                              # valid: (b·h, t, s) and torch.bmm
    def forward(self, x):
        b, t, e = x.size()
        q, k, v = (y.reshape(b * self.heads, t, -1) for y in self.qkv(x))
        w = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(q.size(-1))
        w = w.masked_fill(torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1), -1e9).softmax(-1)
        o = torch.bmm(F.dropout(w, self.dropout, self.training), v).view(b, self.heads, t, -1)
        return self.merge(o)
class blk_eval_drop(Block):                                       # F.dropout without training=: on in eval mode too
    def forward(self, x):
        h = x + self.do(self.attention(self.norm1(x)))
        return h + F.dropout(self.ff[:3](self.norm2(h)), self.attention.dropout)
class gpt_eval_drop(GPT):
    def forward(self, x):
        tr = self.trunk
        h = F.dropout(tr.token_emb(x) + tr.pos_emb(_pos(x)), self.config.dropout)
        for blk in tr.blocks: h = blk(h)
        return self.toprobs(tr.norm(h))
gpt_scaled_emb = _gpt('gpt_scaled_emb', lambda s, x: _trunk(s, s.trunk.do(s.trunk.token_emb(x) * math.sqrt(s.config.emb) + s.trunk.pos_emb(_pos(x)))))
def gen_cropped_prompt(model, prompt, n, temperature=1.0, top_k=None, generator=None):
    return _loop(model, prompt[-model.config.seq_len:], n, temperature, top_k, generator)
def gen_keepdim(model, prompt, n, temperature=1.0, top_k=None, generator=None):
    seq = prompt
    for _ in range(n): seq = torch.cat([seq, sample_next(model(seq[-model.config.seq_len:][None])[:, -1:], temperature, top_k, generator)])
    return seq

def test_fresh_batch():
    for ok in (att_renormalised, att_bmm): assert_check(check_causal_self_attention, ok)
    assert_check(check_causal_self_attention, CausalSelfAttention, [(att_sqrt_h, 'not by 1/√h')])
    assert_check(check_block, Block, [(blk_eval_drop, 'in eval mode .* random')])
    assert_check(check_gpt, GPT, [(gpt_eval_drop, 'in eval mode .* random'), (gpt_scaled_emb, 'not scaled')])
    assert_check(check_generate, gpt_generate, [(gen_cropped_prompt, 'whole prompt'), (gen_keepdim, r'logits\[:, -1\], not')])

def gen_greedy_cold(model, prompt, n, temperature=1.0, top_k=None, generator=None):   # argmax below temperature 1
    return _loop(model, prompt, n, 1.0, 1, generator) if temperature < 1 else _loop(model, prompt, n, temperature, top_k, generator)

def test_generate_greedy_when_cold():
    assert_check(check_generate, gpt_generate, [(gen_greedy_cold, 'same id came out every time')])

class att_own_dropout(att_einsum):                                # valid: dropout written by hand, on the weights
    def forward(self, x):
        q, k, v = self.qkv(x)
        t = x.size(1)
        w = (q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))).masked_fill(
            torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1), float('-inf')).softmax(-1)
        if self.training and self.dropout > 0: w = w * (torch.rand_like(w) >= self.dropout) / (1 - self.dropout)
        return self.merge(w @ v)
class att_own_dropout_out(att_sdpa):                              # dropout written by hand, on the output
    def forward(self, x):
        q, k, v = self.qkv(x)
        o = self.merge(F.scaled_dot_product_attention(q, k, v, is_causal=True))
        return o * (torch.rand_like(o) >= self.dropout) / (1 - self.dropout) if self.training else o
class gpt_own_dropout(GPT):                                       # valid: the embeddings' dropout by hand
    def forward(self, x):
        tr, p = self.trunk, self.config.dropout
        h = tr.token_emb(x) + tr.pos_emb(_pos(x))
        if self.training: h = h * torch.bernoulli(torch.full_like(h, 1 - p)) / (1 - p)
        for blk in tr.blocks: h = blk(h)
        return self.toprobs(tr.norm(h))

def test_dropout_written_by_hand():
    "A dropout of one's own draws other masks: judged by the statistics of 200 draws"
    assert_check(check_causal_self_attention, att_own_dropout, [(att_own_dropout_out, 'training mode')])
    assert_check(check_gpt, gpt_own_dropout)

class gpt_drop_each_block(GPT):                                   # the trunk's do after every block too
    def forward(self, x):
        tr = self.trunk
        h = tr.do(tr.token_emb(x) + tr.pos_emb(_pos(x)))
        for blk in tr.blocks: h = tr.do(blk(h))
        return self.toprobs(tr.norm(h))

def test_gpt_dropout_after_each_block():
    assert_check(check_gpt, GPT, [(gpt_drop_each_block, 'after every block')])


# --- issue 31, second audit: each mistake its own cause; "hard-coded" only where a size is -------------------------------
class _AttV(att_sdpa):
    "A hand-written attention with one step changed by `v` (a class attribute)"
    v = None
    def forward(self, x):
        q, k, v = self.qkv(x)
        s, t, V = q.size(-1), x.size(1), self.v
        w = (k @ q.transpose(-2, -1) if V == 'kq' else q @ k.transpose(-2, -1)) / (1. if V == 'scale_after' else math.sqrt(s))
        w = w.masked_fill(torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1), float('-inf')).softmax(-1)
        if V == 'scale_after': w = w / math.sqrt(s)
        if V == 'drop_v': v = F.dropout(v, self.dropout, self.training)
        else: w = F.dropout(w, 0.2 if V == 'rate' else self.dropout, self.training)
        if V == 'twice': w = F.dropout(w, self.dropout, self.training)
        return self.merge(w @ v)
def _attv(v): return type(f'att_{v}', (_AttV,), {'v': v})
class att_module_rate(_QKV):                                      # nn.Dropout(0.1) written in the code
    def __init__(self, config):
        super().__init__(config)
        self.drop = nn.Dropout(0.1)
    def forward(self, x):
        q, k, v = self.qkv(x)
        t = x.size(1)
        w = (q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))).masked_fill(
            torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1), float('-inf')).softmax(-1)
        return self.merge(self.drop(w) @ v)

def test_attention_causes():
    assert_check(check_causal_self_attention, CausalSelfAttention, [
        (_attv('scale_after'), 'after the softmax'), (_attv('drop_v'), 'values v'), (_attv('twice'), 'dropped twice'),
        (_attv('rate'), r'rate 0.2.*config.dropout'), (att_module_rate, r'Dropout\(p=0.1\).*config.dropout'),
        (att_fixed_heads, 'right for .* hard-coded')])
    from transformers_scratch.checks.toolkit import CheckError
    with pytest.raises(CheckError) as e: check_causal_self_attention(_attv('kq'))   # kᵀq: no size is the cause
    assert 'hard-coded' not in str(e.value)

class blk_eps6(Block):                                            # nn.LayerNorm(e, eps=1e-6)
    def __init__(self, config):
        super().__init__(config)
        self.norm1, self.norm2 = (nn.LayerNorm(config.emb, eps=1e-6) for _ in range(2))
class blk_eps_norm2(Block):                                       # only the second norm's eps differs
    def __init__(self, config):
        super().__init__(config)
        self.norm2.eps = 1e-8
class blk_do_ffin(Block):                                         # do on the MLP's input
    def forward(self, x):
        h = x + self.do(self.attention(self.norm1(x)))
        return h + self.ff(self.do(self.norm2(h)))
class blk_f_dropout(Block):                                            # F.dropout(..., 0.1) instead of self.do
    def forward(self, x):
        h = x + F.dropout(self.attention(self.norm1(x)), 0.1, self.training)
        return h + self.ff(self.norm2(h))
class blk_rate(Block):                                            # do = nn.Dropout(0.1) written in the code
    def __init__(self, config):
        super().__init__(config)
        self.do = nn.Dropout(0.1)
class blk_norm_swap(Block):                                       # norm2 before the attention, norm1 before the MLP
    def forward(self, x):
        h = x + self.do(self.attention(self.norm2(x)))
        return h + self.ff(self.norm1(h))

def test_block_causes():
    assert_check(check_block, Block, [(blk_eps6, 'eps=1e-06'), (blk_eps_norm2, 'eps=1e-08'), (blk_do_ffin, "MLP's input"),
                                      (blk_f_dropout, 'blk.do'), (blk_rate, r'Dropout\(p=0.1\).*config.dropout'), (blk_norm_swap, 'norm')])
    from transformers_scratch.checks.toolkit import CheckError
    with pytest.raises(CheckError) as e: check_block(blk_norm_swap)
    assert 'hard-coded' not in str(e.value)

gpt_pos_batch = _gpt('gpt_pos_batch', lambda s, x: _trunk(s, s.trunk.token_emb(x) + s.trunk.pos_emb(torch.arange(x.size(0), device=x.device)[:, None])))
gpt_pos_from1 = _gpt('gpt_pos_from1', lambda s, x: _trunk(s, s.trunk.token_emb(x) + s.trunk.pos_emb((_pos(x) + 1).clamp(max=s.config.seq_len - 1))))
gpt_pos_zero = _gpt('gpt_pos_zero', lambda s, x: _trunk(s, s.trunk.token_emb(x) + s.trunk.pos_emb(0 * _pos(x))))
def _blocks(s, h):
    for b in s.trunk.blocks: h = b(h)
    return h
gpt_norm_twice = _gpt('gpt_norm_twice', lambda s, x: s.toprobs(s.trunk.norm(s.trunk.norm(_blocks(s, s.trunk.token_emb(x) + s.trunk.pos_emb(_pos(x)))))))
gpt_drop_pos = _gpt('gpt_drop_pos', lambda s, x: _trunk(s, s.trunk.token_emb(x) + s.trunk.do(s.trunk.pos_emb(_pos(x)))))
gpt_rate = _gpt('gpt_rate', lambda s, x: _trunk(s, F.dropout(s.trunk.token_emb(x) + s.trunk.pos_emb(_pos(x)), 0.5, s.training)))
class gpt_eps(GPT):
    def __init__(self, config):
        super().__init__(config)
        self.trunk.norm.eps = 1e-6

def test_gpt_causes():
    assert_check(check_gpt, GPT, [(gpt_pos_batch, 'batch size'), (gpt_pos_from1, 'not 1..t'), (gpt_pos_zero, 'pos_emb\\(0\\)|batch size'),
                                  (gpt_norm_twice, 'applied twice'), (gpt_drop_pos, 'position embeddings alone'),
                                  (gpt_rate, r'rate 0.5.*config.dropout'), (gpt_eps, 'eps=1e-06')])

def gen_grad_off(model, prompt, n, temperature=1.0, top_k=None, generator=None):   # switches gradients off for good
    torch.set_grad_enabled(False)
    return _loop(model, prompt, n, temperature, top_k, generator)

def test_generate_grad_left_off():
    try: assert_check(check_generate, gpt_generate, [(gen_grad_off, 'switched gradients off|no_grad')])
    finally: torch.set_grad_enabled(True)
    assert torch.is_grad_enabled()

gpt_pos_after = _gpt('gpt_pos_after', lambda s, x: s.toprobs(s.trunk.norm(_blocks(s, s.trunk.token_emb(x)) + s.trunk.pos_emb(_pos(x)))))
class gpt_reversed_blocks(GPT):
    def forward(self, x):
        h = self.trunk.do(self.trunk.token_emb(x) + self.trunk.pos_emb(_pos(x)))
        for b in list(self.trunk.blocks)[::-1]: h = b(h)
        return self.toprobs(self.trunk.norm(h))

def test_gpt_more_causes():
    assert_check(check_gpt, GPT, [(gpt_pos_after, 'after the blocks'), (gpt_reversed_blocks, 'reverse order')])

def gen_args_swapped(model, prompt, n, temperature=1.0, top_k=None, generator=None):   # top_k and temperature swapped
    return _loop(model, prompt, n, top_k, temperature, generator)

def test_generate_args_order():
    assert_check(check_generate, gpt_generate, [(gen_args_swapped, "sample_next's order")])


# audit of lessons 20-28: a generator of one's own (or the global RNG reseeded inside) gives the same ids whatever the seed
def sn_own_generator(logits, temperature=1.0, top_k=None, generator=None):    # ignores the generator given
    return sample_next(logits, temperature, top_k, torch.Generator(device=logits.device).manual_seed(42))
def sn_reseeded(logits, temperature=1.0, top_k=None, generator=None):         # torch.manual_seed inside, the global RNG drawn
    torch.manual_seed(0)
    return sample_next(logits, temperature, top_k, None)
def gen_own_generator(model, prompt, n, temperature=1.0, top_k=None, generator=None):
    return _loop(model, prompt, n, temperature, top_k, torch.Generator(device=prompt.device).manual_seed(0))
def gen_reseeded(model, prompt, n, temperature=1.0, top_k=None, generator=None):
    torch.manual_seed(0)
    return _loop(model, prompt, n, temperature, top_k, None)

def test_sampling_follows_the_generator():
    with torch.random.fork_rng(devices=[]):
        assert_check(check_sample_next, sample_next, [(sn_own_generator, 'different seeds gave the same ids'),
                                                      (sn_reseeded, 'different seeds gave the same ids')])
        assert_check(check_generate, gpt_generate, [(gen_own_generator, 'different seeds gave the same text'),
                                                    (gen_reseeded, 'different seeds gave the same text')])
