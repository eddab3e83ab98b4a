"Each check in lesson 26 accepts the solution and rejects the stub and the typical wrong answers with the right hint."
import math
import pytest
import torch, torch.nn as nn, torch.nn.functional as F
from transformers_scratch.core import assert_check
from transformers_scratch.positions import PositionEmbedding
from transformers_scratch.yourgpt import CausalSelfAttention, Block, GPT, sample_next, generate
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
        (att_qkv_bias, 'no bias'), (att_renamed, "library's names"), (att_shared, 'one module'), (att_two_args, 'one argument'),
        (att_fixed_heads, 'raised|hard-coded'), (att_inplace, 'in place')])

def test_check_causal_self_attention_device():
    # the meta device stands in for a GPU: a mask made on the CPU is caught when a GPU is there; on meta torch may accept it
    from transformers_scratch.core import other_device
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
        (blk_end_norm, 'no norm at the end'), (blk_no_do, 'blk.do'), (blk_gelu, "ff should be"),
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
    assert_check(check_generate, generate, [
        (stub, 'not solved'), (gen_first, 'last position'), (gen_no_crop, 'longer than'), (gen_first_window, 'the last ones'),
        (gen_new_only, 'not the new ids alone'), (gen_train_mode, 'eval mode'), (gen_grad, 'without gradients'),
        (gen_left_eval, 'leave the model in the mode'), (gen_no_generator, 'same seed'), (gen_no_top_k, 'top_k=1'),
        (gen_no_temperature, 'temperature'), (gen_greedy, 'argmax'), (gen_1d, 'batch of ids')])
