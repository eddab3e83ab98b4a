"Lesson 06's check accepts the trunk's forward and rejects the stub and each typical mistake with its own hint."
import math
import torch
import pytest
from transformers_scratch.checks.toolkit import assert_check
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


# --- issue 31: mistakes that only show in training mode, dropout drawn the wrong number of times -------------------
import torch.nn.functional as F
from transformers_scratch.checks.models import _train_case
from transformers_scratch.checks.toolkit import seeded

def _body(t, x, drop):
    "The trunk's forward with the embeddings' dropout `drop(h)`"
    m = t.pad_mask(x)
    p = torch.arange(x.size(1), device=x.device)[None] if m is None else positions_from_pad(m)
    h = drop(t.token_emb(x) + t.pos_emb(p))
    for blk in t.blocks: h = blk(h, m)
    return t.norm(h)
def dropout_twice(t, x): return _body(t, x, lambda h: t.do(t.do(h)))
def own_dropout(t, x): return _body(t, x, lambda h: t.do(F.dropout(h, 0.1)))              # F.dropout is on in eval mode too
def eval_inside(t, x):                                    # "no randomness, please": eval inside, the mode given back
    was = t.training
    t.eval()
    try: return trunk_forward(t, x)
    finally: t.train(was)
def dropout_if_eval(t, x): return _body(t, x, lambda h: h if t.training else t.do(h))   # the test inverted
def extra_dropout_out(t, x): return t.do(trunk_forward(t, x)) if t.training else trunk_forward(t, x)   # eval-clean, train-wrong
def leaves_eval(t, x): t.eval(); return trunk_forward(t, x)

def test_check_trunk_forward_training_mode():
    assert_check(check_trunk_forward, trunk_forward, [
        (dropout_twice, 'trunk.do twice'),
        (own_dropout, 'changes from call to call'),
        (eval_inside, 'eval-mode one: dropout never ran'),
        (dropout_if_eval, r'forgot trunk.do|dropout'),
        (extra_dropout_out, r'drawn again on the output'),
        (leaves_eval, "it was in training mode and your code switched it to eval"),
    ])

def test_train_case_draws_dropout():
    "The train-mode fixture's output depends on the draws (dropout is on), and seeded repeats them"
    trunk, x = _train_case()
    with torch.no_grad():
        a, b, c = (seeded(trunk_forward, trunk, x, seed=s) for s in (5, 5, 6))
    assert torch.equal(a, b) and not torch.allclose(a, c)

# valid answers in other styles
def with_cumsum_and_index(t, x):                          # positions by cumsum, blocks by index, the mask by hand
    m = None if t.pad_idx is None else x.ne(t.pad_idx)
    p = torch.arange(x.size(1), device=x.device).expand_as(x) if m is None else (m.long().cumsum(-1) - 1).clamp(min=0)
    h = t.do(t.pos_emb(p) + t.token_emb(x))
    for i in range(len(t.blocks)): h = t.blocks[i](h, m)
    return t.norm(h)
def with_reduce(t, x):                                    # functools.reduce over the blocks
    import functools
    m = t.pad_mask(x)
    p = positions_from_pad(m) if m is not None else torch.arange(x.shape[1], device=x.device).unsqueeze(0)
    return t.norm(functools.reduce(lambda h, blk: blk(h, m), t.blocks, t.do(t.token_emb(x) + t.pos_emb(p))))
def with_first_index(t, x):                               # positions as j minus each row's first real index
    m = t.pad_mask(x)
    j = torch.arange(x.size(1), device=x.device)
    p = j[None] if m is None else (j - m.long().argmax(1, keepdim=True)).clamp(min=0)
    h = t.token_emb(x)
    h = h + t.pos_emb(p)
    h = t.do(h)
    for blk in t.blocks: h = blk(h, m)
    return t.norm(h)

def test_valid_styles_pass():
    for fn in (with_cumsum_and_index, with_reduce, with_first_index):
        assert_check(check_trunk_forward, fn)

def arange_cpu_without_padding(t, x):                      # positions 0..t-1 made on the CPU when the trunk has no pad id
    m = t.pad_mask(x)
    p = torch.arange(x.size(1))[None] if m is None else positions_from_pad(m)
    return _body(t, x, lambda h: t.do(h)) if m is not None else t.norm(
        __import__('functools').reduce(lambda h, b: b(h, m), t.blocks, t.do(t.token_emb(x) + t.pos_emb(p))))

def test_check_trunk_forward_device_without_padding():
    assert_check(check_trunk_forward, trunk_forward, [(arange_cpu_without_padding, "stay on the inputs' device")])

def norm_twice(t, x): return t.norm(trunk_forward(t, x))

def test_check_trunk_forward_round_two():
    assert_check(check_trunk_forward, trunk_forward, [(norm_twice, 'trunk.norm twice')])

def embeddings_as_float(t, x):                             # .float() on the embeddings of a float64 trunk
    m = t.pad_mask(x)
    p = positions_from_pad(m) if m is not None else torch.arange(x.size(1), device=x.device)[None]
    h = t.do(t.token_emb(x).float() + t.pos_emb(p).float())
    for b in t.blocks: h = b(h, m)
    return t.norm(h)

def test_check_trunk_forward_round_three():
    assert_check(check_trunk_forward, trunk_forward, [(embeddings_as_float, r'the trunk here is torch.float64: keep that dtype')])


# issue 31, second audit: F.dropout with the trunk's rate and mode is valid; dropout drawn after each block or twice is named
def f_dropout_p(t, x): return _body(t, x, lambda h: F.dropout(h, t.do.p, t.training))
def f_dropout_kw(t, x): return _body(t, x, lambda h: F.dropout(h, p=t.do.p, training=t.training))
def functional_dropout(t, x):                            # torch.nn.functional.dropout through getattr, the rate read once
    p = t.do.p
    return _body(t, x, lambda h: torch.nn.functional.dropout(h, p, t.training, False))

def test_f_dropout_with_the_trunks_rate_passes():
    for fn in (f_dropout_p, f_dropout_kw, functional_dropout): assert_check(check_trunk_forward, fn)

def do_after_each_block(t, x):
    m = t.pad_mask(x)
    p = torch.arange(x.size(1), device=x.device)[None] if m is None else positions_from_pad(m)
    h = t.do(t.token_emb(x) + t.pos_emb(p))
    for blk in t.blocks: h = t.do(blk(h, m))
    return t.norm(h)
def do_twice_on_tokens(t, x):
    m = t.pad_mask(x)
    p = torch.arange(x.size(1), device=x.device)[None] if m is None else positions_from_pad(m)
    h = t.do(t.do(t.token_emb(x)) + t.pos_emb(p))
    for blk in t.blocks: h = blk(h, m)
    return t.norm(h)
def do_on_tokens_and_positions(t, x):                    # each term dropped on its own, then added
    m = t.pad_mask(x)
    p = torch.arange(x.size(1), device=x.device)[None] if m is None else positions_from_pad(m)
    h = t.do(t.token_emb(x)) + t.do(t.pos_emb(p))
    for blk in t.blocks: h = blk(h, m)
    return t.norm(h)
def f_dropout_p_end_too(t, x): return F.dropout(f_dropout_p(t, x), t.do.p, t.training)   # the rate read, drawn again at the end
def f_dropout_p_always(t, x): return _body(t, x, lambda h: F.dropout(h, t.do.p))         # the rate read, the mode not
def f_dropout_p_tokens(t, x):                            # the rate read, on the tokens alone
    m = t.pad_mask(x)
    p = torch.arange(x.size(1), device=x.device)[None] if m is None else positions_from_pad(m)
    h = F.dropout(t.token_emb(x), t.do.p, t.training) + t.pos_emb(p)
    for blk in t.blocks: h = blk(h, m)
    return t.norm(h)

def test_dropout_counted_and_placed():
    assert_check(check_trunk_forward, trunk_forward, [
        (do_after_each_block, r'trunk.do 4 times.*ran once more after each'), (do_twice_on_tokens, r'trunk.do twice'),
        (do_on_tokens_and_positions, r'trunk.do twice'), (f_dropout_p_end_too, r'drawn again on the output'),
        (f_dropout_p_always, r'changes from call to call'), (f_dropout_p_tokens, r'not the tokens alone')])


# the rate read from the trunk's config (trunk.config.dropout, = trunk.do.p): valid, it was refused with "you forgot
# trunk.do" (the eval-mode fixtures swap trunk.do for a stand-in); a constant rate is not, nor no dropout at all
def f_dropout_config(t, x): return _body(t, x, lambda h: F.dropout(h, t.config.dropout, t.training))
def f_dropout_const(t, x): return _body(t, x, lambda h: F.dropout(h, 0.1, t.training))

def test_dropout_rate_from_the_config():
    assert_check(check_trunk_forward, f_dropout_config)
    assert_check(check_trunk_forward, trunk_forward, [(f_dropout_const, r'wrong in training mode'),
                                                      (no_dropout, r'forgot trunk.do')])
