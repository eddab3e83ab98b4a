"Each check in lesson 30 accepts the solution and rejects the stub and the typical wrong answers with the right hint."
import math, torch, torch.nn.functional as F
from transformers_scratch.checks.toolkit import assert_check
from transformers_scratch.masks import neg_fill
from transformers_scratch.config import ModelConfig
from transformers_scratch.attention import SelfAttention, split_heads, merge_heads, attention
from transformers_scratch.seq2seq import (valid_lens, cross_attention, decoder_block, teacher_forcing, seq2seq_loss,
                                          greedy_decode)
from transformers_scratch.checks.seq2seq import (check_valid_lens, check_cross_attention, check_decoder_block,
                                                 check_teacher_forcing, check_seq2seq_loss, check_greedy_decode)
from conftest import stub




# --- valid_lens ----------------------------------------------------------------------------------------------------
def vl_pads(x, pad_idx=1):      return (x == pad_idx).sum(1)
def vl_hard_pad(x, pad_idx=1):  return (x != 1).sum(1)
def vl_float(x, pad_idx=1):     return (x != pad_idx).float().sum(1)
def vl_keepdim(x, pad_idx=1):   return (x != pad_idx).sum(1, keepdim=True)
def vl_mask(x, pad_idx=1):      return x != pad_idx
def vl_first_pad(x, pad_idx=1): return (x == pad_idx).long().argmax(1)
def vl_inplace(x, pad_idx=1):
    x[x == pad_idx] = -1
    return (x != -1).sum(1)
def vl_two_rows(x, pad_idx=1):  return torch.stack([(x[i] != pad_idx).sum() for i in range(2)])

def test_check_valid_lens():
    assert_check(check_valid_lens, valid_lens, [
        (stub, 'not solved'), (vl_pads, 'counted the pads'), (vl_hard_pad, 'ignored pad_idx'), (vl_float, 'integer'),
        (vl_keepdim, r'\(b, 1\)'), (vl_mask, 'returned the mask'), (vl_first_pad, 'first pad'), (vl_inplace, 'in place'),
        (vl_two_rows, 'raised IndexError')])


# --- cross_attention -----------------------------------------------------------------------------------------------
def _ca(ca, x, m, pm=None, kx=False, vx=False, scale=None, fill='ok', unify=True, p=None, inplace=False, zero=True):
    h = ca.heads
    if inplace and pm is not None: m.masked_fill_(~pm[..., None], 0.)
    q = split_heads(ca.toqueries(x), h)
    k, v = split_heads(ca.tokeys(x if kx else m), h), split_heads(ca.tovalues(x if vx else m), h)
    w = q @ k.transpose(-2, -1) / math.sqrt(scale or q.size(-1))
    after = None
    if pm is not None and fill != 'none':
        mk = pm[:, None, None, :]
        if fill == 'ok': w = w.masked_fill(~mk, neg_fill(w.dtype))
        elif fill == 'inverted': w = w.masked_fill(mk, neg_fill(w.dtype))
        elif fill == '+inf': w = w.masked_fill(~mk, float('inf'))
        elif fill == 'zero': w = w.masked_fill(~mk, 0.)
        elif fill in ('-inf', -1e9, 'finfo32'): w = w.masked_fill(~mk, float('-inf') if fill == '-inf' else torch.finfo(torch.float32).min if fill == 'finfo32' else fill)
        elif fill == 'after': after = mk
    w = F.softmax(w, -1)
    if after is not None: w = w * after
    if pm is not None and zero and fill in ('ok', -1e9, 'finfo32'): w = w.masked_fill(~pm[:, None, None, :], 0.)   # lesson 02
    w = F.dropout(w, ca.dropout if p is None else p, ca.training)
    out = merge_heads(w @ v)
    return ca.unifyheads(out) if unify else out

def ca_keys_from_x(ca, x, m, pm=None):     return _ca(ca, x, m, pm, kx=True)
def ca_kv_from_x(ca, x, m, pm=None):       return _ca(ca, x, m, pm, kx=True, vx=True) if pm is None else _ca(ca, x, m, None, kx=True, vx=True)
def ca_no_mask(ca, x, m, pm=None):         return _ca(ca, x, m, pm, fill='none')
def ca_inverted(ca, x, m, pm=None):        return _ca(ca, x, m, pm, fill='inverted')
def ca_plus_inf(ca, x, m, pm=None):        return _ca(ca, x, m, pm, fill='+inf')
def ca_zero(ca, x, m, pm=None):            return _ca(ca, x, m, pm, fill='zero')
def ca_after(ca, x, m, pm=None):           return _ca(ca, x, m, pm, fill='after')
def ca_no_scale(ca, x, m, pm=None):        return _ca(ca, x, m, pm, scale=1)
def ca_scale_e(ca, x, m, pm=None):         return _ca(ca, x, m, pm, scale=x.size(-1))
def ca_no_unify(ca, x, m, pm=None):        return _ca(ca, x, m, pm, unify=False)
def ca_no_dropout(ca, x, m, pm=None):      return _ca(ca, x, m, pm, p=0.)
def ca_dropout_half(ca, x, m, pm=None):    return _ca(ca, x, m, pm, p=0.6)
def ca_inplace(ca, x, m, pm=None):         return _ca(ca, x, m, pm, inplace=True)

def ca_minus_inf(ca, x, m, pm=None):      return _ca(ca, x, m, pm, fill='-inf')     # NaN where the memory is all padding
def ca_minus_1e9(ca, x, m, pm=None):      return _ca(ca, x, m, pm, fill=-1e9)       # does not fit in float16
def ca_finfo32(ca, x, m, pm=None):        return _ca(ca, x, m, pm, fill='finfo32')  # float32's minimum: not in float16
def ca_cpu_scale(ca, x, m, pm=None):                                                 # a new tensor on the CPU
    return _ca(ca, x, m, pm, scale=None) * torch.ones(x.size(-1), dtype=x.dtype)

def ca_uniform(ca, x, m, pm=None):      return _ca(ca, x, m, pm, zero=False)      # the former reference: uniform weights

def ca_via_attention(ca, x, m, pm=None):   # issue 23: lesson 03's attention, whose masked_softmax gives zeros for an all-padding memory
    q = split_heads(ca.toqueries(x), ca.heads)
    k, v = split_heads(ca.tokeys(m), ca.heads), split_heads(ca.tovalues(m), ca.heads)
    mask = None if pm is None else pm[:, None, None, :]
    return ca.unifyheads(merge_heads(attention(q, k, v, mask, ca.dropout, ca.training)))

def ca_module(ca, x, m, pm=None): return ca(x, pm, kv=m)          # SelfAttention given the memory

def test_check_cross_attention_accepts_the_course_tools():   # issue 23: the course's attention and the library's module pass
    for fn in (ca_via_attention, ca_module):
        assert_check(check_cross_attention, fn)
    assert_check(check_cross_attention, cross_attention, [(ca_uniform, 'uniform weights.*zeros')])

def test_cross_attention_agrees_with_the_module_on_an_all_padding_memory():
    torch.manual_seed(0)
    ca = SelfAttention(ModelConfig(emb=8, heads=2)).eval()
    x, m = torch.randn(2, 3, 8), torch.randn(2, 4, 8)
    pm = torch.tensor([[1, 1, 0, 0], [0, 0, 0, 0]]).bool()
    torch.testing.assert_close(cross_attention(ca, x, m, pm), ca(x, pm, kv=m))
    torch.testing.assert_close(cross_attention(ca, x, m, pm)[1], ca.unifyheads.bias.expand(3, 8))

def test_check_cross_attention_families():   # issue 16: all-padding rows, half-precision fills, the device
    assert_check(check_cross_attention, cross_attention, [
        (ca_minus_inf, 'NaN.*all padding'), (ca_minus_1e9, 'float16.*neg_fill'), (ca_finfo32, 'float16.*neg_fill'),
        (ca_cpu_scale, "stay on the inputs' device")])

def test_check_cross_attention():
    assert_check(check_cross_attention, cross_attention, [
        (stub, 'not solved'), (ca_keys_from_x, 'keys/values from memory'), (ca_kv_from_x, 'from the decoder'),
        (ca_no_mask, 'forgot the memory mask'), (ca_inverted, 'inverted'), (ca_plus_inf, 'NaN.*\\+inf'),
        (ca_zero, 'with 0'), (ca_after, 'after the softmax'), (ca_no_scale, 'forgot to scale'), (ca_scale_e, '√e'),
        (ca_no_unify, 'unifyheads'), (ca_no_dropout, 'dropout'), (ca_dropout_half, 'spread'), (ca_inplace, 'in place')])


# --- decoder_block -------------------------------------------------------------------------------------------------
def _db(blk, x, m, pad=None, mpad=None, order='sca', res=(1, 1, 1), mem_norm=False, use_pad=True, use_mpad=True,
        self_cross=False, norms=(0, 1, 2), pre=None):
    N = [(blk.norm1, blk.norm2, blk.norm3)[i] for i in norms]
    subs = {'s': lambda h: blk.cross_attention(h, kv=h) if self_cross else blk.attention(h, pad if use_pad else None),
            'c': lambda h: blk.cross_attention(h, mpad if use_mpad else None, kv=N[1](m) if mem_norm else m),
            'a': blk.ff}
    pre = blk.prenorm if pre is None else pre
    h = x
    for i, key in enumerate(order):
        f, r, n = subs[key], res[i], N[i]
        h = r * h + blk.do(f(n(h))) if pre else n(r * h + blk.do(f(h)))
    return h

def db_cross_first(blk, x, m, pad=None, mpad=None):   return _db(blk, x, m, pad, mpad, order='csa')
def db_not_causal(blk, x, m, pad=None, mpad=None):    return _db(blk, x, m, pad, mpad, self_cross=True)
def db_no_res1(blk, x, m, pad=None, mpad=None):       return _db(blk, x, m, pad, mpad, res=(0, 1, 1))
def db_no_res2(blk, x, m, pad=None, mpad=None):       return _db(blk, x, m, pad, mpad, res=(1, 0, 1))
def db_no_res3(blk, x, m, pad=None, mpad=None):       return _db(blk, x, m, pad, mpad, res=(1, 1, 0))
def db_mem_norm(blk, x, m, pad=None, mpad=None):      return _db(blk, x, m, pad, mpad, mem_norm=True)
def db_no_mpad(blk, x, m, pad=None, mpad=None):       return _db(blk, x, m, pad, mpad, use_mpad=False)
def db_no_pad(blk, x, m, pad=None, mpad=None):        return _db(blk, x, m, pad, mpad, use_pad=False)
def db_swapped(blk, x, m, pad=None, mpad=None):       return _db(blk, x, m, pad, mpad, norms=(1, 0, 2))
def db_always_pre(blk, x, m, pad=None, mpad=None):    return _db(blk, x, m, pad, mpad, pre=True)

def test_check_decoder_block():
    assert_check(check_decoder_block, decoder_block, [
        (stub, 'not solved'), (db_cross_first, 'cross-attention before'), (db_not_causal, 'not causal'),
        (db_no_res1, "self-attention's residual"), (db_no_res2, "cross-attention's residual"), (db_no_res3, "MLP's residual"),
        (db_mem_norm, 'normalised the memory'), (db_no_mpad, 'forgot memory_pad_mask'), (db_no_pad, 'forgot pad_mask'),
        (db_swapped, 'swapped'), (db_always_pre, 'blk.prenorm')])


# --- teacher_forcing -----------------------------------------------------------------------------------------------
def _col(t, v): return torch.full((t.size(0), 1), v, dtype=t.dtype)
def tf_eos_at_end(t, bos_idx=2, eos_idx=3, pad_idx=1): return torch.cat([_col(t, bos_idx), t], 1), torch.cat([t, _col(t, eos_idx)], 1)
def tf_no_eos(t, bos_idx=2, eos_idx=3, pad_idx=1):     return torch.cat([_col(t, bos_idx), t], 1), torch.cat([t, _col(t, pad_idx)], 1)
def tf_swapped(t, bos_idx=2, eos_idx=3, pad_idx=1):    return teacher_forcing(t, bos_idx, eos_idx, pad_idx)[::-1]
def tf_bos_labels(t, bos_idx=2, eos_idx=3, pad_idx=1):
    d, _ = teacher_forcing(t, bos_idx, eos_idx, pad_idx); return d, d
def tf_no_shift(t, bos_idx=2, eos_idx=3, pad_idx=1):
    _, l = teacher_forcing(t, bos_idx, eos_idx, pad_idx); return l, l
def tf_hard_bos(t, bos_idx=2, eos_idx=3, pad_idx=1):   return teacher_forcing(t, 2, eos_idx, pad_idx)
def tf_short(t, bos_idx=2, eos_idx=3, pad_idx=1):      return torch.cat([_col(t, bos_idx), t[:, :-1]], 1), t
def tf_float(t, bos_idx=2, eos_idx=3, pad_idx=1):      return tuple(o.float() for o in teacher_forcing(t, bos_idx, eos_idx, pad_idx))
def tf_inplace(t, bos_idx=2, eos_idx=3, pad_idx=1):
    out = teacher_forcing(t, bos_idx, eos_idx, pad_idx); t.fill_(pad_idx); return out

def _db_do(blk, x, m, pad=None, mpad=None, sites='sc'):
    "The solution with `blk.do` after the sublayers in `sites` only"
    do = lambda k, t: blk.do(t) if k in sites else t
    if blk.prenorm:
        h = x + do('s', blk.attention(blk.norm1(x), pad))
        h = h + do('c', blk.cross_attention(blk.norm2(h), mpad, kv=m))
        return h + do('a', blk.ff(blk.norm3(h)))
    h = blk.norm1(x + do('s', blk.attention(x, pad)))
    h = blk.norm2(h + do('c', blk.cross_attention(h, mpad, kv=m)))
    return blk.norm3(h + do('a', blk.ff(h)))
def db_do_self_only(blk, x, m, pad=None, mpad=None):  return _db_do(blk, x, m, pad, mpad, 's')
def db_do_cross_only(blk, x, m, pad=None, mpad=None): return _db_do(blk, x, m, pad, mpad, 'c')
def db_do_everywhere(blk, x, m, pad=None, mpad=None): return _db_do(blk, x, m, pad, mpad, 'sca')

def test_check_decoder_block_dropout_sites():   # issue 16: each dropout site on its own, not only "two calls differ"
    assert_check(check_decoder_block, decoder_block, [
        (db_do_self_only, 'missing after the cross-attention'), (db_do_cross_only, 'missing after the self-attention'),
        (db_do_everywhere, 'after the MLP too')])

def _db_cache(blk, x, m, pad=None, mpad=None, cache=None, sites='sc'):
    "The solution, passing `cache` only to the attentions in `sites`"
    cs, cc = (cache if 's' in sites else None), (cache if 'c' in sites else None)
    if blk.prenorm:
        h = x + blk.do(blk.attention(blk.norm1(x), pad, cs))
        h = h + blk.do(blk.cross_attention(blk.norm2(h), mpad, cc, kv=m))
        return h + blk.ff(blk.norm3(h))
    h = blk.norm1(x + blk.do(blk.attention(x, pad, cs)))
    h = blk.norm2(h + blk.do(blk.cross_attention(h, mpad, cc, kv=m)))
    return blk.norm3(h + blk.ff(h))
def db_no_cache_param(blk, x, m, pad=None, mpad=None):            return _db_cache(blk, x, m, pad, mpad)
def db_cache_ignored(blk, x, m, pad=None, mpad=None, cache=None):  return _db_cache(blk, x, m, pad, mpad, cache, '')
def db_cache_self_only(blk, x, m, pad=None, mpad=None, cache=None): return _db_cache(blk, x, m, pad, mpad, cache, 's')
def db_cache_cross_only(blk, x, m, pad=None, mpad=None, cache=None): return _db_cache(blk, x, m, pad, mpad, cache, 'c')

def test_check_decoder_block_cache():   # DecoderBlock.forward passes a cache: translate decodes one token at a time with it
    assert_check(check_decoder_block, decoder_block, [
        (db_no_cache_param, 'takes no `cache`'), (db_cache_ignored, 'never filled'), (db_cache_cross_only, 'never filled'),
        (db_cache_self_only, 'did not pass cache to blk.cross_attention')])

def test_check_teacher_forcing():
    assert_check(check_teacher_forcing, teacher_forcing, [
        (stub, 'not solved'), (tf_eos_at_end, 'after the padding'), (tf_no_eos, 'no EOS'), (tf_swapped, 'swapped'),
        (tf_bos_labels, 'start with BOS'), (tf_no_shift, 'no shift'), (tf_hard_bos, 'start with bos_idx'),
        (tf_short, 't columns'), (tf_float, 'dtype'), (tf_inplace, 'in place')])


# --- seq2seq_loss --------------------------------------------------------------------------------------------------
def _flat(lg, lab): return lg.reshape(-1, lg.size(-1)), lab.reshape(-1)
def sl_pads(lg, lab, pad_idx=1, smoothing=0.):      return F.cross_entropy(*_flat(lg, lab), label_smoothing=smoothing)
def sl_no_smooth(lg, lab, pad_idx=1, smoothing=0.): return F.cross_entropy(*_flat(lg, lab), ignore_index=pad_idx)
def sl_sum(lg, lab, pad_idx=1, smoothing=0.):
    return F.cross_entropy(*_flat(lg, lab), ignore_index=pad_idx, label_smoothing=smoothing, reduction='sum')
def sl_numel(lg, lab, pad_idx=1, smoothing=0.):     return sl_sum(lg, lab, pad_idx, smoothing) / lab.numel()
def sl_per_sentence(lg, lab, pad_idx=1, smoothing=0.):
    return torch.stack([seq2seq_loss(lg[i:i + 1], lab[i:i + 1], pad_idx, smoothing) for i in range(lg.size(0))]).mean()
def sl_hard_pad(lg, lab, pad_idx=1, smoothing=0.):  return seq2seq_loss(lg, lab, 1, smoothing)
def sl_v_minus_1(lg, lab, pad_idx=1, smoothing=0.):
    f, l = _flat(lg, lab); real = l != pad_idx
    lp = F.log_softmax(f, -1); nll = -lp.gather(1, l[:, None])[:, 0]
    other = -(lp.sum(-1) + nll) / (f.size(-1) - 1)           # mean -log p over the wrong classes
    return ((1 - smoothing) * nll + smoothing * other)[real].mean()
def sl_float(lg, lab, pad_idx=1, smoothing=0.):     return seq2seq_loss(lg.float(), lab, pad_idx, smoothing)
def sl_detach(lg, lab, pad_idx=1, smoothing=0.):    return seq2seq_loss(lg.detach(), lab, pad_idx, smoothing)
def sl_item(lg, lab, pad_idx=1, smoothing=0.):      return seq2seq_loss(lg, lab, pad_idx, smoothing).item()

def test_check_seq2seq_loss():
    assert_check(check_seq2seq_loss, seq2seq_loss, [
        (stub, 'not solved'), (sl_pads, 'pads count'), (sl_no_smooth, 'smoothing is ignored'), (sl_sum, 'summed'),
        (sl_numel, 'all positions'), (sl_per_sentence, 'per sentence'), (sl_hard_pad, 'not pad_idx'),
        (sl_v_minus_1, 'v - 1'), (sl_float, 'dtype'), (sl_detach, 'autograd'), (sl_item, 'return a tensor')])


# --- greedy_decode -------------------------------------------------------------------------------------------------
def _gd(model, src, max_len=50, bos_idx=2, eos_idx=3, keep_bos=False, keep_eos=False, stop=True, pos=-1, evals=True,
        restore=True, limit=None, as_list=False, also=()):
    was = model.training
    if evals: model.eval()
    ys = [bos_idx]
    with torch.no_grad():
        for _ in range(limit if limit is not None else max_len):
            nxt = int(model(src[None], torch.tensor([ys]))[0, pos].argmax())
            if (nxt == eos_idx or nxt in also) and stop:
                if keep_eos: ys.append(nxt)
                break
            ys.append(nxt)
    if restore: model.train(was)
    out = ys if keep_bos else ys[1:]
    return out if as_list else torch.tensor(out, dtype=torch.long)

def gd_keep_bos(m, s, max_len=50, bos_idx=2, eos_idx=3):  return _gd(m, s, max_len, bos_idx, eos_idx, keep_bos=True)
def gd_keep_eos(m, s, max_len=50, bos_idx=2, eos_idx=3):  return _gd(m, s, max_len, bos_idx, eos_idx, keep_eos=True)
def gd_no_stop(m, s, max_len=50, bos_idx=2, eos_idx=3):   return _gd(m, s, max_len, bos_idx, eos_idx, stop=False)
def gd_first_pos(m, s, max_len=50, bos_idx=2, eos_idx=3): return _gd(m, s, max_len, bos_idx, eos_idx, pos=0)
def gd_no_eval(m, s, max_len=50, bos_idx=2, eos_idx=3):   return _gd(m, s, max_len, bos_idx, eos_idx, evals=False)
def gd_no_restore(m, s, max_len=50, bos_idx=2, eos_idx=3): return _gd(m, s, max_len, bos_idx, eos_idx, restore=False)
def gd_max50(m, s, max_len=50, bos_idx=2, eos_idx=3):     return _gd(m, s, 50, bos_idx, eos_idx)
def gd_minus1(m, s, max_len=50, bos_idx=2, eos_idx=3):    return _gd(m, s, max_len, bos_idx, eos_idx, limit=max_len - 1)
def gd_hard_bos(m, s, max_len=50, bos_idx=2, eos_idx=3):  return _gd(m, s, max_len, 2, eos_idx)
def gd_list(m, s, max_len=50, bos_idx=2, eos_idx=3):      return _gd(m, s, max_len, bos_idx, eos_idx, as_list=True)
def gd_float(m, s, max_len=50, bos_idx=2, eos_idx=3):     return _gd(m, s, max_len, bos_idx, eos_idx).float()
def gd_stop_3(m, s, max_len=50, bos_idx=2, eos_idx=3):    return _gd(m, s, max_len, bos_idx, eos_idx, also=(3,))   # the default EOS too
def gd_stop_0(m, s, max_len=50, bos_idx=2, eos_idx=3):    return _gd(m, s, max_len, bos_idx, eos_idx, also=(0,))   # at id 0 too
def gd_stop_bos(m, s, max_len=50, bos_idx=2, eos_idx=3):  return _gd(m, s, max_len, bos_idx, eos_idx, also=(2,))   # the default BOS
def gd_while(m, s, max_len=50, bos_idx=2, eos_idx=3):     # valid: a while loop over a list, the mode restored by hand
    was, ys = m.training, [bos_idx]
    m.eval()
    with torch.no_grad():
        while len(ys) <= max_len:
            nxt = int(m(s[None], torch.tensor([ys], device=s.device))[0, -1].argmax())
            if nxt == eos_idx: break
            ys.append(nxt)
    m.train(was)
    return torch.tensor(ys[1:], dtype=torch.long, device=s.device)

def sl_view(l, lab, pad_idx=1, smoothing=0.):
    return F.cross_entropy(l.view(-1, l.size(-1)), lab.view(-1), ignore_index=pad_idx, label_smoothing=smoothing)
def sl_log_softmax(l, lab, pad_idx=1, smoothing=0.):      # right formula, but log(softmax) is -inf on large logits
    lp, keep = torch.log(F.softmax(l, -1)), lab != pad_idx
    nll = F.nll_loss(lp.reshape(-1, l.size(-1)), lab.reshape(-1), ignore_index=pad_idx)
    return (1 - smoothing) * nll + smoothing * (-lp.mean(-1))[keep].mean()
def sl_cpu_weight(l, lab, pad_idx=1, smoothing=0.):
    return F.cross_entropy(l.reshape(-1, l.size(-1)), lab.reshape(-1), weight=torch.ones(l.size(-1), dtype=l.dtype),
                           ignore_index=pad_idx, label_smoothing=smoothing)

def test_check_seq2seq_loss_families():   # issue 16: sliced logits, large logits, new tensors on the CPU
    assert_check(check_seq2seq_loss, seq2seq_loss, [
        (sl_view, 'non-contiguous'), (sl_log_softmax, 'large logits'), (sl_cpu_weight, "stay on the inputs' device")])

def gd_train_after(m, s, max_len=50, bos_idx=2, eos_idx=3):   # restores train mode, whatever mode it found
    out = _gd(m, s, max_len, bos_idx, eos_idx, restore=False); m.train(); return out

def test_check_greedy_decode_from_eval_mode():
    assert_check(check_greedy_decode, greedy_decode, [(gd_train_after, 'it was in eval mode.*left it in train mode')])

def test_check_greedy_decode():
    assert_check(check_greedy_decode, greedy_decode, [
        (stub, 'not solved'), (gd_keep_bos, 'kept BOS'), (gd_keep_eos, 'kept EOS'), (gd_no_stop, 'after EOS'),
        (gd_first_pos, 'LAST position'), (gd_no_eval, 'model.eval'), (gd_no_restore, 'mode you found it'),
        (gd_max50, 'at most max_len'), (gd_minus1, 'off by one'), (gd_hard_bos, 'bos_idx'), (gd_list, '1-D LongTensor'),
        (gd_float, 'torch.long')])

def test_check_greedy_decode_stops_at_eos_only():   # each was accepted: no fixture's translation held 0, 2 or 3 before EOS
    assert_check(check_greedy_decode, greedy_decode, [(gd_stop_3, 'stopped early, at id 3'),
                                                      (gd_stop_0, 'stopped early, at id 0'),
                                                      (gd_stop_bos, 'stopped early, at id 2')])
    assert_check(check_greedy_decode, gd_while)


# --- no check crashes in its own code, whatever a learner returns (issue 23) ---------------------------------------------
def _arg(i):
    def f(*a, **k): return a[i] if len(a) > i else None
    f.__name__ = f'returns_argument_{i + 1}'
    return f

def _const(v, name):
    def f(*a, **k): return v() if callable(v) else v
    f.__name__ = name
    return f

def no_args(): return None
def raises(*a, **k): raise ValueError("a learner's bug")
def shape_of_first(*a, **k):
    t = next((x for x in a if isinstance(x, torch.Tensor)), torch.zeros(1))
    return torch.randn(t.shape)
def long_like_first(*a, **k):
    t = next((x for x in a if isinstance(x, torch.Tensor)), torch.zeros(1))
    return torch.zeros(t.shape, dtype=torch.long)
def pair_of_first(*a, **k):
    t = next((x for x in a if isinstance(x, torch.Tensor)), torch.zeros(1))
    return t.clone(), t.clone()

GARBAGE = [_const(None, 'returns_none'), _const(0, 'returns_int'), _const([1, 2], 'returns_list'),
           _const(lambda: torch.zeros(1), 'returns_one_zero'), _const(lambda: torch.zeros(()), 'returns_0d'),
           _const(lambda: (torch.zeros(1), torch.zeros(1)), 'returns_a_pair'), _const(lambda: torch.tensor(float('nan')), 'returns_nan'),
           _arg(0), _arg(1), _arg(2), no_args, raises, shape_of_first, long_like_first, pair_of_first]

import pytest
from transformers_scratch.checks.toolkit import CheckError

@pytest.mark.parametrize('check', [check_valid_lens, check_cross_attention, check_decoder_block, check_teacher_forcing,
                                   check_seq2seq_loss, check_greedy_decode], ids=lambda c: c.__name__)
def test_checks_give_a_verdict_on_garbage(check):
    "A wrong answer of any kind ends in the check's own verdict (CheckError), never in a crash of the check's code"
    for fn in GARBAGE:
        with pytest.raises(CheckError): check(fn)


# --- issue 31: valid answers in other styles pass; new plausible mistakes are named ------------------------------------
def vl_count_nonzero(x, pad_idx=1): return torch.count_nonzero(x != pad_idx, dim=1)
def vl_minus_pads(x, pad_idx=1):    return x.size(1) - (x == pad_idx).sum(-1)
def vl_first_pad_guarded(x, pad_idx=1):                    # right padding: the first pad's index, t for a full row
    is_pad = (x == pad_idx)
    return torch.where(is_pad.any(1), is_pad.int().argmax(1), torch.full_like(is_pad[:, 0], x.size(1), dtype=torch.long))
def vl_cumsum(x, pad_idx=1):        return (x != pad_idx).long().cumsum(1)[:, -1]

def test_check_valid_lens_valid_styles():
    for fn in (vl_count_nonzero, vl_minus_pads, vl_first_pad_guarded, vl_cumsum):
        assert_check(check_valid_lens, fn)

def vl_last_index(x, pad_idx=1):  return (x != pad_idx).sum(1) - 1          # the index of the last real token
def vl_plus_one(x, pad_idx=1):    return (x != pad_idx).sum(1) + 1          # counts the EOS that is not there
def vl_batch_dim(x, pad_idx=1):   return (x != pad_idx).sum(0)
def vl_greater(x, pad_idx=1):     return (x > pad_idx).sum(1)
def vl_cpu(x, pad_idx=1):         return (x != pad_idx).sum(1).cpu()

def test_check_valid_lens_new_mistakes():
    assert_check(check_valid_lens, valid_lens, [
        (vl_last_index, 'one short'), (vl_plus_one, 'one too long'), (vl_batch_dim, 'along the batch'),
        (vl_greater, 'greater than pad_idx'), (vl_cpu, 'device')])


def ca_sdpa(ca, x, m, pm=None):           # SDPA with an additive mask; a query that sees no key gets zeros afterwards
    q, k, v = (split_heads(f(t), ca.heads) for f, t in ((ca.toqueries, x), (ca.tokeys, m), (ca.tovalues, m)))
    mask = None if pm is None else torch.zeros(pm.shape, dtype=q.dtype, device=q.device).masked_fill(~pm, neg_fill(q.dtype))[:, None, None, :]
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=ca.dropout if ca.training else 0.)
    if pm is not None: out = out * pm.any(-1)[:, None, None, None].to(out.dtype)
    return ca.unifyheads(merge_heads(out))

def ca_einsum(ca, x, m, pm=None):         # einsum and torch.where, heads reshaped by hand
    b, t, e = x.shape; h = ca.heads; s = e // h
    q = ca.toqueries(x).view(b, t, h, s)
    k, v = ca.tokeys(m).view(b, -1, h, s), ca.tovalues(m).view(b, -1, h, s)
    w = torch.einsum('bqhs,bkhs->bhqk', q, k) / s ** 0.5
    if pm is not None:
        keep = pm[:, None, None, :]
        w = torch.where(keep, w, torch.full_like(w, neg_fill(w.dtype))).softmax(-1)
        w = torch.where(keep, w, torch.zeros_like(w))
    else: w = w.softmax(-1)
    w = F.dropout(w, ca.dropout, ca.training)
    return ca.unifyheads(torch.einsum('bhqk,bkhs->bqhs', w, v).reshape(b, t, e))

def ca_upcast(ca, x, m, pm=None):         # scores and softmax in float32, back to x's dtype
    q, k, v = (split_heads(f(t), ca.heads) for f, t in ((ca.toqueries, x), (ca.tokeys, m), (ca.tovalues, m)))
    w = (q.float() @ k.float().transpose(-2, -1)) * q.size(-1) ** -0.5
    if pm is not None: w = w.masked_fill(~pm[:, None, None, :], torch.finfo(torch.float32).min)
    w = w.softmax(-1)
    if pm is not None: w = w * pm[:, None, None, :]
    w = F.dropout(w, ca.dropout, ca.training).to(x.dtype)
    return ca.unifyheads(merge_heads(w @ v))

def test_check_cross_attention_valid_styles():
    for fn in (ca_sdpa, ca_einsum, ca_upcast):
        assert_check(check_cross_attention, fn)

def _ca_do(ca, x, m, pm=None, where='weights', p=None, always=False):
    "The solution with dropout placed at `where`; `always`: F.dropout without its training argument"
    do = lambda t: F.dropout(t, ca.dropout if p is None else p, True if always else ca.training)
    q, k, v = (split_heads(f(t), ca.heads) for f, t in ((ca.toqueries, x), (ca.tokeys, m), (ca.tovalues, m)))
    if where == 'values': v = do(v)
    w = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if where == 'scores': w = do(w)
    from transformers_scratch.masks import masked_softmax
    w = masked_softmax(w, None if pm is None else pm[:, None, None, :])
    if where in ('weights', 'twice'): w = do(w)
    if where == 'twice': w = do(w)
    out = merge_heads(w @ v)
    if where == 'heads': out = do(out)
    out = ca.unifyheads(out)
    return do(out) if where == 'output' else out

def ca_do_output(ca, x, m, pm=None):  return _ca_do(ca, x, m, pm, 'output')
def ca_do_heads(ca, x, m, pm=None):   return _ca_do(ca, x, m, pm, 'heads')
def ca_do_values(ca, x, m, pm=None):  return _ca_do(ca, x, m, pm, 'values')
def ca_do_scores(ca, x, m, pm=None):  return _ca_do(ca, x, m, pm, 'scores')
def ca_do_twice(ca, x, m, pm=None):   return _ca_do(ca, x, m, pm, 'twice')
def ca_do_p01(ca, x, m, pm=None):     return _ca_do(ca, x, m, pm, p=0.1)
def ca_do_always(ca, x, m, pm=None):  return _ca_do(ca, x, m, pm, always=True)
def ca_new_dropout(ca, x, m, pm=None):                  # a fresh nn.Dropout is in training mode, whatever ca's mode
    import torch.nn as nn
    return _ca_do(ca, x, m, pm, 'none_') if False else _ca_new(ca, x, m, pm, nn.Dropout(ca.dropout))
def _ca_new(ca, x, m, pm, drop):
    from transformers_scratch.masks import masked_softmax
    q, k, v = (split_heads(f(t), ca.heads) for f, t in ((ca.toqueries, x), (ca.tokeys, m), (ca.tovalues, m)))
    w = drop(masked_softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), None if pm is None else pm[:, None, None, :]))
    return ca.unifyheads(merge_heads(w @ v))
def ca_memory_queries(ca, x, m, pm=None):               # queries from the memory, keys and values from x (roles swapped)
    return _ca(ca, m, x, None)
def ca_causal(ca, x, m, pm=None):                       # a causal mask in cross-attention as well
    tq, tk = x.size(1), m.size(1)
    cm = torch.ones(tq, tk, dtype=torch.bool, device=x.device).tril()
    full = cm[None] if pm is None else cm[None] & pm[:, None, :]
    from transformers_scratch.masks import masked_softmax
    q, k, v = (split_heads(f(t), ca.heads) for f, t in ((ca.toqueries, x), (ca.tokeys, m), (ca.tovalues, m)))
    w = F.dropout(masked_softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), full[:, None]), ca.dropout, ca.training)
    return ca.unifyheads(merge_heads(w @ v))
def ca_mask_arange_cpu(ca, x, m, pm=None):              # lengths turned into a mask with a CPU arange
    if pm is None: return cross_attention(ca, x, m)
    lens = pm.sum(1)
    return cross_attention(ca, x, m, torch.arange(m.size(1)) < lens[:, None])

def test_check_cross_attention_new_mistakes():
    assert_check(check_cross_attention, cross_attention, [
        (ca_do_output, 'output \\(after unifyheads\\)'), (ca_do_heads, 'merged heads'), (ca_do_values, 'to the values'),
        (ca_do_scores, 'before the softmax'), (ca_do_twice, 'twice'), (ca_do_p01, 'not a constant'),
        (ca_do_always, 'eval mode two calls'), (ca_new_dropout, 'eval mode two calls'),
        (ca_memory_queries, 't_m positions|queries come from x'), (ca_causal, 'values are wrong|causal'),
        (ca_mask_arange_cpu, 'made on the CPU|device')])


def db_residual_first(blk, x, m, pad=None, mpad=None, cache=None):   # blk.do written as F.dropout with blk.do's p: valid
    do = lambda t: F.dropout(t, blk.do.p, blk.training)
    if blk.prenorm:
        h = x + do(blk.attention(blk.norm1(x), pad, cache))
        h = h + do(blk.cross_attention(blk.norm2(h), mpad, cache, kv=m))
        return h + blk.ff(blk.norm3(h))
    h = blk.norm1(x + do(blk.attention(x, pad, cache)))
    h = blk.norm2(h + do(blk.cross_attention(h, mpad, cache, kv=m)))
    return blk.norm3(h + blk.ff(h))

def db_table(blk, x, m, pad=None, mpad=None, cache=None):            # the three sublayers as a table, one loop
    subs = [(blk.norm1, lambda h: blk.do(blk.attention(h, pad, cache))),
            (blk.norm2, lambda h: blk.do(blk.cross_attention(h, mpad, cache, kv=m))),
            (blk.norm3, blk.ff)]
    h = x
    for norm, f in subs: h = h + f(norm(h)) if blk.prenorm else norm(h + f(h))
    return h

def db_forward_kwargs(blk, x, m, pad=None, mpad=None, cache=None):   # keywords, torch.add
    if not blk.prenorm:
        h = blk.norm1(torch.add(x, blk.do(blk.attention(x, pad_mask=pad, cache=cache))))
        h = blk.norm2(torch.add(h, blk.do(blk.cross_attention(h, pad_mask=mpad, cache=cache, kv=m))))
        return blk.norm3(torch.add(h, blk.ff(h)))
    a = blk.attention(blk.norm1(x), pad_mask=pad, cache=cache)
    h = torch.add(x, blk.do(a))
    c = blk.cross_attention(blk.norm2(h), pad_mask=mpad, cache=cache, kv=m)
    h = torch.add(h, blk.do(c))
    return torch.add(h, blk.ff(blk.norm3(h)))

def test_check_decoder_block_valid_styles():
    for fn in (db_residual_first, db_table, db_forward_kwargs):
        assert_check(check_decoder_block, fn)

def _dbt(blk, x, m, pad=None, mpad=None, cache=None, on='sub', twice=False, p=None, always=False):
    "The solution with its dropout moved: `on` 'sum' (the residual sum) or 'in' (the sublayer's input); `p` a constant"
    do = blk.do if p is None and not always else (lambda t: F.dropout(t, blk.do.p if p is None else p, True if always else blk.training))
    d = (lambda t: do(do(t))) if twice else do
    subs = [(blk.norm1, lambda h: blk.attention(h, pad, cache), True), (blk.norm2, lambda h: blk.cross_attention(h, mpad, cache, kv=m), True),
            (blk.norm3, blk.ff, False)]
    h = x
    for n, f, use in subs:
        dd = d if use else (lambda t: t)
        if blk.prenorm: h = h + dd(f(n(h))) if on == 'sub' else dd(h + f(n(h))) if on == 'sum' else h + f(dd(n(h)))
        else: h = n(h + dd(f(h))) if on == 'sub' else n(dd(h + f(h))) if on == 'sum' else n(h + f(dd(h)))
    return h

def db_do_on_sum(blk, x, m, pad=None, mpad=None, cache=None):   return _dbt(blk, x, m, pad, mpad, cache, on='sum')
def db_do_on_input(blk, x, m, pad=None, mpad=None, cache=None): return _dbt(blk, x, m, pad, mpad, cache, on='in')
def db_do_twice(blk, x, m, pad=None, mpad=None, cache=None):    return _dbt(blk, x, m, pad, mpad, cache, twice=True)
def db_do_p01(blk, x, m, pad=None, mpad=None, cache=None):      return _dbt(blk, x, m, pad, mpad, cache, p=0.1)
def db_do_always(blk, x, m, pad=None, mpad=None, cache=None):   return _dbt(blk, x, m, pad, mpad, cache, always=True)
def db_memory_from_x(blk, x, m, pad=None, mpad=None, cache=None):   # the cross-attention's keys from the decoder stream
    return _db(blk, x, x, pad, pad)
def db_ln_memory_norm3(blk, x, m, pad=None, mpad=None, cache=None): # the memory through the MLP's norm
    return _db(blk, x, blk.norm3(m), pad, mpad)

def test_check_decoder_block_new_mistakes():
    assert_check(check_decoder_block, decoder_block, [
        (db_do_on_sum, 'residual sum'), (db_do_on_input, "sublayer's input"), (db_do_twice, 'twice'),
        (db_do_p01, 'not a constant'), (db_do_always, 'eval mode two calls'),
        (db_memory_from_x, 'raised|values of the|memory'), (db_ln_memory_norm3, 'values of the|memory')])


def tf_loop(t, bos_idx=2, eos_idx=3, pad_idx=1):                  # row by row, on a copy
    b, n = t.shape
    dec = torch.cat([torch.full((b, 1), bos_idx, dtype=t.dtype, device=t.device), t], 1)
    lab = torch.cat([t, torch.full((b, 1), pad_idx, dtype=t.dtype, device=t.device)], 1)
    for i in range(b):
        lab[i, int((t[i] != pad_idx).sum())] = eos_idx
    return dec, lab
def tf_where(t, bos_idx=2, eos_idx=3, pad_idx=1):                 # torch.where on a column index, F.pad
    lens = (t != pad_idx).sum(1, keepdim=True)
    lab = F.pad(t, (0, 1), value=pad_idx)
    cols = torch.arange(lab.size(1), device=t.device)[None]
    return F.pad(t, (1, 0), value=bos_idx), torch.where(cols == lens, torch.full_like(lab, eos_idx), lab)
def tf_index(t, bos_idx=2, eos_idx=3, pad_idx=1):                 # advanced indexing with (rows, lengths)
    b = t.size(0)
    lab = torch.cat([t, t.new_full((b, 1), pad_idx)], 1)
    lab[torch.arange(b, device=t.device), (t != pad_idx).sum(1)] = eos_idx
    return torch.cat([t.new_full((b, 1), bos_idx), t], 1), lab

def test_check_teacher_forcing_valid_styles():
    for fn in (tf_loop, tf_where, tf_index):
        assert_check(check_teacher_forcing, fn)

def tf_eos_over_last(t, bos_idx=2, eos_idx=3, pad_idx=1):       # EOS at length - 1: it overwrites the last token
    dec, lab = teacher_forcing(t, bos_idx, eos_idx, pad_idx)
    b = t.size(0); n = (t != pad_idx).sum(1)
    lab = torch.cat([t, t.new_full((b, 1), pad_idx)], 1)
    lab[torch.arange(b), (n - 1).clamp(min=0)] = eos_idx
    return dec, lab
def tf_eos_late(t, bos_idx=2, eos_idx=3, pad_idx=1):            # EOS at length + 1
    b = t.size(0); n = (t != pad_idx).sum(1)
    lab = torch.cat([t, t.new_full((b, 1), pad_idx)], 1)
    lab[torch.arange(b), (n + 1).clamp(max=t.size(1))] = eos_idx
    return teacher_forcing(t, bos_idx, eos_idx, pad_idx)[0], lab
def tf_eos_columns(t, bos_idx=2, eos_idx=3, pad_idx=1):         # lab[:, lens] = eos: every length in every row
    b = t.size(0)
    lab = torch.cat([t, t.new_full((b, 1), pad_idx)], 1)
    lab[:, (t != pad_idx).sum(1)] = eos_idx
    return teacher_forcing(t, bos_idx, eos_idx, pad_idx)[0], lab
def tf_pads_to_eos(t, bos_idx=2, eos_idx=3, pad_idx=1):         # every pad became EOS
    dec, lab = teacher_forcing(t, bos_idx, eos_idx, pad_idx)
    return dec, lab.masked_fill(lab == pad_idx, eos_idx)
def tf_cpu(t, bos_idx=2, eos_idx=3, pad_idx=1):                 # the new columns made on the CPU
    b = t.size(0)
    dec = torch.cat([torch.full((b, 1), bos_idx), t], 1)
    lab = torch.cat([t, torch.full((b, 1), pad_idx)], 1)
    return dec, lab.scatter(1, (t != pad_idx).sum(1, keepdim=True), eos_idx)
def tf_dec_eos(t, bos_idx=2, eos_idx=3, pad_idx=1):             # the decoder input ends with EOS, the labels don't
    dec, lab = teacher_forcing(t, bos_idx, eos_idx, pad_idx)
    return lab.roll(1, 1).index_fill(1, torch.tensor([0]), bos_idx), torch.cat([t, t.new_full((t.size(0), 1), pad_idx)], 1)

def test_check_teacher_forcing_new_mistakes():
    assert_check(check_teacher_forcing, teacher_forcing, [
        (tf_eos_over_last, 'overwrote'), (tf_eos_late, 'too far right'), (tf_eos_columns, 'more than one EOS'),
        (tf_pads_to_eos, 'more than one EOS'), (tf_cpu, 'made on the CPU|device'), (tf_dec_eos, 'no EOS|labels')])


def sl_manual(lg, lab, pad_idx=1, smoothing=0.):                 # the formula written out: gather and masked sums
    lp = F.log_softmax(lg, -1)
    nll = -lp.gather(-1, lab.clamp(min=0)[..., None])[..., 0]
    smooth = -lp.mean(-1)
    real = (lab != pad_idx).to(lg.dtype)
    return (((1 - smoothing) * nll + smoothing * smooth) * real).sum() / real.sum()
def sl_boolean(lg, lab, pad_idx=1, smoothing=0.):                # keep the real tokens first, then the plain loss
    real = lab != pad_idx
    return F.cross_entropy(lg[real], lab[real], label_smoothing=smoothing)
def sl_transpose(lg, lab, pad_idx=1, smoothing=0.):              # (b, v, t) as F.cross_entropy takes it
    return F.cross_entropy(lg.transpose(1, 2), lab, ignore_index=pad_idx, label_smoothing=smoothing)
def sl_kl(lg, lab, pad_idx=1, smoothing=0.):                     # a smoothed target distribution, soft-label cross-entropy
    v = lg.size(-1)
    target = F.one_hot(lab.clamp(min=0), v).to(lg.dtype) * (1 - smoothing) + smoothing / v
    real = lab != pad_idx
    return -(target * F.log_softmax(lg, -1)).sum(-1)[real].mean()

def test_check_seq2seq_loss_valid_styles():
    for fn in (sl_manual, sl_boolean, sl_transpose, sl_kl):
        assert_check(check_seq2seq_loss, fn)

def sl_smooth_pads(lg, lab, pad_idx=1, smoothing=0.):            # the smoothing term averaged over every position
    lp = F.log_softmax(lg, -1)
    return (1 - smoothing) * F.cross_entropy(*_flat(lg, lab), ignore_index=pad_idx) + smoothing * (-lp.mean(-1)).mean()
def sl_smooth_sum(lg, lab, pad_idx=1, smoothing=0.):             # ε on every class: a sum over the classes
    lp, real = F.log_softmax(lg, -1), lab != pad_idx
    return (1 - smoothing) * F.cross_entropy(*_flat(lg, lab), ignore_index=pad_idx) + smoothing * (-lp.sum(-1))[real].mean()
def sl_smooth_added(lg, lab, pad_idx=1, smoothing=0.):           # 1 instead of 1 - ε on the right token
    lp, real = F.log_softmax(lg, -1), lab != pad_idx
    return F.cross_entropy(*_flat(lg, lab), ignore_index=pad_idx) + smoothing * (-lp.mean(-1))[real].mean()
def sl_shifted(lg, lab, pad_idx=1, smoothing=0.):                # a language model's shift, once too many
    return seq2seq_loss(lg[:, :-1], lab[:, 1:], pad_idx, smoothing)
def sl_nll_raw(lg, lab, pad_idx=1, smoothing=0.):                # nll_loss on raw logits
    return F.nll_loss(*_flat(lg, lab), ignore_index=pad_idx)

def test_check_seq2seq_loss_new_mistakes():
    assert_check(check_seq2seq_loss, seq2seq_loss, [
        (sl_smooth_pads, 'smoothing term counts the pads'), (sl_smooth_sum, 'EVERY class'), (sl_smooth_added, '1 - ε'),
        (sl_shifted, 'shifted logits and labels'), (sl_nll_raw, 'log-probabilities')])


def gd_strip(m, s, max_len=50, bos_idx=2, eos_idx=3):            # max_len steps without stopping, cut at the first EOS
    was = m.training; m.eval()
    ys = torch.tensor([[bos_idx]], device=s.device)
    with torch.no_grad():
        for _ in range(max_len): ys = torch.cat([ys, m(s[None], ys)[:, -1].argmax(-1, keepdim=True)], 1)
    m.train(was)
    out = ys[0, 1:]
    hit = (out == eos_idx).nonzero()
    return out[:int(hit[0])] if len(hit) else out
def gd_beam1(m, s, max_len=50, bos_idx=2, eos_idx=3):            # beam search of width 1, log-probabilities
    was = m.training; m.eval()
    beams = [([bos_idx], 0.)]
    try:
        with torch.no_grad():
            for _ in range(max_len):
                ys, score = beams[0]
                lp = F.log_softmax(m(s[None], torch.tensor([ys], device=s.device))[0, -1], -1)
                top = lp.topk(1)
                beams = sorted([(ys + [int(i)], score + float(v)) for v, i in zip(top.values, top.indices)], key=lambda c: -c[1])[:1]
                if beams[0][0][-1] == eos_idx: break
    finally: m.train(was)
    ys = beams[0][0][1:]
    return torch.tensor(ys[:-1] if ys and ys[-1] == eos_idx else ys, dtype=torch.long, device=s.device)
def gd_list_loop(m, s, max_len=50, bos_idx=2, eos_idx=3):        # a Python list of ids, torch.no_grad as a decorator
    @torch.no_grad()
    def run():
        ys = [bos_idx]
        while len(ys) <= max_len:
            nxt = m(s.unsqueeze(0), torch.tensor(ys, device=s.device).unsqueeze(0))[0, -1].softmax(-1).argmax().item()
            if nxt == eos_idx: break
            ys.append(nxt)
        return torch.tensor(ys[1:], dtype=torch.long, device=s.device)
    was = m.training; m.eval()
    try: return run()
    finally: m.train(was)

def test_check_greedy_decode_valid_styles():
    for fn in (gd_strip, gd_beam1, gd_list_loop):
        assert_check(check_greedy_decode, fn)

def gd_last_only(m, s, max_len=50, bos_idx=2, eos_idx=3):        # only the newest token fed back, no cache
    was = m.training; m.eval()
    ys = [bos_idx]
    with torch.no_grad():
        for _ in range(max_len):
            nxt = int(m(s[None], torch.tensor([ys[-1:]]))[0, -1].argmax())
            if nxt == eos_idx: break
            ys.append(nxt)
    m.train(was)
    return torch.tensor(ys[1:], dtype=torch.long)
def gd_sample(m, s, max_len=50, bos_idx=2, eos_idx=3):           # samples instead of taking the argmax
    was = m.training; m.eval()
    ys = [bos_idx]
    with torch.no_grad():
        for _ in range(max_len):
            nxt = int(torch.multinomial(m(s[None], torch.tensor([ys]))[0, -1].softmax(-1), 1))
            if nxt == eos_idx: break
            ys.append(nxt)
    m.train(was)
    return torch.tensor(ys[1:], dtype=torch.long)
def gd_from_eos(m, s, max_len=50, bos_idx=2, eos_idx=3):  return _gd(m, s, max_len, eos_idx, eos_idx)
def gd_hard_eos(m, s, max_len=50, bos_idx=2, eos_idx=3):  return _gd(m, s, max_len, bos_idx, 3)
def gd_no_batch(m, s, max_len=50, bos_idx=2, eos_idx=3):         # the source without its batch dim
    ys = [bos_idx]
    with torch.no_grad():
        for _ in range(max_len):
            nxt = int(m(s, torch.tensor(ys))[-1].argmax())
            if nxt == eos_idx: break
            ys.append(nxt)
    return torch.tensor(ys[1:])
def gd_skip_eos(m, s, max_len=50, bos_idx=2, eos_idx=3):         # never stops, drops the EOS ids it meets
    out = _gd(m, s, max_len, bos_idx, eos_idx, stop=False)
    return out[out != eos_idx]
def gd_cpu(m, s, max_len=50, bos_idx=2, eos_idx=3):              # the target so far made on the CPU
    was = m.training; m.eval()
    ys = torch.tensor([[bos_idx]])
    with torch.no_grad():
        for _ in range(max_len):
            nxt = m(s[None], ys)[0, -1].argmax()
            if nxt == eos_idx: break
            ys = torch.cat([ys, nxt.view(1, 1)], 1)
    m.train(was)
    return ys[0, 1:]

def test_check_greedy_decode_new_mistakes():
    assert_check(check_greedy_decode, greedy_decode, [
        (gd_last_only, 'newest token'), (gd_sample, 'does not sample'), (gd_from_eos, 'started from eos_idx'),
        (gd_hard_eos, 'after EOS'), (gd_no_batch, 'src\\[None\\]'), (gd_skip_eos, 'after EOS'),
        (gd_cpu, 'made on the CPU|device')])


def gd_encode_once(m, s, max_len=50, bos_idx=2, eos_idx=3):      # the encoder once, the decoder per token: valid
    with torch.no_grad():
        was = m.training; m.eval()
        memory = m.encode(s[None])
        ys = torch.full((1, 1), bos_idx, dtype=torch.long, device=s.device)
        for _ in range(max_len):
            nxt = m.decode(ys, memory)[0, -1].argmax()
            if nxt.item() == eos_idx: break
            ys = torch.cat([ys, nxt.view(1, 1)], 1)
        m.train(was)
    return ys[0, 1:]
def gd_with_cache(m, s, max_len=50, bos_idx=2, eos_idx=3):       # the KV cache of what comes after the exercise
    cache = m.new_cache()
    return _gd(m, s, max_len, bos_idx, eos_idx) if cache is None else None

def test_check_greedy_decode_encode_once():
    assert_check(check_greedy_decode, gd_encode_once)
    assert_check(check_greedy_decode, greedy_decode, [(gd_with_cache, 'keeps no cache')])

def ca_softmax_queries(ca, x, m, pm=None):                        # the softmax over the queries
    q, k, v = (split_heads(f(t), ca.heads) for f, t in ((ca.toqueries, x), (ca.tokeys, m), (ca.tovalues, m)))
    w = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if pm is not None: w = w.masked_fill(~pm[:, None, None, :], neg_fill(w.dtype))
    w = w.softmax(-2)
    if pm is not None: w = w.masked_fill(~pm[:, None, None, :], 0.)
    return ca.unifyheads(merge_heads(F.dropout(w, ca.dropout, ca.training)))  if False else ca.unifyheads(merge_heads(F.dropout(w, ca.dropout, ca.training) @ v))
def ca_merge_no_transpose(ca, x, m, pm=None):                     # (b, h, t, s) reshaped straight to (b, t, e)
    q, k, v = (split_heads(f(t), ca.heads) for f, t in ((ca.toqueries, x), (ca.tokeys, m), (ca.tovalues, m)))
    from transformers_scratch.masks import masked_softmax
    w = F.dropout(masked_softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), None if pm is None else pm[:, None, None, :]), ca.dropout, ca.training)
    return ca.unifyheads((w @ v).reshape(x.shape))
def ca_mask_on_queries(ca, x, m, pm=None):                        # the memory mask broadcast over the queries
    q, k, v = (split_heads(f(t), ca.heads) for f, t in ((ca.toqueries, x), (ca.tokeys, m), (ca.tovalues, m)))
    w = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if pm is not None: w = w.masked_fill(~pm[:, None, :, None], neg_fill(w.dtype))
    return ca.unifyheads(merge_heads(F.dropout(w.softmax(-1), ca.dropout, ca.training) @ v))

def db_res_normed(blk, x, m, pad=None, mpad=None, cache=None):   # pre-norm with the residual taken after the norm
    if not blk.prenorm: return decoder_block(blk, x, m, pad, mpad, cache)
    h = blk.norm1(x); h = h + blk.do(blk.attention(h, pad, cache))
    g = blk.norm2(h); h = g + blk.do(blk.cross_attention(g, mpad, cache, kv=m))
    g = blk.norm3(h); return g + blk.ff(g)

def tf_labels_shifted(t, bos_idx=2, eos_idx=3, pad_idx=1):       # the labels moved left as well
    dec, lab = teacher_forcing(t, bos_idx, eos_idx, pad_idx)
    return dec, torch.cat([lab[:, 1:], lab.new_full((t.size(0), 1), pad_idx)], 1)

def test_more_new_mistakes():
    assert_check(check_cross_attention, cross_attention, [
        (ca_softmax_queries, 'over the queries'), (ca_merge_no_transpose, 'merged without'), (ca_mask_on_queries, 'KEYS')])
    assert_check(check_decoder_block, decoder_block, [(db_res_normed, 'adds the normalised stream')])
    assert_check(check_teacher_forcing, teacher_forcing, [(tf_labels_shifted, 'lost their first token')])

def ca_one_head(ca, x, m, pm=None):                               # no split into heads: one head of size e
    from transformers_scratch.masks import masked_softmax
    w = masked_softmax(ca.toqueries(x) @ ca.tokeys(m).transpose(-2, -1) / math.sqrt(x.size(-1)), None if pm is None else pm[:, None, :])
    return ca.unifyheads(F.dropout(w, ca.dropout, ca.training) @ ca.tovalues(m))
def ca_sdpa_bool(ca, x, m, pm=None):                              # SDPA with a boolean mask: NaN where the memory is all padding
    q, k, v = (split_heads(f(t), ca.heads) for f, t in ((ca.toqueries, x), (ca.tokeys, m), (ca.tovalues, m)))
    mask = None if pm is None else pm[:, None, None, :]
    return ca.unifyheads(merge_heads(F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=ca.dropout if ca.training else 0.)))

def test_cross_attention_one_head_and_sdpa_bool():
    assert_check(check_cross_attention, cross_attention, [(ca_one_head, 'one head')])
    q = torch.randn(1, 1, 2, 4)                                   # recent PyTorch gives zeros for a query that sees no key
    if torch.isnan(F.scaled_dot_product_attention(q, q, q, attn_mask=torch.zeros(1, 1, 2, 2, dtype=torch.bool))).any():
        assert_check(check_cross_attention, cross_attention, [(ca_sdpa_bool, 'SDPA given a boolean mask')])
    else: assert_check(check_cross_attention, ca_sdpa_bool)

def test_tuple_answers_are_told_the_lessons_convention():   # nn.MultiheadAttention / Hugging Face shapes
    assert_check(check_cross_attention, cross_attention, [(lambda *a: (cross_attention(*a), None), 'MultiheadAttention')])
    assert_check(check_decoder_block, decoder_block, [(lambda *a: (decoder_block(*a), None), 'output alone')])
    assert_check(check_seq2seq_loss, seq2seq_loss, [(lambda lg, *a: (seq2seq_loss(lg, *a), lg), 'loss alone')])
    assert_check(check_greedy_decode, greedy_decode, [(lambda *a: (greedy_decode(*a), 0.), 'ids alone')])

def ca_inf_nan_to_num(ca, x, m, pm=None):                         # -inf fill, the NaN of an all-padding memory turned into 0
    q, k, v = (split_heads(f(t), ca.heads) for f, t in ((ca.toqueries, x), (ca.tokeys, m), (ca.tovalues, m)))
    w = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if pm is not None: w = w.masked_fill(~pm[:, None, None, :], float('-inf'))
    w = F.dropout(w.softmax(-1).nan_to_num(0.), ca.dropout, ca.training)
    return ca.unifyheads(merge_heads(w @ v))
def sl_permute(lg, lab, pad_idx=1, smoothing=0.):
    return F.cross_entropy(lg.permute(0, 2, 1), lab, ignore_index=pad_idx, label_smoothing=smoothing)

def test_more_valid_styles():
    assert_check(check_cross_attention, ca_inf_nan_to_num)
    assert_check(check_seq2seq_loss, sl_permute)

def db_cpu_mask(blk, x, m, pad=None, mpad=None, cache=None):      # a mask rebuilt with a CPU tensor
    if mpad is not None: mpad = mpad & torch.ones(m.shape[:2], dtype=torch.bool)
    return decoder_block(blk, x, m, pad, mpad, cache)

def test_decoder_block_device():
    assert_check(check_decoder_block, decoder_block, [(db_cpu_mask, 'made on the CPU|device')])

def ca_unrelated_crash(ca, x, m, pm=None): raise RuntimeError("CUDA out of memory")   # not a shape: no shape story

def test_an_unrelated_crash_gets_no_shape_story():
    assert_check(check_cross_attention, cross_attention, [(ca_unrelated_crash, r'^your code raised RuntimeError')])

def ca_scale_after(ca, x, m, pm=None):                              # the 1/√s after the softmax
    from transformers_scratch.masks import masked_softmax
    q, k, v = (split_heads(f(t), ca.heads) for f, t in ((ca.toqueries, x), (ca.tokeys, m), (ca.tovalues, m)))
    w = masked_softmax(q @ k.transpose(-2, -1), None if pm is None else pm[:, None, None, :]) / math.sqrt(q.size(-1))
    return ca.unifyheads(merge_heads(F.dropout(w, ca.dropout, ca.training) @ v))
def db_no_norm3(blk, x, m, pad=None, mpad=None, cache=None):        # the MLP without its norm
    if not blk.prenorm: return decoder_block(blk, x, m, pad, mpad, cache)
    h = x + blk.do(blk.attention(blk.norm1(x), pad, cache))
    h = h + blk.do(blk.cross_attention(blk.norm2(h), mpad, cache, kv=m))
    return h + blk.ff(h)

def test_scale_after_softmax_and_missing_norm():
    assert_check(check_cross_attention, cross_attention, [(ca_scale_after, 'after the softmax: divide')])
    assert_check(check_decoder_block, decoder_block, [(db_no_norm3, 'norm3 is missing')])

def gd_without_bos(m, s, max_len=50, bos_idx=2, eos_idx=3):        # feeds the target without its BOS: empty at first
    was = m.training; m.eval()
    ys = torch.tensor([[bos_idx]], device=s.device)
    with torch.no_grad():
        for _ in range(max_len):
            nxt = m(s[None], ys[:, 1:])[0, -1].argmax()
            if nxt == eos_idx: break
            ys = torch.cat([ys, nxt.view(1, 1)], 1)
    m.train(was)
    return ys[0, 1:]

def test_greedy_decode_without_bos():
    assert_check(check_greedy_decode, greedy_decode, [(gd_without_bos, 'empty target')])

# --- issue 31, second audit: results built on the CPU from Python values, gradients left off, norms paired wrongly ---

def vl_list(x, pad_idx=1):      return torch.tensor([int((r != pad_idx).sum()) for r in x])        # the audit's answer
def vl_items(x, pad_idx=1):     return torch.LongTensor([(r != pad_idx).sum().item() for r in x])
def vl_numpy(x, pad_idx=1):     return torch.from_numpy((x != pad_idx).sum(1).numpy())
def vl_zeros_loop(x, pad_idx=1):                                   # a CPU tensor filled row by row
    out = torch.zeros(x.size(0), dtype=torch.long)
    for i in range(x.size(0)): out[i] = (x[i] != pad_idx).sum()
    return out
def vl_list_dev(x, pad_idx=1):  return torch.tensor([int((r != pad_idx).sum()) for r in x], device=x.device)
def vl_list_to(x, pad_idx=1):   return torch.tensor([int((r != pad_idx).sum()) for r in x]).to(x.device)
def vl_new_tensor(x, pad_idx=1): return x.new_tensor([int((r != pad_idx).sum()) for r in x])
def vl_stack(x, pad_idx=1):     return torch.stack([(r != pad_idx).sum() for r in x])

def test_check_valid_lens_made_on_cpu():
    for fn in (vl_list_dev, vl_list_to, vl_new_tensor, vl_stack):      # through Python values, but put on x's device
        assert_check(check_valid_lens, fn)
    assert_check(check_valid_lens, valid_lens, [(fn, 'made on the CPU|device') for fn in (vl_list, vl_items, vl_numpy, vl_zeros_loop)])

def gd_grad_off(m, s, max_len=50, bos_idx=2, eos_idx=3):          # torch.set_grad_enabled(False) never switched back
    torch.set_grad_enabled(False)
    return greedy_decode(m, s, max_len, bos_idx, eos_idx)
def gd_list_no_device(m, s, max_len=50, bos_idx=2, eos_idx=3):    # ids kept in a list, the result made on the CPU
    was = m.training; m.eval(); ys = [bos_idx]
    with torch.no_grad():
        for _ in range(max_len):
            nxt = m(s[None], torch.tensor([ys], device=s.device))[0, -1].argmax().item()
            if nxt == eos_idx: break
            ys.append(nxt)
    m.train(was)
    return torch.tensor(ys[1:], dtype=torch.long)

def test_check_greedy_decode_global_state_and_cpu():
    assert_check(check_greedy_decode, greedy_decode, [(gd_grad_off, 'switched gradients off'),
                                                      (gd_list_no_device, 'made on the CPU')])
    assert torch.is_grad_enabled()

def _db_norms(blk, x, m, pad, mpad, cache, norms):                 # the block with its norms paired to other sublayers
    n = [(blk.norm1, blk.norm2, blk.norm3)[i] for i in norms]
    if blk.prenorm:
        h = x + blk.do(blk.attention(n[0](x), pad, cache))
        h = h + blk.do(blk.cross_attention(n[1](h), mpad, cache, kv=m))
        return h + blk.ff(n[2](h))
    h = n[0](x + blk.do(blk.attention(x, pad, cache)))
    h = n[1](h + blk.do(blk.cross_attention(h, mpad, cache, kv=m)))
    return n[2](h + blk.ff(h))
def db_norm23(blk, x, m, pad=None, mpad=None, cache=None):    return _db_norms(blk, x, m, pad, mpad, cache, (0, 2, 1))
def db_norm_cycle(blk, x, m, pad=None, mpad=None, cache=None): return _db_norms(blk, x, m, pad, mpad, cache, (1, 2, 0))
def db_norm2_twice(blk, x, m, pad=None, mpad=None, cache=None): return _db_norms(blk, x, m, pad, mpad, cache, (0, 1, 1))
def db_norm1_twice(blk, x, m, pad=None, mpad=None, cache=None): return _db_norms(blk, x, m, pad, mpad, cache, (0, 0, 2))

def test_check_decoder_block_norms_paired():
    assert_check(check_decoder_block, decoder_block, [
        (db_norm23, 'paired norm3 with the cross-attention, norm2 with the MLP'), (db_norm_cycle, 'norms are swapped'),
        (db_norm2_twice, 'norm2 is used twice.*norm3 never'), (db_norm1_twice, 'norm1 is used twice.*norm2 never')])

def tf_lists(tgt, bos_idx=2, eos_idx=3, pad_idx=1):                # rows built from Python ints: the result on the CPU
    b, t = tgt.shape
    dec, lab = [], []
    for r in range(b):
        row = [int(tgt[r, j]) for j in range(t)]
        n = sum(i != pad_idx for i in row)
        dec.append([bos_idx] + row); lab.append(row[:n] + [eos_idx] + row[n:])
    return torch.tensor(dec), torch.tensor(lab)
def tf_lists_dev(tgt, bos_idx=2, eos_idx=3, pad_idx=1):            # valid: the same, put on tgt's device
    dec, lab = tf_lists(tgt, bos_idx, eos_idx, pad_idx)
    return dec.to(tgt.device), lab.to(tgt.device)

def test_check_teacher_forcing_made_on_cpu():
    assert_check(check_teacher_forcing, tf_lists_dev)
    assert_check(check_teacher_forcing, teacher_forcing, [(tf_lists, 'made on the CPU')])


# a dropout mask of its own, shared by the batch, the heads or the queries: the first two were accepted (the spread and
# the mean of the output were right)
def _ca_mask_shape(shape):
    def ca(sa, x, m, pm=None):
        h = sa.heads
        q, k, v = split_heads(sa.toqueries(x), h), split_heads(sa.tokeys(m), h), split_heads(sa.tovalues(m), h)
        w = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        if pm is not None: w = w.masked_fill(~pm[:, None, None, :], neg_fill(w.dtype))
        w = F.softmax(w, -1)
        if pm is not None: w = w.masked_fill(~pm[:, None, None, :], 0.)
        if sa.training and sa.dropout: w = w * (torch.rand(shape(w), device=w.device) >= sa.dropout) / (1 - sa.dropout)
        return sa.unifyheads(merge_heads(w @ v))
    return ca
ca_own_mask = _ca_mask_shape(lambda w: w.shape)                                   # valid: one draw per weight
ca_mask_2d = _ca_mask_shape(lambda w: w.shape[-2:])                               # (t_x, t_m) for every sentence and head
ca_mask_per_key = _ca_mask_shape(lambda w: w.shape[-1:])
ca_mask_over_heads = _ca_mask_shape(lambda w: (w.size(0), 1, *w.shape[-2:]))

def test_check_cross_attention_dropout_per_weight():
    assert_check(check_cross_attention, ca_own_mask)
    assert_check(check_cross_attention, cross_attention, [
        (ca_mask_2d, 'shared by the heads'), (ca_mask_per_key, 'shared by the queries'),
        (ca_mask_over_heads, 'shared by the heads')])
