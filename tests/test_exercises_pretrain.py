"Lesson 41's check accepts the solution and other valid styles, and rejects the stub and the typical wrong answers with the right hint."
import random
import numpy as np
import pytest, torch
from fastai.data.load import DataLoader
from transformers_scratch.checks.toolkit import assert_check
from transformers_scratch.mlm import mask_tokens
from transformers_scratch.pretrain import MaskedLMDataLoader
from transformers_scratch.checks.pretrain import check_masked_lm_loader
from conftest import stub

pytestmark = pytest.mark.usefixtures('one_thread')

# --- valid answers, in other styles ---------------------------------------------------------------------------------
class ByHand(DataLoader):
    "Masking written out with torch.where, fastai's own collate (super().create_batch), fixed items kept as tuples"
    def __init__(self, windows, mask_idx, n_tokens, special_ids=(), p=0.15, seed=0, fixed=False, **kw):
        self.mask_idx, self.n_tokens, self.special, self.p, self.fixed = mask_idx, n_tokens, torch.tensor(list(special_ids) + [1]), p, fixed
        self.g = torch.Generator().manual_seed(seed)
        items = [self.mask(w[None]) for w in windows] if fixed else list(windows)
        super().__init__(items, **kw)
        self.rng = random.Random(seed)
    def mask(self, x):
        sel = (torch.rand(x.shape, generator=self.g) < self.p) & ~torch.isin(x, self.special)
        r = torch.rand(x.shape, generator=self.g)
        rnd = torch.randint(0, self.n_tokens, x.shape, generator=self.g)
        inp = torch.where(sel & (r < 0.8), self.mask_idx, torch.where(sel & (r > 0.9), rnd, x))
        return inp, sel, torch.where(sel, x, -100)
    def create_batch(self, b):
        if self.fixed: return tuple(torch.cat(t) for t in zip(*b))
        return self.mask(super().create_batch(b))

class NumpyRNG(DataLoader):
    "A numpy Generator for the masks, masking in `after_batch`"
    def __init__(self, windows, mask_idx, n_tokens, special_ids=(), p=0.15, seed=0, fixed=False, **kw):
        self.args, self.fixed, self.rs = (mask_idx, n_tokens, np.array(list(special_ids) + [1]), p), fixed, np.random.default_rng(seed)
        self.frozen = self.draw(torch.stack(list(windows))) if fixed else None
        super().__init__(list(range(len(windows))) if fixed else list(windows), **kw)
        self.rng = random.Random(seed)
    def draw(self, x):
        m, v, sp, p = self.args
        xn = x.numpy()
        sel = (self.rs.random(xn.shape) < p) & ~np.isin(xn, sp)
        r, rnd = self.rs.random(xn.shape), self.rs.integers(0, v, xn.shape)
        inp = np.where(sel & (r < 0.8), m, np.where(sel & (r >= 0.9), rnd, xn))
        return torch.from_numpy(inp), torch.from_numpy(sel), torch.from_numpy(np.where(sel, xn, -100))
    def create_batch(self, b):
        if self.fixed: return tuple(t[torch.tensor(b)] for t in self.frozen)
        return torch.stack(b)
    def after_batch(self, b): return b if self.fixed else self.draw(b)

class Collate(DataLoader):
    "mask_tokens on the stacked batch, its generator made lazily on first use (still once), fixed masks in a dict"
    def __init__(self, windows, mask_idx, n_tokens, special_ids=(), p=0.15, seed=0, fixed=False, **kw):
        self.kw, self.seed, self._g = dict(mask_idx=mask_idx, n_tokens=n_tokens, special_ids=special_ids, p=p), seed, None
        self.fixed = {i: self.masked(w[None]) for i, w in enumerate(windows)} if fixed else None
        super().__init__(list(enumerate(windows)), **kw)
        self.rng = random.Random(seed)
    @property
    def gen(self):
        if self._g is None: self._g = torch.Generator().manual_seed(self.seed)
        return self._g
    def masked(self, x):
        inp, tgt = mask_tokens(x, generator=self.gen, **self.kw)
        return inp, tgt
    def create_batch(self, b):
        ids, ws = zip(*b)
        if self.fixed is not None: inp, tgt = (torch.cat(t) for t in zip(*(self.fixed[i] for i in ids)))
        else: inp, tgt = self.masked(torch.stack(ws))
        return inp, tgt.ne(-100), tgt

@pytest.mark.parametrize('cls', [MaskedLMDataLoader, ByHand, NumpyRNG, Collate])
def test_valid_answers_pass(cls): assert_check(check_masked_lm_loader, cls)

# --- wrong answers: the solution with one thing changed ---------------------------------------------------------------
class _L(MaskedLMDataLoader):
    def mask(self, x, g=None):
        return mask_tokens(x, self.mask_idx, self.n_tokens, 1, self.special_ids, self.p, self.g if g is None else g)
    def create_batch(self, b):
        x = torch.stack(b)
        inp, tgt = (x[:, 0], x[:, 1]) if self.fixed else self.mask(x)
        return self.out(inp, tgt)
    def out(self, inp, tgt): return inp, tgt != -100, tgt

class once_for_all(_L):                       # every loader masks once, in __init__
    def __init__(self, windows, *a, fixed=False, **kw): super().__init__(windows, *a, fixed=True, **kw)
class reseeded_per_batch(_L):
    def __init__(self, windows, *a, seed=0, **kw): super().__init__(windows, *a, seed=seed, **kw); self.seed = seed
    def mask(self, x): return super().mask(x, torch.Generator().manual_seed(self.seed))
class reseeded_per_epoch(_L):
    def __init__(self, windows, *a, seed=0, **kw): super().__init__(windows, *a, seed=seed, **kw); self.seed = seed
    def before_iter(self): super().before_iter(); self.g.manual_seed(self.seed)
class global_rng(_L):
    def mask(self, x): return mask_tokens(x, self.mask_idx, self.n_tokens, 1, self.special_ids, self.p)
class seed_ignored(_L):
    def __init__(self, windows, *a, seed=0, **kw): super().__init__(windows, *a, seed=0, **kw)
class fixed_anew(_L):
    def __init__(self, windows, *a, fixed=False, **kw):
        super().__init__(windows, *a, fixed=False, **kw)
class where_mask_only(_L):
    def out(self, inp, tgt): return inp, inp == self.mask_idx, tgt
class where_inverted(_L):
    def out(self, inp, tgt): return inp, tgt == -100, tgt
class where_long(_L):
    def out(self, inp, tgt): return inp, (tgt != -100).long(), tgt
class two_items(_L):
    def out(self, inp, tgt): return inp, tgt
class targets_masked(_L):
    def out(self, inp, tgt): return inp, tgt != -100, torch.where(tgt != -100, inp, -100)
class specials_selected(_L):
    def mask(self, x): return mask_tokens(x, self.mask_idx, self.n_tokens, -1, (), self.p, self.g)
class p_default(_L):
    def mask(self, x): return mask_tokens(x, self.mask_idx, self.n_tokens, 1, self.special_ids, generator=self.g)
class all_masked(_L):
    def mask(self, x):
        inp, tgt = super().mask(x)
        return torch.where(tgt != -100, self.mask_idx, inp), tgt
class shuffle_unseeded(_L):
    def __init__(self, windows, *a, **kw):
        super().__init__(windows, *a, **kw)
        self.rng = random.Random(random.randint(0, 2**32 - 1))
class windows_in_place(_L):                    # the fixed set masked by assigning into the windows
    def __init__(self, windows, mask_idx, n_tokens, special_ids=(), p=0.15, seed=0, fixed=False, **kw):
        if fixed:
            inp, tgt = mask_tokens(windows, mask_idx, n_tokens, 1, special_ids, p, torch.Generator().manual_seed(seed))
            tgt, windows[:] = tgt, inp
            windows = torch.stack([windows.clone(), tgt], 1)
            super(MaskedLMDataLoader, self).__init__(list(windows), **kw)
            self.fixed, self.rng = True, random.Random(seed)
        else: super().__init__(windows, mask_idx, n_tokens, special_ids, p, seed, False, **kw)
class a_function:                              # a plain collate function where a DataLoader class is asked for
    def __new__(cls, windows, *a, **kw): return lambda b: torch.stack(b)
class torch_dataloader(torch.utils.data.DataLoader):
    def __init__(self, windows, mask_idx, n_tokens, special_ids=(), p=0.15, seed=0, fixed=False, bs=8, shuffle=False, **kw):
        super().__init__(list(windows), batch_size=bs, shuffle=shuffle)

class where_changed(_L):                       # the kept 10% left out of where
    def create_batch(self, b):
        if self.fixed: return super().create_batch(b)
        x = torch.stack(b)
        inp, tgt = self.mask(x)
        return inp, inp != x, tgt
class targets_zero(_L):
    def out(self, inp, tgt): return inp, tgt != -100, torch.where(tgt != -100, tgt, 0)
class order_swapped(_L):
    def out(self, inp, tgt): return inp, tgt, tgt != -100
class global_seeded(_L):                        # torch.manual_seed(seed) at construction, then the global RNG
    def __init__(self, windows, *a, seed=0, **kw):
        torch.manual_seed(seed)
        super().__init__(windows, *a, seed=seed, **kw)
    def mask(self, x): return mask_tokens(x, self.mask_idx, self.n_tokens, 1, self.special_ids, self.p)
class bs_fixed(_L):
    def __init__(self, windows, *a, bs=None, **kw): super().__init__(windows, *a, bs=16, **kw)

class python_random(_L):                        # Python's global random module draws the selection
    def mask(self, x):
        u = torch.tensor([random.random() for _ in range(x.numel())]).view(x.shape)
        g = torch.Generator().manual_seed(int(u[0, 0] * 1e6))
        return mask_tokens(x, self.mask_idx, self.n_tokens, 1, self.special_ids, self.p, g)
class no_kept(_L):                              # 80% mask, 20% random, none kept
    def mask(self, x):
        inp, tgt = super().mask(x)
        kept = (tgt != -100) & (inp == x)
        return torch.where(kept, torch.randint(7, self.n_tokens, x.shape, generator=self.g), inp), tgt
class mask_70(_L):                              # 70% mask, 15% random, 15% kept
    def mask(self, x):
        inp, tgt = super().mask(x)
        back = (inp == self.mask_idx) & (torch.rand(x.shape, generator=self.g) < 0.125)
        return torch.where(back, x, inp), tgt
class fresh_generator_per_epoch(_L):            # a new, unseeded generator each epoch
    def before_iter(self): super().before_iter(); self.g = torch.Generator(); self.g.seed()

WRONGS = [(stub, 'not solved'), (once_for_all, 'the two epochs saw the same masks'), (reseeded_per_batch, 'every batch has the same masked positions'),
          (reseeded_per_epoch, 'the two epochs saw the same masks'), (global_rng, r"not from torch's \(or Python's\) global"),
          (seed_ignored, 'seeds 3 and 4 gave the same masks'), (fixed_anew, 'with fixed=True'),
          (where_mask_only, 'not only the mask tokens'), (where_inverted, 'wrong way round'), (where_long, 'bool tensor'),
          (two_items, r'three tensors \(inputs, where, targets\), got tuple of 2'), (targets_masked, 'not the masked inputs'),
          (specials_selected, 'special token was selected'), (p_default, 'share of tokens selected should be p=0.3'),
          (all_masked, 'every selected position holds the mask id'), (shuffle_unseeded, r'self\.rng'),
          (windows_in_place, 'changed the windows'), (a_function, 'should build a fastai DataLoader'),
          (torch_dataloader, 'should build a fastai DataLoader'),
          (targets_zero, 'should be -100 where nothing was selected'), (order_swapped, r'\(inputs, where, targets\) in that order'),
          (global_seeded, r"not from torch's \(or Python's\) global"), (bs_fixed, 'gave 8 batches of 128 windows'), (where_changed, 'not inputs != windows'),
          (python_random, "or Python's\\) global"), (fresh_generator_per_epoch, 'made once, not from'),
          (no_kept, '10% of the selected positions should keep'), (mask_70, '80% of the selected positions should hold the mask id')]

def test_wrong_answers_are_named(): assert_check(check_masked_lm_loader, MaskedLMDataLoader, WRONGS)

# --- the learner's answer carries the lesson on ------------------------------------------------------------------------
ANSWER = '''
class my_MaskedLMDataLoader(DataLoader):
    def __init__(self, windows, mask_idx, n_tokens, special_ids=(), p=0.15, seed=0, fixed=False, **kw):
        CALLS['loaders'] = CALLS.get('loaders', 0) + 1
        self.args, self.fixed = (mask_idx, n_tokens, 1, tuple(special_ids), p), fixed
        self.g = torch.Generator().manual_seed(seed)
        items = list(torch.stack(mask_tokens(windows, *self.args, self.g), 1)) if fixed else list(windows)
        super().__init__(items, **kw)
        self.rng = random.Random(seed)
    def create_batch(self, b):
        CALLS['batches'] = CALLS.get('batches', 0) + 1
        x = torch.stack(b)
        inp, tgt = (x[:, 0], x[:, 1]) if self.fixed else mask_tokens(x, *self.args, self.g)
        return inp, tgt != -100, tgt
'''

def test_the_lesson_goes_on_with_the_learners_answer(tmp_path):
    "The learner's edition with the exercise answered: once the check passes, the lesson's `mlm_dls` uses it"
    from learner_run import run_answered
    seen = run_answered(tmp_path, '41_pretrain.ipynb', {'my_MaskedLMDataLoader': ANSWER})
    for k in ('loaders', 'batches'): assert seen['end'][k] > seen['after check'][k], seen

class NoSuperInit(MaskedLMDataLoader):          # fastai's DataLoader never set up
    def __init__(self, windows, mask_idx, n_tokens, special_ids=(), p=0.15, seed=0, fixed=False, **kw):
        self.windows, self.mask_idx, self.n_tokens, self.special_ids, self.p = windows, mask_idx, n_tokens, tuple(special_ids), p
        self.g, self.fixed = torch.Generator().manual_seed(seed), fixed

class KwargsDropped(MaskedLMDataLoader):        # bs and the rest never reach DataLoader
    def __init__(self, windows, mask_idx, n_tokens, special_ids=(), p=0.15, seed=0, fixed=False, **kw):
        super().__init__(windows, mask_idx, n_tokens, special_ids, p, seed, fixed)

def test_loader_set_up_wrongly_is_named():
    assert_check(check_masked_lm_loader, MaskedLMDataLoader, [(NoSuperInit, r"super\(\).__init__|DataLoader"),
                                                            (KwargsDropped, r"bs|keyword|batch")])


# n_tokens not passed on: the random ids (10% of the selected) come from a smaller range; each was accepted
class n_tokens_mask_idx(_L):                    # the mask id given as the vocabulary's size
    def mask(self, x, g=None): return mask_tokens(x, self.mask_idx, self.mask_idx, 1, self.special_ids, self.p, self.g)
class n_tokens_ten(_L):                         # a vocabulary size of its own
    def mask(self, x, g=None): return mask_tokens(x, self.mask_idx, 10, 1, self.special_ids, self.p, self.g)

def test_random_ids_span_the_vocabulary():
    assert_check(check_masked_lm_loader, MaskedLMDataLoader, [(n_tokens_mask_idx, r'whole vocabulary \[0, n_tokens=40\)'),
                                                               (n_tokens_ten, r'they all lie below 10')])
