"The public API of the foundation, tested against PyTorch's own modules and hand-computed values."
import math, pytest, torch, torch.nn.functional as F
from transformers_scratch.attention import SelfAttention, attention, to_torch_mha
from transformers_scratch.masks import causal_mask, masked_softmax
from transformers_scratch.models import ClassificationTransformer, GenerationTransformer
from transformers_scratch.config import ModelConfig

def clf(emb, heads, depth, seq_len, n_tokens, n_classes, **kw):
    return ClassificationTransformer(ModelConfig(emb=emb, heads=heads, depth=depth, seq_len=seq_len, n_tokens=n_tokens, n_classes=n_classes, **{'pad_idx': 1, **kw}))

def close(a, b, atol=1e-5): assert torch.allclose(a, b, atol=atol), (a - b).abs().max()

def test_attention_by_hand():
    q = torch.tensor([[[1., 0.], [0., 1.]]]); k = q.clone(); v = torch.tensor([[[1., 2.], [3., 4.]]])
    w = torch.softmax(torch.tensor([[1., 0.], [0., 1.]]) / math.sqrt(2), -1)   # q kᵀ / √s
    close(attention(q, k, v), w[None] @ v)
    close(attention(q, k, v, causal_mask(2))[0, 0], v[0, 0])                    # the first query sees only itself

@pytest.mark.parametrize('fast', [False, True])
@pytest.mark.parametrize('causal', [False, True])
def test_selfattention_equals_torch_mha(fast, causal):
    torch.manual_seed(0)
    sa = SelfAttention(ModelConfig(emb=24, heads=6, fast=fast), causal=causal).eval()
    mha = to_torch_mha(sa).eval()
    x = torch.randn(3, 7, 24)
    pad = torch.ones(3, 7, dtype=torch.bool); pad[1, 5:] = False; pad[2, 3:] = False
    kw = dict(attn_mask=~causal_mask(7)) if causal else {}
    close(sa(x), mha(x, x, x, need_weights=False, **kw)[0])
    close(sa(x, pad), mha(x, x, x, key_padding_mask=~pad, need_weights=False, **kw)[0])

def test_selfattention_equals_sdpa():
    torch.manual_seed(0)
    sa = SelfAttention(ModelConfig(emb=16, heads=4), causal=True)
    x = torch.randn(2, 5, 16)
    q, k, v = (f(x).view(2, 5, 4, 4).transpose(1, 2) for f in (sa.toqueries, sa.tokeys, sa.tovalues))
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(2, 5, 16)
    close(sa(x), sa.unifyheads(ref))

def test_heads_must_divide_emb():
    with pytest.raises(ValueError, match=r'heads: 5 does not divide emb=16'): ModelConfig(emb=16, heads=5)
    assert SelfAttention(ModelConfig(emb=16, heads=5, wide=True))(torch.randn(1, 3, 16)).shape == (1, 3, 16)

def test_wide_heads_parameter_count():
    e, h = 16, 4
    assert sum(p.numel() for p in SelfAttention(ModelConfig(emb=e, heads=h)).parameters()) == 3 * e * e + e * e + e
    assert sum(p.numel() for p in SelfAttention(ModelConfig(emb=e, heads=h, wide=True)).parameters()) == 3 * e * e * h + h * e * e + e

@pytest.mark.parametrize('dtype', [torch.float16, torch.bfloat16])
def test_masks_safe_in_low_precision(dtype):
    torch.manual_seed(0)
    s = torch.randn(2, 4, 4).to(dtype)
    m = torch.zeros(2, 4, 4, dtype=torch.bool); m[0] = causal_mask(4)           # batch 1: every row fully masked
    w = masked_softmax(s, m)
    assert not torch.isnan(w).any() and (w[1] == 0).all()
    close(w[0].float().sum(-1), torch.ones(4), atol=1e-2)

def test_fully_masked_rows_no_nan_in_model():
    torch.manual_seed(0)
    m = clf(16, 4, 2, 10, 20, 2, pad_idx=0)
    x = torch.randint(1, 20, (2, 6)); x[0] = 0                                   # a row of padding only
    out = m(x); out.sum().backward()
    assert not torch.isnan(out).any()
    assert all(torch.isfinite(p.grad).all() for p in m.parameters() if p.grad is not None)

@pytest.mark.parametrize('pos', ['learned', 'sinusoidal'])
@pytest.mark.parametrize('pool', ['mean', 'max'])
def test_padding_never_changes_logits(pos, pool):
    torch.manual_seed(0)
    m = clf(16, 4, 2, 32, 50, 3, pos=pos, pool=pool).eval()
    for n in (1, 5, 11):
        x = torch.randint(2, 50, (1, n))
        ref = m(x)
        for front, back in ((3, 0), (0, 7), (20, 0), (2, 4)):
            padded = torch.cat([torch.ones(1, front).long(), x, torch.ones(1, back).long()], 1)
            close(m(padded), ref, atol=1e-5)

def test_classification_bad_input():
    m = clf(16, 4, 1, 8, 10, 2)
    with pytest.raises(ValueError, match='seq_len'): m(torch.zeros(1, 9).long())
    with pytest.raises(TypeError, match='integers'): m(torch.zeros(1, 4))
    with pytest.raises(ValueError, match='pos'): ModelConfig(pos='alibi')

def test_generation_is_causal():
    torch.manual_seed(0)
    g = GenerationTransformer(ModelConfig(emb=16, heads=4, depth=2, seq_len=12, n_tokens=30)).eval()
    x = torch.randint(0, 30, (2, 9))
    y = g(x)
    assert y.shape == (2, 9, 30)
    for i in range(9):
        x2 = x.clone(); x2[:, i] = (x2[:, i] + 1) % 30
        close(g(x2)[:, :i], y[:, :i])

@pytest.mark.parametrize('fast', [False, True])
def test_weights_are_causal_on_both_paths(fast):
    torch.manual_seed(0)
    sa = SelfAttention(ModelConfig(emb=16, heads=4, fast=fast), causal=True)
    w = sa.weights(torch.randn(2, 5, 16))
    assert (w.triu(1) == 0).all()
    close(w.sum(-1), torch.ones(2, 4, 5))
