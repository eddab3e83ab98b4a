"Each check in lesson 24 accepts the solution and rejects the stub and the typical wrong answers with the right hint."
import pytest, torch
from transformers_scratch.checks.toolkit import assert_check
from transformers_scratch.gpt2 import split_qkv, block_state
from transformers_scratch.checks.gpt2 import check_split_qkv, check_block_state
from conftest import stub

pytestmark = pytest.mark.usefixtures('one_thread')

# --- split_qkv -----------------------------------------------------------------------------------------------------
def parts(w, b, e): return [(w[:, i * e:(i + 1) * e], b[i * e:(i + 1) * e]) for i in range(3)]
def qkv_no_transpose(w, b): return tuple(parts(w, b, w.size(0)))
def qkv_kqv(w, b): q, k, v = split_qkv(w, b); return (k, q, v)
def qkv_vkq(w, b): q, k, v = split_qkv(w, b); return (v, k, q)
def qkv_wrong_dim(w, b): e = w.size(0); return tuple((w.T[:, i * e // 3:(i + 1) * e // 3], b[i * e:(i + 1) * e]) for i in range(3))
def qkv_rows(w, b): e = w.size(0); return tuple((w.T[i * e // 3:(i + 1) * e // 3], b[i * e:(i + 1) * e]) for i in range(3))   # dim 0 of w.T... of the wrong size
def qkv_strided(w, b): e = w.size(0); return tuple((w[:, i::3].T, b[i * e:(i + 1) * e]) for i in range(3))
def qkv_whole(w, b): return tuple((w.T, b) for _ in range(3))
def qkv_bias_order(w, b): (wq, bq), (wk, bk), (wv, bv) = split_qkv(w, b); return ((wq, bk), (wk, bq), (wv, bv))
def qkv_per_head(w, b):
    e = w.size(0); h = 2 if e % 2 == 0 else 1
    if e == 4: h = 1
    s = e // h
    return tuple((w.view(e, h, 3, s)[:, :, i].reshape(e, e).T, b[i * e:(i + 1) * e]) for i in range(3))
def qkv_reshape(w, b): e = w.size(0); return tuple((w.reshape(3 * e, e)[i * e:(i + 1) * e], b[i * e:(i + 1) * e]) for i in range(3))
def qkv_bias_column(w, b): return tuple((W, B[:, None]) for W, B in split_qkv(w, b))               # a "transposed" bias
def qkv_bias_T(w, b): return tuple((W, B.T) for W, B in split_qkv(w, b))                            # .T on a vector: a no-op
def qkv_float(w, b): return tuple((W.float(), B.float()) for W, B in split_qkv(w, b))
def qkv_in_place(w, b): w.mul_(1.0001); return split_qkv(w, b)
def qkv_t_(w, b): return tuple((W.T, B) for W, B in split_qkv(w.t_(), b))                            # transposes the caller's w
def qkv_cpu(w, b): return tuple((W.cpu(), B.cpu()) for W, B in split_qkv(w, b))
def qkv_new_cpu(w, b):                                                                               # fresh tensors, always on the CPU
    out = []
    for W, B in split_qkv(w, b):
        n = torch.empty(W.shape, dtype=W.dtype); n[:] = W
        out.append((n, B))
    return tuple(out)
def qkv_numpy(w, b): return tuple((torch.from_numpy(W.detach().float().numpy()).to(W.dtype), B) for W, B in split_qkv(w, b))
def qkv_hard_coded(w, b): return tuple((w[:, i * 6:(i + 1) * 6].T, b[i * 6:(i + 1) * 6]) for i in range(3))
def qkv_not_pairs(w, b): return [W for W, _ in split_qkv(w, b)]
def qkv_chunk_rows(w, b): return tuple(zip(w.chunk(3, 0), b.chunk(3)))                              # splits the input dim
# right answers in other words: copies instead of views, chunk, contiguous
def qkv_copies(w, b): return tuple((W.clone(), B.clone()) for W, B in split_qkv(w, b))
def qkv_chunk(w, b): return tuple((W.T.contiguous(), B) for W, B in zip(w.chunk(3, 1), b.chunk(3)))

def test_check_split_qkv():
    assert_check(check_split_qkv, split_qkv, [
        (stub, 'not solved'), (qkv_no_transpose, 'not transposed'), (qkv_kqv, r'\[query \| key \| value\]'),
        (qkv_vkq, 'in that order'), (qkv_wrong_dim, r'split w .* along dim 1'), (qkv_rows, r'split w .* along dim 1'),
        (qkv_chunk_rows, r'split w .* along dim 1'), (qkv_strided, 'every third column'),
        (qkv_whole, 'whole c_attn weight'), (qkv_bias_order, 'bias comes from the wrong block'), (qkv_per_head, "GPT-NeoX"),
        (qkv_reshape, 'reshape .* is not a transpose'), (qkv_bias_column, r'bias has shape \(6, 1\).*vectors'),
        (qkv_bias_T, r'you transposed a bias .*\.T does nothing'), (qkv_float, "keep the inputs' dtype torch.float64"),
        (qkv_in_place, r'changed its input \(argument 1\) in place'), (qkv_t_, r'changed its input \(argument 1\)'),
        (qkv_cpu, "device='meta'"), (qkv_new_cpu, "device='meta'"), (qkv_numpy, "device='meta'"),
        (qkv_hard_coded, r'should have shape \(8, 8\), got \(6, 8\).*hard-coded'), (qkv_not_pairs, 'pair of tensors')])
    for right in (qkv_copies, qkv_chunk): assert_check(check_split_qkv, right)

def test_split_qkv_hints_name_the_input():
    "A hint says which input it was about: shapes and dtypes of w and b"
    from transformers_scratch.checks.toolkit import CheckError
    with pytest.raises(CheckError, match=r'for w, b of \(8, 24\) float64, \(24,\) float64'): check_split_qkv(qkv_float)
    def crash(w, b):
        if w.size(0) == 8: raise IndexError('boom')
        return split_qkv(w, b)
    with pytest.raises(CheckError, match=r'raised IndexError on \(\(8, 24\) float64, \(24,\) float64\).*ran on \(\(6, 18\) float32'):
        check_split_qkv(crash)

# --- block_state ---------------------------------------------------------------------------------------------------
def with_(fn):
    def f(sd, i): return fn(block_state(sd, i), sd, i)
    return f
bs_no_T_cproj = with_(lambda o, sd, i: {**o, 'attention.unifyheads.weight': sd[f'h.{i}.attn.c_proj.weight']})
bs_no_T_fc = with_(lambda o, sd, i: {**o, 'ff.0.weight': sd[f'h.{i}.mlp.c_fc.weight']})
def bs_no_T_attn(sd, i):                              # c_proj and the MLP transposed, c_attn's blocks not
    e, w = sd[f'h.{i}.ln_1.weight'].size(0), sd[f'h.{i}.attn.c_attn.weight']
    return {**block_state(sd, i), **{f'attention.{n}.weight': w[:, j * e:(j + 1) * e] for j, n in enumerate(('toqueries', 'tokeys', 'tovalues'))}}
def bs_T_before_split(sd, i):                         # transposes c_attn whole, then splits it as if it were (e, 3e)
    (wq, bq), (wk, bk), (wv, bv) = split_qkv(sd[f'h.{i}.attn.c_attn.weight'].T, sd[f'h.{i}.attn.c_attn.bias'])
    return {**block_state(sd, i), 'attention.toqueries.weight': wq, 'attention.toqueries.bias': bq}
bs_reshape = with_(lambda o, sd, i: {**o, 'ff.2.weight': sd[f'h.{i}.mlp.c_proj.weight'].reshape(o['ff.2.weight'].shape)})
bs_T_vectors = with_(lambda o, sd, i: {k: v if v.dim() == 2 else v.T for k, v in o.items()})          # .T on the vectors too
bs_T_norm = with_(lambda o, sd, i: {**o, 'norm1.weight': sd[f'h.{i}.ln_1.weight'][None]})             # a LayerNorm weight made (1, e)
def bs_transpose_all(sd, i): return {k: v.transpose(0, 1) for k, v in block_state(sd, i).items()}      # crashes on the vectors
bs_swap_norms = with_(lambda o, sd, i: {**o, 'norm1.weight': o['norm2.weight'], 'norm2.weight': o['norm1.weight']})
bs_qk = with_(lambda o, sd, i: {**o, 'attention.toqueries.weight': o['attention.tokeys.weight'], 'attention.tokeys.weight': o['attention.toqueries.weight']})
bs_layer0 = lambda sd, i: block_state(sd, 0)
bs_prefix = with_(lambda o, sd, i: {f'trunk.blocks.{i}.{k}': v for k, v in o.items()})
bs_missing = with_(lambda o, sd, i: {k: v for k, v in o.items() if not k.startswith('norm2')})
bs_hf_names = with_(lambda o, sd, i: {**o, 'mlp.c_proj.bias': o['ff.2.bias']})
bs_float = with_(lambda o, sd, i: {k: v.float() for k, v in o.items()})
bs_cpu = with_(lambda o, sd, i: {k: v.cpu() for k, v in o.items()})
def bs_new_cpu(sd, i): return {k: torch.zeros(v.shape, dtype=v.dtype) + v for k, v in block_state(sd, i).items()}
def bs_transformer_prefix(sd, i): return block_state({k.removeprefix('transformer.'): v for k, v in sd.items() if k.startswith('transformer.')}, i)
def bs_sd_T_in_place(sd, i):                          # "transposes" the caller's tensors: sd[k] = sd[k].T
    for n in ('attn.c_proj', 'mlp.c_fc', 'mlp.c_proj'): sd[f'h.{i}.{n}.weight'] = sd[f'h.{i}.{n}.weight'].T
    return with_(lambda o, sd, i: o)(sd, i)
def bs_sd_pop(sd, i): sd.pop('wte.weight'); return block_state(sd, i)
def bs_t_(sd, i): out = block_state(sd, i); sd[f'h.{i}.mlp.c_fc.weight'].t_(); return out
def bs_mul_(sd, i): out = block_state(sd, i); out['norm1.weight'].mul_(1.); out['norm1.bias'].add_(1.); return out
# right answers in other words: copies, contiguous tensors
def bs_copies(sd, i): return {k: v.clone() for k, v in block_state(sd, i).items()}
def bs_contiguous(sd, i): return {k: v.contiguous() for k, v in block_state(sd, i).items()}

def test_check_block_state():
    assert_check(check_block_state, block_state, [
        (stub, 'not solved'), (bs_no_T_cproj, 'unifyheads.weight is not transposed'), (bs_no_T_fc, r'ff.0.weight has shape .* transpose'),
        (bs_no_T_attn, r'toqueries.weight is not transposed.*each block of c_attn'), (bs_T_before_split, 'whole c_attn weight: split it into three first'),
        (bs_reshape, r'ff.2.weight: reshape .* is not a transpose'), (bs_T_vectors, r'you transposed a bias or a LayerNorm weight: \.T does nothing'),
        (bs_T_norm, r'norm1.weight has shape \(1, 8\).*vectors'), (bs_transpose_all, 'you transposed a 1-D tensor'),
        (bs_swap_norms, 'ln_1 is the norm before the attention'), (bs_qk, r'\[query \| key \| value\]'), (bs_layer0, 'comes from layer 0, not 1'),
        (bs_prefix, 'without a .trunk.blocks'), (bs_missing, 'missing keys: norm2'), (bs_hf_names, 'unexpected keys: mlp.c_proj.bias'),
        (bs_float, "keep the inputs' dtype torch.float64"), (bs_cpu, "device='meta'"), (bs_new_cpu, "device='meta'"),
        (bs_transformer_prefix, "without a 'transformer.' prefix"), (bs_sd_T_in_place, 'changed the dict sd'),
        (bs_sd_pop, 'changed the dict sd'), (bs_t_, r'changed its input \(argument 1\) in place'),
        (bs_mul_, r'changed its input \(argument 1\) in place')])
    for right in (bs_copies, bs_contiguous): assert_check(check_block_state, right)

def test_block_state_hints_name_the_input():
    from transformers_scratch.checks.toolkit import CheckError
    with pytest.raises(CheckError, match='for layer 2 of a GPT-2 of e=12, 3 layers, float64'): check_block_state(bs_float)

# --- issue 23: whatever a wrong answer returns, the check gives its own verdict (it never crashes in its own code) ------
def qkv_nones(w, b): return (None, None, None)
def qkv_numbers(w, b): return ((1, 2), (3, 4), (5, 6))
def qkv_raises_bf16(w, b):
    if w.dtype == torch.bfloat16: raise RuntimeError("no bfloat16 here")
    return split_qkv(w, b)
def qkv_vector_w(w, b): return tuple((W[0], B) for W, B in split_qkv(w, b))

def test_split_qkv_odd_answers():
    assert_check(check_split_qkv, split_qkv, [
        (lambda w, b: None, 'return three .* got NoneType'), (qkv_nones, 'pair of tensors'), (qkv_numbers, 'pair of tensors'),
        (qkv_raises_bf16, 'raised RuntimeError'), (qkv_vector_w, 'weight should be')])

def bs_none(sd, i): return None
def bs_values_none(sd, i): return {k: None for k in block_state(sd, i)}
def bs_lists(sd, i): return {k: v.tolist() for k, v in block_state(sd, i).items()}
def bs_int_keys(sd, i): return {**block_state(sd, i), 0: sd[f'h.{i}.ln_1.weight']}
def bs_scalar(sd, i): return {**block_state(sd, i), 'norm1.bias': sd[f'h.{i}.ln_1.bias'].sum()}

def test_block_state_odd_answers():
    assert_check(check_block_state, block_state, [
        (bs_none, 'return a dict .* got NoneType'), (bs_values_none, 'should be a tensor, got NoneType'),
        (bs_lists, 'should be a tensor, got list'), (bs_int_keys, 'unexpected keys: 0'),
        (bs_scalar, r'norm1.bias has shape \(\), expected \(8,\)')])

# --- issue 31: valid answers in other styles ---------------------------------------------------------------------------
def qkv_split_t(w, b): return tuple((W.t(), B) for W, B in zip(torch.split(w, w.size(0), dim=1), torch.split(b, w.size(0))))
def qkv_view_unbind(w, b):                                 # (e, 3, e): the three blocks side by side, unbound
    e = w.size(0)
    return tuple((W.transpose(0, 1), B) for W, B in zip(w.view(e, 3, e).unbind(1), b.view(3, e).unbind(0)))
def qkv_T_chunk_rows(w, b): return tuple(zip(w.T.chunk(3, 0), b.chunk(3)))          # rows of the transpose: already (out, in)
def qkv_einsum(w, b):                                      # a transpose written as an einsum, blocks by tensor_split
    return tuple((torch.einsum('io->oi', W), B) for W, B in zip(torch.tensor_split(w, 3, dim=1), torch.tensor_split(b, 3)))

def bs_loop(sd, i):                                        # a name map and a loop, Conv1D weights transposed by permute
    names = {'norm1': 'ln_1', 'norm2': 'ln_2', 'attention.unifyheads': 'attn.c_proj', 'ff.0': 'mlp.c_fc', 'ff.2': 'mlp.c_proj'}
    out = {}
    for ours, theirs in names.items():
        w = sd[f'h.{i}.{theirs}.weight']
        out[f'{ours}.weight'], out[f'{ours}.bias'] = (w.permute(1, 0) if w.dim() == 2 else w), sd[f'h.{i}.{theirs}.bias']
    w, b = sd[f'h.{i}.attn.c_attn.weight'], sd[f'h.{i}.attn.c_attn.bias']
    for n, W, B in zip(('toqueries', 'tokeys', 'tovalues'), w.T.chunk(3), b.chunk(3)):
        out[f'attention.{n}.weight'], out[f'attention.{n}.bias'] = W, B
    return out
def bs_prefix_filter(sd, i):                               # every tensor of layer i, renamed, by a prefix filter
    ren = {'ln_1': 'norm1', 'ln_2': 'norm2', 'attn.c_proj': 'attention.unifyheads', 'mlp.c_fc': 'ff.0', 'mlp.c_proj': 'ff.2'}
    layer = {k.removeprefix(f'h.{i}.'): v for k, v in sd.items() if k.startswith(f'h.{i}.')}
    out = {}
    for k, v in layer.items():
        mod, p = k.rsplit('.', 1)
        if mod == 'attn.c_attn':
            for n, part in zip(('toqueries', 'tokeys', 'tovalues'), v.tensor_split(3, dim=-1)):
                out[f'attention.{n}.{p}'] = part.mT if p == 'weight' else part
        elif mod in ren: out[f'{ren[mod]}.{p}'] = v.mT if v.dim() == 2 else v
    return out
def bs_split_qkv_clone(sd, i):                             # the lesson's split_qkv, every tensor a contiguous copy
    return {k: v.clone(memory_format=torch.contiguous_format) for k, v in block_state(sd, i).items()}

@pytest.mark.parametrize('right', [qkv_split_t, qkv_view_unbind, qkv_T_chunk_rows, qkv_einsum])
def test_split_qkv_valid_styles(right): assert_check(check_split_qkv, right)

@pytest.mark.parametrize('right', [bs_loop, bs_prefix_filter, bs_split_qkv_clone])
def test_block_state_valid_styles(right): assert_check(check_block_state, right)

def qkv_e768(w, b):                     # GPT-2 small's e written in: the slices run past a smaller weight
    e = 768
    return tuple((w[:, i * e:(i + 1) * e].T, b[i * e:(i + 1) * e]) for i in range(3))

def test_split_qkv_hard_coded_e_is_named():
    assert_check(check_split_qkv, split_qkv, [(qkv_e768, r"key and value weights are empty.*e hard-coded")])

# the audit's round: a Conv1D weight transposed right but put under the wrong name is named as such, not "transpose it"
def bs_ff_swapped(sd, i):                          # c_proj under ff.0 and c_fc under ff.2, each transposed
    d = block_state(sd, i)
    d['ff.0.weight'], d['ff.2.weight'] = sd[f'h.{i}.mlp.c_proj.weight'].T, sd[f'h.{i}.mlp.c_fc.weight'].T
    return d
def bs_attn_proj_in_mlp(sd, i):                    # attn.c_proj taken for mlp.c_proj
    d = block_state(sd, i)
    d['ff.2.weight'] = sd[f'h.{i}.attn.c_proj.weight'].T
    return d

def test_block_state_swapped_layers_are_named():
    assert_check(check_block_state, block_state, [(bs_ff_swapped, r'ff\.0\.weight holds the tensor that belongs in ff\.2\.weight: mlp\.c_fc'),
                                                  (bs_attn_proj_in_mlp, r"belongs in attention\.unifyheads\.weight: attn\.c_proj is the attention's")])
