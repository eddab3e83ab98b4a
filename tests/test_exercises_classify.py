"Lesson 11's check accepts `padding_invariance_gap` in several styles and rejects the stub and each typical mistake with its own hint."
import torch
import pytest
from transformers_scratch.checks.toolkit import assert_check
from transformers_scratch.runtime import evaluating, model_device
from transformers_scratch.classify import padding_invariance_gap
from transformers_scratch.checks.classify import check_padding_invariance_gap
from conftest import stub

pytestmark = pytest.mark.usefixtures('one_thread')   # tiny models: one thread is faster

def _gap(model, xb, pad_idx=1, mode='eval', strip=True, reduce='max', absolute=True, rows=None, move=True, pad_id=None):
    "The gap, right or with one mistake"
    pid = pad_idx if pad_id is None else pad_id
    was = model.training
    if mode == 'eval': model.eval()
    if move: xb = xb.to(model_device(model))
    with torch.no_grad():
        out = model(xb)
        alone = torch.cat([model((r[r != pid] if strip else r)[None]) for r in xb])
    if mode == 'eval': model.train(was)
    d = out - alone
    d = d.abs() if absolute else d
    d = d[:rows] if rows else d
    return getattr(d, reduce)().item()

# wrong answers
def dropout_on(m, xb, pad_idx=1): return _gap(m, xb, pad_idx, mode='as found')
def with_pads(m, xb, pad_idx=1): return _gap(m, xb, pad_idx, strip=False)
def signed(m, xb, pad_idx=1): return _gap(m, xb, pad_idx, absolute=False)
def mean_gap(m, xb, pad_idx=1): return _gap(m, xb, pad_idx, reduce='mean')
def sum_gap(m, xb, pad_idx=1): return _gap(m, xb, pad_idx, reduce='sum')
def first_row(m, xb, pad_idx=1): return _gap(m, xb, pad_idx, rows=1)
def pad_one(m, xb, pad_idx=1): return _gap(m, xb, pad_idx, pad_id=1)
def not_moved(m, xb, pad_idx=1): return _gap(m, xb, pad_idx, move=False)
def leaves_eval(m, xb, pad_idx=1): m.eval(); return _gap(m, xb, pad_idx, mode='as found')
def leaves_train(m, xb, pad_idx=1): r = _gap(m, xb, pad_idx); m.train(); return r
def per_row(m, xb, pad_idx=1):                          # one number per row
    with evaluating(m), torch.no_grad():
        return torch.stack([(m(r[None]) - m(r[r != pad_idx][None])).abs().max() for r in xb])
def as_list(m, xb, pad_idx=1): return [padding_invariance_gap(m, xb, pad_idx)]
def alone_vs_alone(m, xb, pad_idx=1):                   # compares each stripped row with itself: always 0
    with evaluating(m), torch.no_grad():
        a = torch.cat([m(r[r != pad_idx][None]) for r in xb])
        return (a - a).abs().max().item()
def truncated_alone(m, xb, pad_idx=1):                   # drops the last token of each text too (an off-by-one slice)
    with evaluating(m), torch.no_grad():
        n = (xb != pad_idx).sum(1)
        return (m(xb) - torch.cat([m(r[r != pad_idx][None, :k - 1]) if k > 1 else m(r[r != pad_idx][None]) for r, k in zip(xb, n)])).abs().max().item()
def pads_at_end(m, xb, pad_idx=1):                       # "alone" = the row's first n tokens: wrong for front pads
    with evaluating(m), torch.no_grad():
        n = (xb != pad_idx).sum(1)
        return (m(xb) - torch.cat([m(r[None, :k]) for r, k in zip(xb, n)])).abs().max().item()

def _stripped(r, pad_idx, where):                       # the row without the pads at its end only, or its front only
    real = (r != pad_idx).nonzero().flatten()
    return r[:int(real[-1]) + 1] if where == 'end' else r[int(real[0]):]
def trailing_only(m, xb, pad_idx=1):                     # rstrip-style: front pads stay
    with evaluating(m), torch.no_grad():
        return (m(xb) - torch.cat([m(_stripped(r, pad_idx, 'end')[None]) for r in xb])).abs().max().item()
def leading_only(m, xb, pad_idx=1):                      # lstrip-style: pads at the end stay
    with evaluating(m), torch.no_grad():
        return (m(xb) - torch.cat([m(_stripped(r, pad_idx, 'front')[None]) for r in xb])).abs().max().item()
def zero_d(m, xb, pad_idx=1):                            # a 0-d tensor, not the float the docstring asks for
    with evaluating(m), torch.no_grad():
        xb = xb.to(model_device(m))
        return (m(xb) - torch.cat([m(r[r != pad_idx][None]) for r in xb])).abs().max()
def moves_model(m, xb, pad_idx=1): m.cpu(); return padding_invariance_gap(m, xb, pad_idx)   # the caller's model moved
def to_batch(m, xb, pad_idx=1): m.to(xb.device); return padding_invariance_gap(m, xb, pad_idx)
def doubles_model(m, xb, pad_idx=1): m.double(); return padding_invariance_gap(m, xb, pad_idx)   # for an "exact" gap
def halves_by_hand(m, xb, pad_idx=1):                    # converts the parameters one by one, no .half() call
    for p in m.parameters(): p.data = p.data.double()
    return padding_invariance_gap(m, xb, pad_idx)
def edits_weights(m, xb, pad_idx=1):                     # zeroes the pad's embedding "to be safe"
    with torch.no_grad(): m.trunk.token_emb.weight[pad_idx] = 0
    return padding_invariance_gap(m, xb, pad_idx)
def grad_left_off(m, xb, pad_idx=1): torch.set_grad_enabled(False); return padding_invariance_gap(m, xb, pad_idx)

WRONGS = [(stub, 'not solved'),
          (trailing_only, r'only the pads at the end'), (leading_only, r'only the pads at the front'),
          (zero_d, r'Python float.*0-d tensor'), (moves_model, r'moved or converted.*model.cpu'),
          (to_batch, r'moved or converted'), (doubles_model, r'moved or converted.*float64'),
          (halves_by_hand, r'moved or converted.*float64'), (edits_weights, r"changed the model's weights"),
          (grad_left_off, r'switched gradients off'),
          (dropout_on, r'dropout is on'), (with_pads, r'without\* its pads'), (signed, r'absolute difference'),
          (mean_gap, r'not the mean'), (sum_gap, r'not the sum'), (first_row, r'every row'), (pad_one, r'pad id is the argument'),
          (leaves_eval, r'came in training mode and your code left it in eval'),
          (leaves_train, r'came in eval mode and your code left it in training'),
          (per_row, r'return one number'), (as_list, r'return one number.*list'), (alone_vs_alone, r'without\* its pads'),
          (truncated_alone, r'masks its pads|attends to its pads'), (pads_at_end, r'masks its pads|pad id')]

def test_check_padding_invariance_gap():
    assert_check(check_padding_invariance_gap, padding_invariance_gap, WRONGS)

# valid answers in other styles
def by_hand(m, xb, pad_idx=1):                           # mode saved and restored by hand, no evaluating(), inference_mode
    was = m.training
    m.eval()
    dev = next(m.parameters()).device
    xb = xb.to(dev)
    with torch.inference_mode():
        out = m(xb)
        alone = torch.cat([m(xb[i, xb[i] != pad_idx].unsqueeze(0)) for i in range(len(xb))])
    m.train(was)
    return (out - alone).abs().amax().item()
def by_rows(m, xb, pad_idx=1):                           # a Python max over rows, torch.dist-free
    with evaluating(m) as mm, torch.no_grad():
        xb = xb.to(model_device(mm))
        out = mm(xb)
        return max(float((out[i] - mm(r[r != pad_idx].unsqueeze(0))[0]).abs().max()) for i, r in enumerate(xb))
def by_masked_select(m, xb, pad_idx=1):                  # masked_select, float64 comparison, numpy float result
    with evaluating(m) as mm, torch.no_grad():
        xb = xb.to(model_device(mm))
        out = mm(xb).double()
        alone = torch.stack([mm(torch.masked_select(r, r.ne(pad_idx)).view(1, -1))[0] for r in xb]).double()
        return (out - alone).abs().max().cpu().numpy().item()

def same_device_noop(m, xb, pad_idx=1):                  # model.to(its own device) and .float() on a float model: no change
    m.to(model_device(m)).float()
    with evaluating(m), torch.no_grad():
        xb = xb.to(model_device(m))
        return float((m(xb) - torch.cat([m(r[r != pad_idx].reshape(1, -1)) for r in xb])).abs().max())

def on_a_double_copy(m, xb, pad_idx=1):                  # an "exact" gap on a float64 copy: the caller's model untouched
    import copy
    c = copy.deepcopy(m).double().eval()
    with torch.no_grad():
        xb = xb.to(model_device(c))
        return (c(xb) - torch.cat([c(r[r != pad_idx][None]) for r in xb])).abs().max().item()

def test_valid_styles_pass():
    for fn in (by_hand, by_rows, by_masked_select, same_device_noop, on_a_double_copy):
        assert_check(check_padding_invariance_gap, fn)

def l2_gap(m, xb, pad_idx=1): return _gap(m, xb, pad_idx, reduce='norm')
def prob_gap(m, xb, pad_idx=1):
    with evaluating(m), torch.no_grad():
        out = m(xb).softmax(-1)
        alone = torch.cat([m(r[r != pad_idx][None]) for r in xb]).softmax(-1)
    return (out - alone).abs().max().item()

def test_check_padding_invariance_gap_round_two():
    assert_check(check_padding_invariance_gap, padding_invariance_gap, [(l2_gap, 'norm of the whole difference'),
                                                                         (prob_gap, 'compared probabilities')])

# the audit's round: ids below pad_idx are real tokens; a NumPy number is a number
def drops_below_pad(m, xb, pad_idx=1):                   # r[r > pad_idx]: also drops 0, fastai's xxunk, when pad_idx is 1
    with evaluating(m), torch.no_grad():
        xb = xb.to(model_device(m))
        return (m(xb) - torch.cat([m(r[r > pad_idx][None]) for r in xb])).abs().max().item()
def numpy_float32(m, xb, pad_idx=1):                     # a valid answer: the max taken in NumPy, an np.float32
    with evaluating(m), torch.no_grad():
        xb = xb.to(model_device(m))
        return (m(xb) - torch.cat([m(r[r != pad_idx][None]) for r in xb])).abs().cpu().numpy().max()

def test_check_padding_invariance_gap_audit():
    assert_check(check_padding_invariance_gap, numpy_float32, [(drops_below_pad, r'ids below it are real tokens')])
def default_pad_zero(m, xb, pad_idx=0):                  # pad_idx's default changed: a call without it strips the 0s
    with evaluating(m), torch.no_grad():
        xb = xb.to(model_device(m))
        return (m(xb) - torch.cat([m(r[r != pad_idx][None]) for r in xb])).abs().max().item()

def test_check_padding_invariance_gap_default_pad():
    assert_check(check_padding_invariance_gap, padding_invariance_gap, [(default_pad_zero, r"pad_idx's default is 1")])
