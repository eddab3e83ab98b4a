"Lesson 06's check accepts the trunk's forward and rejects the stub and each typical mistake with its own hint."
import math
import torch
import pytest
from transformers_scratch.core import assert_check
from transformers_scratch.positions import positions_from_pad
from transformers_scratch.models import trunk_forward
from transformers_scratch.checks.models import check_trunk_forward
from transformers_scratch.checks.models import _trunk_cases, _trunk_run
from conftest import stub

pytestmark = pytest.mark.usefixtures('one_thread')   # tiny tensors: one thread is faster


def fwd(trunk, x, pos=True, mask=True, do=True, norm=True, blocks=None, scale=1., pad_id=None, each_norm=False):
    "The trunk's forward, written as a learner would, with one mistake switched on"
    pad = trunk.pad_idx if pad_id is None else pad_id
    m = None if pad is None else x != pad
    p = torch.arange(x.size(1), device=x.device)[None] if m is None or pos == 'arange' else (
        m.long().cumsum(1) if pos == 'from1' else positions_from_pad(m))
    h = trunk.token_emb(x) * scale
    if pos: h = h + trunk.pos_emb(p)
    if do: h = trunk.do(h)
    for blk in (trunk.blocks if blocks is None else blocks(trunk)):
        h = blk(h, m if mask is True else None if not mask else ~m)
        if each_norm: h = trunk.norm(h)
    return trunk.norm(h) if norm and not each_norm else h

def no_pos(t, x): return fwd(t, x, pos=False)
def pos_arange(t, x): return fwd(t, x, pos='arange')
def pos_from1(t, x): return fwd(t, x, pos='from1')
def no_mask(t, x): return fwd(t, x, mask=False)
def mask_inverted(t, x): return fwd(t, x, mask='inverted')
def no_dropout(t, x): return fwd(t, x, do=False)
def no_norm(t, x): return fwd(t, x, norm=False)
def norm_each(t, x): return fwd(t, x, each_norm=True)
def first_block(t, x): return fwd(t, x, blocks=lambda t: t.blocks[:1])
def block0_repeated(t, x): return fwd(t, x, blocks=lambda t: [t.blocks[0]] * len(t.blocks))
def reversed_blocks(t, x): return fwd(t, x, blocks=lambda t: list(t.blocks)[::-1])
def scaled(t, x): return fwd(t, x, scale=math.sqrt(t.token_emb.embedding_dim))
def pad_one(t, x): return fwd(t, x, pad_id=1) if t.pad_idx is not None else fwd(t, x)
def dropout_on_tokens(t, x):
    m = t.pad_mask(x)
    p = torch.arange(x.size(1))[None] if m is None else positions_from_pad(m)
    h = t.do(t.token_emb(x)) + t.pos_emb(p)
    for blk in t.blocks: h = blk(h, m)
    return t.norm(h)
def not_chained(t, x):              # every block on the embeddings: only the last one counts
    m = t.pad_mask(x)
    p = torch.arange(x.size(1))[None] if m is None else positions_from_pad(m)
    h = t.do(t.token_emb(x) + t.pos_emb(p))
    for blk in t.blocks: out = blk(h, m)
    return t.norm(out)
def mask_of_none(t, x):             # positions_from_pad(None) on a trunk without padding
    m = t.pad_mask(x)
    h = t.do(t.token_emb(x) + t.pos_emb(positions_from_pad(m)))
    for blk in t.blocks: h = blk(h, m)
    return t.norm(h)
def arange_on_cpu(t, x):            # positions made on the CPU whatever x's device
    m = t.pad_mask(x)
    p = torch.arange(x.size(1)).expand(x.size(0), -1).clone()
    if m is not None: p = positions_from_pad(m).cpu()
    h = t.do(t.token_emb(x) + t.pos_emb(p))
    for blk in t.blocks: h = blk(h, m)
    return t.norm(h)
def as_float32(t, x): return trunk_forward(t, x).float()
def squeezed(t, x): return trunk_forward(t, x).squeeze()
def switches_mode(t, x):
    t.train()
    return trunk_forward(t, x)

def test_reference_is_the_library_trunk():
    for trunk, x in _trunk_cases():
        with torch.no_grad():
            assert torch.equal(_trunk_run(trunk, x), trunk(x))
            assert torch.equal(trunk_forward(trunk, x), trunk(x))

def test_check_trunk_forward():
    assert_check(check_trunk_forward, trunk_forward, [
        (stub, 'not solved'),
        (no_pos, 'forgot the positions'),
        (pos_arange, "first real token.*not 0..t-1"),
        (pos_from1, 'off by one'),
        (no_mask, 'pass the pad mask on to every block'),
        (mask_inverted, 'True at the real tokens'),
        (no_dropout, 'forgot trunk.do'),
        (dropout_on_tokens, 'not on the token embeddings alone'),
        (no_norm, 'forgot the final norm'),
        (norm_each, 'not after every block'),
        (first_block, 'only the first'),
        (not_chained, "previous block's output"),
        (block0_repeated, r'trunk.blocks\[0\] again'),
        (reversed_blocks, 'run in order'),
        (scaled, '√e'),
        (pad_one, r'trunk.pad_idx \(0 here\), not 1'),
        (mask_of_none, 'pad_idx is None'),
        (arange_on_cpu, "stay on the inputs' device"),
        (as_float32, "keep the inputs' dtype"),
        (squeezed, 'batch dim of a batch of one is gone'),
        (switches_mode, 'eval mode'),
    ])
