"Lesson 40's checks accept the solutions and reject the stub and each typical mistake with its own hint."
import torch, torch.nn.functional as F
from transformers_scratch.checks.toolkit import assert_check
from transformers_scratch.mlm import mask_tokens, masked_lm_loss, masked_accuracy
from transformers_scratch.checks.mlm import check_mask_tokens, check_masked_lm_loss, check_masked_accuracy
from conftest import stub


def _mask(x, mask_idx, n_tokens, pad_idx=1, special_ids=(), p=0.15, generator=None, *, exclude=True, mask_frac=0.8,
          rand_frac=0.1, rnd_hi=None, tgt_fill=-100, tgt_from_inputs=False, hard_pad=None, hard_p=None,
          use_gen=True, check_p=True, inplace=False, float_tgt=False, ignore_specials=False, indep=False):
    "A configurable `mask_tokens`: each keyword reproduces one typical mistake"
    if check_p and not 0 < p < 1: raise ValueError("p")
    g = generator if use_gen else None
    p = hard_p if hard_p is not None else p
    pad = hard_pad if hard_pad is not None else pad_idx
    u, r = torch.rand(x.shape, generator=g), torch.rand(x.shape, generator=g)
    rnd = torch.randint(0, rnd_hi(x, n_tokens) if rnd_hi else n_tokens, x.shape, generator=g)
    ok = torch.ones_like(x, dtype=torch.bool)
    if exclude: ok &= x != pad
    if not ignore_specials: ok &= ~torch.isin(x, torch.tensor(list(special_ids) or [-7]))
    sel = ok & (u < p)
    where_rnd = (r >= mask_frac) & (r < mask_frac + rand_frac)
    if indep: where_rnd = torch.rand(x.shape, generator=g) < 0.1          # random ids anywhere, not among the selected
    else: where_rnd = sel & where_rnd
    inp = x if inplace else x.clone()
    inp[sel & (r < mask_frac)] = mask_idx
    inp[where_rnd] = rnd[where_rnd]
    tgt = torch.where(sel, (inp.clone() if tgt_from_inputs else x.clone() if not inplace else inp.clone()),
                      torch.full_like(x, tgt_fill))
    if inplace: tgt = torch.where(sel, tgt, torch.full_like(x, -100))
    return inp, (tgt.float() if float_tgt else tgt)

def mk(**kw): return lambda *a, **k: _mask(*a, **k, **kw)

def test_mask_tokens():
    assert_check(check_mask_tokens, mask_tokens, [
        (stub, 'not solved'),
        (mk(exclude=False), 'selected padding'),                                      # masks pads
        (mk(hard_pad=1), 'pad_idx argument'),                                         # pad_idx hard-coded
        (mk(ignore_specials=True), 'special tokens'),                                 # specials masked
        (mk(mask_frac=1.0, rand_frac=0.), 'all the selected tokens became mask_idx'), # forgot the 10/10
        (mk(mask_frac=0.8, rand_frac=0.), 'random id'),                               # forgot the 10% random
        (mk(mask_frac=0.8, rand_frac=0.2), 'stayed as it was'),                       # forgot the 10% kept
        (mk(mask_frac=0.7, rand_frac=0.2), '80% of the selected'),                    # wrong split
        (mk(tgt_fill=0), 'not 0'),                                                    # 0 instead of -100 ...
        (lambda x, *a, **k: (mask_tokens(x, *a, **k)[0], x.clone()), 'every position'),  # loss on every position
        (mk(tgt_from_inputs=True), 'ORIGINAL ids'),                                   # targets from the corrupted batch
        (mk(inplace=True), 'in place'),                                               # mutates the caller's batch
        (mk(use_gen=False), 'same generator seed'),                                   # ignores generator
        (mk(hard_p=0.15), 'p is ignored'),                                            # p hard-coded
        (mk(hard_p=0.5), 'probability p'),                                            # p wrong
        (mk(rnd_hi=lambda x, n: int(x.max()) + 1), 'whole vocabulary'),               # random ids from the batch's range
        (mk(float_tgt=True), 'dtype'),                                                # float targets
        (mk(indep=True), 'not selected'),                                             # random ids outside the selection
    ])
    assert_check(check_mask_tokens, mt_no_p_check)          # no ValueError for a bad p: neither the prose nor the stub asks for one

def mt_no_p_check(x, mask_idx, n_tokens, pad_idx=1, special_ids=(), p=0.15, generator=None):
    "A right answer that does not validate `p` (the library's does; the exercise does not ask for it)"
    dev = generator.device if generator is not None else x.device
    u, r = torch.rand(x.shape, generator=generator, device=dev).to(x.device), torch.rand(x.shape, generator=generator, device=dev).to(x.device)
    rnd = torch.randint(0, n_tokens, x.shape, generator=generator, device=dev).to(x.device)
    sel = (x != pad_idx) & ~torch.isin(x, torch.tensor(list(special_ids), dtype=x.dtype, device=x.device)) & (u < p)
    inp = torch.where(sel & (r < 0.8), torch.full_like(x, mask_idx), x)
    inp = torch.where(sel & (r >= 0.8) & (r < 0.9), rnd, inp)
    return inp, torch.where(sel, x, torch.full_like(x, -100))

def _ce(logits, y, **kw): return F.cross_entropy(logits.flatten(0, -2), y.flatten(), **kw)

def test_masked_lm_loss():
    def per_seq(l, y): return torch.stack([_ce(l[i], y[i]) for i in range(len(y))]).mean()
    assert_check(check_masked_lm_loss, masked_lm_loss, [
        (stub, 'not solved'),
        (lambda l, y: _ce(l, y.clamp(min=0)), 'every position'),                      # -100 turned into a class
        (lambda l, y: _ce(l, y, reduction='sum'), 'not the sum'),
        (lambda l, y: _ce(l, y, reduction='sum') / y.numel(), 'not by all'),
        (lambda l, y: _ce(l.softmax(-1), y), 'softmax'),
        (per_seq, 'per sequence'),                                                    # NaN on an empty row
        (lambda l, y: _ce(l, y).float(), 'dtype'),                                    # float64 logits -> float32 loss
        (lambda l, y: _ce(l.view(-1, 13), y), 'raised'),                              # vocabulary hard-coded
        (lambda l, y: _ce(l.masked_fill_(l > 1, 1.), y), 'in place'),
        (lambda l, y: _ce(l, y) * 1.1, 'differs'),
    ])
    assert_check(check_masked_lm_loss, lambda l, y: F.cross_entropy(l.transpose(1, 2), y))   # (b, v, t) works too

def test_masked_accuracy():
    def per_seq(l, y):
        return torch.stack([(l[i].argmax(-1) == y[i])[y[i] != -100].float().mean() for i in range(len(y))]).mean()
    def no_guard(l, y):
        s = y != -100
        return (l.argmax(-1)[s] == y[s]).float().mean()
    assert_check(check_masked_accuracy, masked_accuracy, [
        (stub, 'not solved'),
        (lambda l, y: (l.argmax(-1) == y).float().mean(), 'every position'),
        (lambda l, y: ((l.argmax(-1) == y) & (y != -100)).sum().float(), 'not their number'),
        (per_seq, 'NaN|per sequence'),
        (no_guard, 'not NaN'),
        (lambda l, y: no_guard(l, y).double() if (y != -100).any() else torch.tensor(0.), 'dtype'),
        (lambda l, y: masked_accuracy(l, y) + 0.01, 'differs'),
        (lambda l, y: masked_accuracy(l.masked_fill_(l > 5, 5.), y), 'in place'),
    ])


# --- issue 16: the families lessons 01-05 already reject -----------------------------------------------------------
def ml_view(l, y):        return F.cross_entropy(l.view(-1, l.size(-1)), y.view(-1))           # fails on sliced logits
def ml_detach(l, y):      return _ce(l.detach(), y)                                              # no gradient
def ml_log_softmax(l, y): return F.nll_loss(torch.log(l.softmax(-1)).flatten(0, -2), y.flatten())  # inf on large logits
def ml_cpu_weight(l, y):  return _ce(l, y, weight=torch.ones(l.size(-1), dtype=l.dtype))        # a new tensor on the CPU

def test_masked_lm_loss_families():
    assert_check(check_masked_lm_loss, masked_lm_loss, [
        (ml_view, 'non-contiguous'), (ml_detach, 'no gradient'), (ml_log_softmax, 'large logits'),
        (ml_cpu_weight, "stay on the inputs' device")])

def acc_nan_empty(l, y):
    sel = y != -100
    return (l.argmax(-1)[sel] == y[sel]).float().mean()                                          # NaN for an empty batch
def acc_long_empty(l, y):
    sel = y != -100
    if not sel.any(): return torch.zeros((), dtype=torch.long, device=l.device)                  # a long 0 for an empty batch
    return ((l.argmax(-1) == y) & sel).sum().float() / sel.sum().float()
def acc_cpu(l, y):
    sel = y != -100
    return ((l.argmax(-1) == y) & sel).sum().cpu().float() / sel.sum().clamp(min=1).cpu().float()  # leaves the device

def test_masked_accuracy_families():
    assert_check(check_masked_accuracy, masked_accuracy, [(acc_nan_empty, 'not NaN'), (acc_long_empty, 'empty batch|still be a float32'), (acc_cpu, "stay on the inputs' device")])

def mt_cpu(x, mask_idx, n_tokens, pad_idx=1, special_ids=(), p=0.15, generator=None):
    "the solution's algorithm, but its random draws are made on the CPU whatever the device of `x`"
    if not 0 < p < 1: raise ValueError(f"p: expected a probability in (0, 1), got {p}")
    u, r = torch.rand(x.shape, generator=generator), torch.rand(x.shape, generator=generator)
    rnd = torch.randint(0, n_tokens, x.shape, generator=generator)
    sel = (x != pad_idx) & ~torch.isin(x, torch.tensor(list(special_ids), dtype=x.dtype, device=x.device)) & (u < p)
    inp = torch.where(sel & (r < 0.8), torch.full_like(x, mask_idx), x)
    inp = torch.where(sel & (r >= 0.8) & (r < 0.9), rnd, inp)
    return inp, torch.where(sel, x, torch.full_like(x, -100))

def test_mask_tokens_families():
    assert_check(check_mask_tokens, mask_tokens, [
        (mk(rnd_hi=lambda x, n: n + 1), r'lie in \[0, (n_tokens|202)\)'), (mt_cpu, "stay on the inputs' device")])


# --- issue 23: whatever a wrong answer returns, the check gives its own verdict (it never crashes in its own code) ------
def mt_none_without_generator(x, *a, generator=None, **k): return mask_tokens(x, *a, generator=generator, **k) if generator is not None else None
def mt_one_item(x, *a, **k): return (mask_tokens(x, *a, **k)[0],)
def mt_tgt_none(x, *a, **k): return mask_tokens(x, *a, **k)[0], None
def mt_list_tgt(x, *a, **k): inp, tgt = mask_tokens(x, *a, **k); return inp, tgt.tolist()
def mt_raises_later(x, *a, **k):
    if x.size(0) > 4: raise ValueError("boom")
    return mask_tokens(x, *a, **k)

def test_mask_tokens_odd_answers():
    assert_check(check_mask_tokens, mask_tokens, [
        (lambda *a, **k: None, r'return a pair \(inputs, targets\), got NoneType'), (mt_one_item, 'got 1 items'),
        (mt_tgt_none, 'targets should be a tensor, got NoneType'), (mt_list_tgt, 'targets should be a tensor, got list'),
        (mt_none_without_generator, r'\(with the default generator\), got NoneType'), (mt_raises_later, 'raised ValueError')])

def test_masked_lm_loss_odd_answers():
    assert_check(check_masked_lm_loss, masked_lm_loss, [
        (lambda l, y: None, 'tensor, got NoneType'), (lambda l, y: float(masked_lm_loss(l, y)), 'got float'),
        (lambda l, y: F.cross_entropy(l.flatten(0, -2), y.flatten(), reduction='none'), 'should have shape|0-dim'),
        (lambda l, y: masked_lm_loss(l, y) if l.size(0) != 2 else None, 'non-contiguous'),
        (lambda l, y: masked_lm_loss(l, y) if not l.requires_grad else None, 'no gradient')])

def acc_argmax_2(l, y):                     # right for (b, t, v), an IndexError for the (n, v) logits of the selected positions
    sel = y != -100
    return ((l.argmax(2) == y) & sel).sum().float() / sel.sum().clamp(min=1).float()
def acc_3d_only(l, y): return masked_accuracy(l, y) if l.dim() == 3 else torch.tensor(0.5)
def acc_dtype(l, y): return masked_accuracy(l, y).to(l.dtype)

def test_masked_accuracy_odd_answers():
    assert_check(check_masked_accuracy, masked_accuracy, [
        (lambda l, y: None, 'should be a tensor, got NoneType'), (lambda l, y: float(masked_accuracy(l, y)), 'got float'),
        (lambda l, y: (l.argmax(-1) == y).float(), 'should have shape'), (acc_argmax_2, r'raised IndexError on \(\(17, 13\)'),
        (acc_3d_only, r'\(n, v\).*wrong'), (acc_dtype, "dtype torch.float32, whatever the logits' dtype"),
        (lambda l, y: masked_accuracy(l, y) if l.size(0) else None, 'empty batch')])


# --- issue 31: valid answers in other styles pass; new plausible mistakes are named ------------------------------------
def _draw(generator, x, f, *a):
    "A draw of x's shape from `generator`, made where the generator lives and moved to x's device"
    dev = generator.device if generator is not None else x.device
    return f(*a, x.shape, generator=generator, device=dev).to(x.device)

def _eligible(x, pad_idx, special_ids):
    return (x != pad_idx) & ~torch.isin(x, torch.tensor(list(special_ids), dtype=x.dtype, device=x.device))

def mt_bernoulli(x, mask_idx, n_tokens, pad_idx=1, special_ids=(), p=0.15, generator=None):
    "Hugging Face's recipe: Bernoulli draws, 80% masked, then half of the rest random"
    dev = generator.device if generator is not None else x.device
    full = lambda v: torch.full(x.shape, v, device=dev)
    sel = torch.bernoulli(full(p).masked_fill(~_eligible(x, pad_idx, special_ids).to(dev), 0.), generator=generator).bool().to(x.device)
    masked = torch.bernoulli(full(0.8), generator=generator).bool().to(x.device) & sel
    rnd_at = torch.bernoulli(full(0.5), generator=generator).bool().to(x.device) & sel & ~masked
    rnd = _draw(generator, x, torch.randint, 0, n_tokens)
    inp = torch.where(rnd_at, rnd, torch.where(masked, torch.full_like(x, mask_idx), x))
    return inp, torch.where(sel, x, torch.full_like(x, -100))

def mt_one_uniform(x, mask_idx, n_tokens, pad_idx=1, special_ids=(), p=0.15, generator=None):
    "One uniform draw selects (u < p) and, rescaled (u / p), splits 80/10/10"
    u, rnd = _draw(generator, x, torch.rand), _draw(generator, x, torch.randint, 0, n_tokens)
    sel = _eligible(x, pad_idx, special_ids) & (u < p)
    r = u / p
    inp = x.clone()
    inp[sel & (r < 0.8)] = mask_idx
    at = sel & (r >= 0.8) & (r < 0.9)
    inp[at] = rnd[at]
    tgt = torch.full_like(x, -100)
    tgt[sel] = x[sel]
    return inp, tgt

def mt_choice(x, mask_idx, n_tokens, pad_idx=1, special_ids=(), p=0.15, generator=None):
    "The 80/10/10 as one categorical draw per position (0 mask, 1 random, 2 keep), masked_fill and boolean masks"
    u, r = _draw(generator, x, torch.rand), _draw(generator, x, torch.rand)
    rnd = _draw(generator, x, torch.randint, 0, n_tokens)
    kind = (r >= 0.8).long() + (r >= 0.9).long()
    sel = _eligible(x, pad_idx, special_ids) & (u < p)
    inp = x.masked_fill(sel & (kind == 0), mask_idx)
    inp = torch.where(sel & (kind == 1), rnd, inp)
    return inp, x.masked_fill(~sel, -100)

def test_mask_tokens_valid_styles():
    for fn in (mt_bernoulli, mt_one_uniform, mt_choice, mt_no_p_check):
        assert_check(check_mask_tokens, fn)

def _mt(x, mask_idx, n_tokens, pad_idx=1, special_ids=(), p=0.15, generator=None, *, split=(0.8, 0.9), drop=(),
        sel_shape=None, one_rnd=False, below=True, same_u=False, rnd_from=None):
    "A `mask_tokens` with one mistake: `drop` names kinds whose target is -100, `sel_shape` the shape of the selecting draw"
    shape = {None: x.shape, 'row': (x.size(0), 1), 'col': (x.size(1),)}[sel_shape]
    u = torch.rand(shape, generator=generator).to(x.device).expand(x.shape)
    r = u if same_u else torch.rand(x.shape, generator=generator)
    if one_rnd: rnd = torch.randint(0, n_tokens, (1,), generator=generator).expand(x.shape)
    elif rnd_from is not None: rnd = torch.tensor(rnd_from)[torch.randint(0, len(rnd_from), x.shape, generator=generator)]
    else: rnd = torch.randint(0, n_tokens, x.shape, generator=generator)
    sel = _eligible(x, pad_idx, special_ids) & ((u < p) if below else (u > p))
    m, rn = sel & (r < split[0]), sel & (r >= split[0]) & (r < split[1])
    inp = torch.where(rn, rnd, torch.where(m, torch.full_like(x, mask_idx), x))
    keep = sel & ~(m & ('mask' in drop)) & ~(rn & ('random' in drop)) & ~(sel & ~m & ~rn & ('kept' in drop))
    return inp, torch.where(keep, x, torch.full_like(x, -100))

def mtk(**kw): return lambda *a, **k: _mt(*a, **k, **kw)

def test_mask_tokens_new_mistakes():
    assert_check(check_mask_tokens, mask_tokens, [
        (mtk(split=(0.9, 1.0)), 'stayed as it was'),                                  # 90/10/0
        (mtk(split=(0.8, 1.0)), 'stayed as it was'),                                  # 80/20/0
        (mtk(split=(0.85, 0.95)), '80% of the selected'),                             # 85/10/5
        (mtk(split=(0.8, 0.85)), '10% of the selected tokens should get a random id'),  # 80/5/15
        (mtk(drop=('kept',)), 'kept as they are have no target'),                     # the kept 10% not predicted
        (mtk(drop=('random',)), 'random id have no target'),
        (mtk(drop=('kept', 'random')), 'not masked have no target'),                  # only [MASK] positions predicted
        (mtk(sel_shape='row'), 'whole rows'),                                         # rand(b, 1)
        (mtk(sel_shape='col'), 'every row selected the same positions'),             # rand(t)
        (mtk(one_rnd=True), 'one random id per position'),
        (mtk(below=False), 'BELOW p'),                                                # u > p
        (mtk(same_u=True), 'second uniform draw'),                                    # the split reuses the selecting draw
        (mtk(rnd_from=[0, 3, 7, 9, 499]), 'lie in|mostly special|different random ids|whole vocabulary'),
        (lambda x, *a, generator=None, **k: mask_tokens(x, *a, generator=generator or torch.Generator().manual_seed(0), **k),
         'generator=None two calls'),                                                  # a constant seed when no generator
        (lambda x, *a, **k: (mask_tokens(x, *a, **k)[0], mask_tokens(x, *a, **k)[1]), 'same generator|same positions|ORIGINAL|keep their id'),
    ])

def ml_boolean(l, y):
    sel = y != -100
    return F.cross_entropy(l[sel], y[sel]) if sel.any() else l.sum() * 0
def ml_gather(l, y):
    sel = y != -100
    nll = -F.log_softmax(l, -1).gather(-1, y.clamp(min=0)[..., None])[..., 0]
    return (nll * sel).sum() / sel.sum()
def ml_nll(l, y): return F.nll_loss(F.log_softmax(l, -1).reshape(-1, l.size(-1)), y.reshape(-1), ignore_index=-100)

def test_masked_lm_loss_valid_styles():
    for fn in (ml_boolean, ml_gather, ml_nll):
        assert_check(check_masked_lm_loss, fn)

def ml_nll_raw(l, y): return F.nll_loss(l.flatten(0, -2), y.flatten())                         # no log_softmax
def ml_gather_raw(l, y): return -F.log_softmax(l, -1).gather(-1, y[..., None]).mean()           # -100 as an index
def ml_ignore_pad(l, y): return F.cross_entropy(l.flatten(0, -2), y.flatten(), ignore_index=1)  # the pad id, not -100
def ml_smooth(l, y): return F.cross_entropy(l.flatten(0, -2), y.flatten(), label_smoothing=0.1)
def ml_double_mean(l, y): return masked_lm_loss(l, y) / (y != -100).sum()                        # divided twice

def test_masked_lm_loss_new_mistakes():
    assert_check(check_masked_lm_loss, masked_lm_loss, [
        (ml_nll_raw, 'log-probabilities'), (ml_gather_raw, '-100 of the targets'), (ml_ignore_pad, '-100 of the targets'),
        (ml_smooth, 'no label smoothing'), (ml_double_mean, 'differs')])

def acc_boolean(l, y):
    sel = y != -100
    return (l.argmax(-1)[sel] == y[sel]).float().mean().nan_to_num(0.)
def acc_mul(l, y):
    sel = (y != -100).float()
    return ((l.argmax(-1) == y).float() * sel).sum() / sel.sum().clamp(min=1.)
def acc_where(l, y):
    sel = y != -100
    hit = torch.where(sel, l.argmax(-1) == y, torch.zeros_like(sel)).sum()
    return torch.where(sel.any(), hit / sel.sum().clamp(min=1), torch.zeros((), device=l.device)).float()

def test_masked_accuracy_valid_styles():
    for fn in (acc_boolean, acc_mul, acc_where):
        assert_check(check_masked_accuracy, fn)

def test_masked_accuracy_new_mistakes():
    assert_check(check_masked_accuracy, masked_accuracy, [
        (lambda l, y: masked_accuracy(l, y) * 100, 'percentage'),
        (lambda l, y: 1 - masked_accuracy(l, y), 'error rate'),
        (lambda l, y: ((l.argmax(-1) == y) & (y != -100)).sum() // (y != -100).sum().clamp(min=1), 'integer'),
        (lambda l, y: masked_accuracy(l, y).cpu(), "device"),
    ])

def test_a_loss_and_logits_pair_is_told_the_convention():
    assert_check(check_masked_lm_loss, masked_lm_loss, [(lambda l, y: (masked_lm_loss(l, y), l), 'loss alone')])

# --- issue 31, second audit: the range and independence of the random draws, results made on the CPU ---------------
def _mt_range(x, mask_idx, n_tokens, pad_idx=1, special_ids=(), p=0.15, generator=None, *, lo=0, hi=0, count=None,
              skew=False):
    "A `mask_tokens` whose random ids come from [lo, n_tokens + hi), or whose selection has a fixed count (`count`)"
    d = lambda f, *a: f(*a, x.shape, generator=generator, device=x.device)
    u, r = d(torch.rand), d(torch.rand)
    rnd = (d(torch.rand) * d(torch.rand) * n_tokens).long() if skew else d(torch.randint, lo, n_tokens + hi)
    el = _eligible(x, pad_idx, special_ids)
    if count == 'batch':                                      # exactly round(p·n) of the batch's eligible tokens
        n = round(p * int(el.sum())); score = torch.where(el, u, 2.).flatten()
        sel = torch.zeros(x.numel(), dtype=torch.bool, device=x.device); sel[score.argsort()[:n]] = True; sel = sel.view_as(x)
    elif count == 'row':                                      # exactly round(p·n_i) tokens of each row (topk per row)
        k = (p * el.sum(1, keepdim=True)).round().long()
        rank = torch.where(el, u, 2.).argsort(1).argsort(1)
        sel = el & (rank < k)
    else: sel = el & (u < p)
    inp = torch.where(sel & (r >= 0.8) & (r < 0.9), rnd, torch.where(sel & (r < 0.8), torch.full_like(x, mask_idx), x))
    return inp, torch.where(sel, x, torch.full_like(x, -100))
def mtr(**kw): return lambda *a, **k: _mt_range(*a, **k, **kw)

def test_mask_tokens_range_and_independence():
    assert_check(check_mask_tokens, mtr())                    # the helper itself, with no mistake, passes
    assert_check(check_mask_tokens, mask_tokens, [
        (mtr(hi=-1), 'largest id, n_tokens - 1'), (mtr(lo=1), 'id 0 never came out'),
        (mtr(lo=4), 'id 0 never came out'),                     # specials 0-3 skipped
        (mtr(skew=True), 'largest id|far from uniform|whole vocabulary'),
        (mtr(count='batch'), 'exactly \\d+ selected tokens'), (mtr(count='row'), 'same share of selected tokens')])

def acc_cpu_zero(l, y):                                      # the audit's answer: a CPU 0 when nothing is selected
    m = y != -100
    if not m.any(): return torch.tensor(0.)
    return (l[m].argmax(-1) == y[m]).float().mean()
def acc_item(l, y):                                          # through a Python float
    m = y != -100
    return torch.tensor(((l.argmax(-1) == y) & m).sum().item() / max(int(m.sum()), 1))
def acc_empty_like_logits(l, y):                             # the 0 in the logits' dtype
    m = y != -100
    return l.new_zeros(()) if not m.any() else (l[m].argmax(-1) == y[m]).float().mean()
def acc_empty_guarded(l, y):                                 # valid: a 0 made on the logits' device
    m = y != -100
    if not m.any(): return torch.zeros((), device=l.device)
    return (l[m].argmax(-1) == y[m]).float().mean()
def acc_empty_new_zeros(l, y):                               # valid: new_zeros with the dtype given
    m = y != -100
    return l.new_zeros((), dtype=torch.float32) if not m.any() else (l[m].argmax(-1) == y[m]).float().mean()

def test_masked_accuracy_empty_case():
    for fn in (acc_empty_guarded, acc_empty_new_zeros):
        assert_check(check_masked_accuracy, fn)
    assert_check(check_masked_accuracy, masked_accuracy, [
        (acc_cpu_zero, 'made on the CPU.*when no position is selected'), (acc_item, 'made on the CPU|device'),
        (acc_empty_like_logits, 'still be a float32')])

def ml_log_softmax_dim1(l, y):                               # the audit's answer: normalised over the positions
    m = y != -100
    return -(F.log_softmax(l, 1).gather(-1, y.clamp_min(0)[..., None])[..., 0] * m).sum() / m.sum()
def ml_log_softmax_dim0(l, y):
    m = y != -100
    return -(F.log_softmax(l, 0).gather(-1, y.clamp_min(0)[..., None])[..., 0] * m).sum() / m.sum()

def test_masked_lm_loss_wrong_dim():
    assert_check(check_masked_lm_loss, masked_lm_loss, [(ml_log_softmax_dim1, 'dim 1 \\(the positions\\)'),
                                                        (ml_log_softmax_dim0, 'dim 0|dim 1')])


# the 80/10/10 choice or the random ids drawn per column or per row, not per position: each shared draw but the
# per-row random ids was accepted (the rates came out right on average)
def _shared(x, mask_idx, n_tokens, pad_idx=1, special_ids=(), p=0.15, generator=None, r_shape=None, rnd_shape=None):
    u = torch.rand(x.shape, generator=generator, device=x.device)
    r = torch.rand(r_shape(x) if r_shape else x.shape, generator=generator, device=x.device)
    rnd = torch.randint(0, n_tokens, rnd_shape(x) if rnd_shape else x.shape, generator=generator, device=x.device)
    sel = (u < p) & (x != pad_idx) & ~torch.isin(x, torch.tensor(list(special_ids), dtype=x.dtype, device=x.device))
    inp = torch.where(sel & (r < 0.8), torch.full_like(x, mask_idx), x)
    inp = torch.where(sel & (r >= 0.8) & (r < 0.9), rnd.expand_as(x), inp)
    return inp, torch.where(sel, x, torch.full_like(x, -100))
def mt_choice_per_column(x, *a, **k): return _shared(x, *a, **k, r_shape=lambda x: (x.size(-1),))
def mt_choice_per_row(x, *a, **k):    return _shared(x, *a, **k, r_shape=lambda x: (x.size(0), 1))
def mt_ids_per_column(x, *a, **k):    return _shared(x, *a, **k, rnd_shape=lambda x: (x.size(-1),))

def test_mask_tokens_draws_per_position():
    assert_check(check_mask_tokens, _shared)                       # the same draws per position: valid
    assert_check(check_mask_tokens, mask_tokens, [
        (mt_choice_per_column, r'shared by a column'), (mt_choice_per_row, r'shared by a row'),
        (mt_ids_per_column, r'random ids repeat down each column')])
