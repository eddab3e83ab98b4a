"Each check in lesson 24 accepts the solution and rejects the stub and the typical wrong answers with the right hint."
import pytest, torch
from transformers_scratch.core import TODO, assert_check
from transformers_scratch.gpt2 import split_qkv, block_state
from transformers_scratch.checks.gpt2 import check_split_qkv, check_block_state

pytestmark = pytest.mark.usefixtures('one_thread')
def stub(*args, **kwargs): raise TODO("not yet")

# --- split_qkv -----------------------------------------------------------------------------------------------------
def parts(w, b, e): return [(w[:, i * e:(i + 1) * e], b[i * e:(i + 1) * e]) for i in range(3)]
def qkv_no_transpose(w, b): return tuple(parts(w, b, w.size(0)))
def qkv_kqv(w, b): q, k, v = split_qkv(w, b); return (k, q, v)
def qkv_vkq(w, b): q, k, v = split_qkv(w, b); return (v, k, q)
def qkv_wrong_dim(w, b): e = w.size(0); return tuple((w.T[:, i * e // 3:(i + 1) * e // 3], b[i * e:(i + 1) * e]) for i in range(3))
def qkv_strided(w, b): e = w.size(0); return tuple((w[:, i::3].T, b[i * e:(i + 1) * e]) for i in range(3))
def qkv_whole(w, b): return tuple((w.T, b) for _ in range(3))
def qkv_bias_order(w, b): (wq, bq), (wk, bk), (wv, bv) = split_qkv(w, b); return ((wq, bk), (wk, bq), (wv, bv))
def qkv_per_head(w, b):
    e = w.size(0); h = 2 if e % 2 == 0 else 1
    if e == 4: h = 1
    s = e // h
    return tuple((w.view(e, h, 3, s)[:, :, i].reshape(e, e).T, b[i * e:(i + 1) * e]) for i in range(3))
def qkv_float(w, b): return tuple((W.float(), B.float()) for W, B in split_qkv(w, b))
def qkv_in_place(w, b): w.mul_(1.0001); return split_qkv(w, b)
def qkv_cpu(w, b): return tuple((W.cpu() if W.device.type != 'meta' else torch.zeros(W.shape), B) for W, B in split_qkv(w, b))
def qkv_hard_coded(w, b): return tuple((w[:, i * 6:(i + 1) * 6].T, b[i * 6:(i + 1) * 6]) for i in range(3))

def test_check_split_qkv():
    assert_check(check_split_qkv, split_qkv, [
        (stub, 'not solved'), (qkv_no_transpose, 'not transposed'), (qkv_kqv, r'\[query \| key \| value\]'),
        (qkv_vkq, 'in that order'), (qkv_wrong_dim, 'split w .* along dim 1'), (qkv_strided, 'every third column'),
        (qkv_whole, 'whole c_attn weight'), (qkv_bias_order, 'bias comes from the wrong block'), (qkv_per_head, "GPT-NeoX"),
        (qkv_float, 'keep the dtype'), (qkv_in_place, 'changed its input'), (qkv_cpu, "device='meta'"),
        (qkv_hard_coded, r'should be \(8, 8\)')])

# --- block_state ---------------------------------------------------------------------------------------------------
def with_(fn):
    def f(sd, i): return fn(block_state(sd, i), sd, i)
    return f
bs_no_T_cproj = with_(lambda o, sd, i: {**o, 'attention.unifyheads.weight': sd[f'h.{i}.attn.c_proj.weight']})
bs_no_T_fc = with_(lambda o, sd, i: {**o, 'ff.0.weight': sd[f'h.{i}.mlp.c_fc.weight']})
bs_swap_norms = with_(lambda o, sd, i: {**o, 'norm1.weight': o['norm2.weight'], 'norm2.weight': o['norm1.weight']})
bs_qk = with_(lambda o, sd, i: {**o, 'attention.toqueries.weight': o['attention.tokeys.weight'], 'attention.tokeys.weight': o['attention.toqueries.weight']})
bs_layer0 = lambda sd, i: block_state(sd, 0)
bs_prefix = with_(lambda o, sd, i: {f'trunk.blocks.{i}.{k}': v for k, v in o.items()})
bs_missing = with_(lambda o, sd, i: {k: v for k, v in o.items() if not k.startswith('norm2')})
bs_hf_names = with_(lambda o, sd, i: {**o, 'mlp.c_proj.bias': o['ff.2.bias']})
bs_float = with_(lambda o, sd, i: {k: v.float() for k, v in o.items()})
bs_cpu = with_(lambda o, sd, i: {k: torch.zeros(v.shape) if v.device.type == 'meta' else v for k, v in o.items()})
def bs_transformer_prefix(sd, i): return block_state({k[len('transformer.'):]: v for k, v in {'transformer.' + k: v for k, v in sd.items()}.items()}, i) and sd['transformer.wte.weight']

def test_check_block_state():
    assert_check(check_block_state, block_state, [
        (stub, 'not solved'), (bs_no_T_cproj, 'unifyheads.weight is not transposed'), (bs_no_T_fc, r'ff.0.weight has shape .* transpose'),
        (bs_swap_norms, 'ln_1 is the norm before the attention'), (bs_qk, r'\[query \| key \| value\]'), (bs_layer0, 'comes from layer 0, not 1'),
        (bs_prefix, 'without a .trunk.blocks'), (bs_missing, 'missing keys for layer 0: norm2'), (bs_hf_names, 'unexpected keys: mlp.c_proj.bias'),
        (bs_float, 'keep the tensors. dtype'), (bs_cpu, "device='meta'"), (bs_transformer_prefix, "without a 'transformer.' prefix")])
