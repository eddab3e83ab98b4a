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
