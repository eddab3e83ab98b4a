"Lesson 50's checks accept the solutions and valid answers in other styles, and reject the stub and each typical mistake with its own hint."
import math, torch, torch.nn as nn, torch.nn.functional as F
from transformers_scratch.checks.toolkit import assert_check
from transformers_scratch.lora import LoRALinear, add_lora, merge_lora
from transformers_scratch.checks.lora import check_lora_linear, check_add_lora, check_merge_lora
from conftest import stub

# --- LoRALinear: valid answers in other styles ------------------------------------------------------------------------
class LEinsum(nn.Module):      # einsum, randn·0.01 for A, F.dropout with training=self.training
    def __init__(self, base, r=8, alpha=16, dropout=0.):
        super().__init__()
        self.base, self.s, self.p = base, alpha / r, dropout
        for p in base.parameters(): p.requires_grad = False
        w = base.weight
        self.A = nn.Parameter(torch.randn(r, w.shape[1], dtype=w.dtype, device=w.device) * 0.01)
        self.B = nn.Parameter(torch.zeros(w.shape[0], r, dtype=w.dtype, device=w.device))
    def forward(self, x):
        d = F.dropout(x, self.p, training=self.training)
        return self.base(x) + self.s * torch.einsum('...i,ri,or->...o', d, self.A, self.B)

class LFLinear(nn.Module):     # F.linear twice, kaiming A
    def __init__(self, base, r=8, alpha=16, dropout=0.):
        super().__init__()
        base.weight.requires_grad_(False)
        if base.bias is not None: base.bias.requires_grad_(False)
        self.base, self.r, self.alpha = base, r, alpha
        self.A = nn.Parameter(torch.empty(r, base.in_features, dtype=base.weight.dtype, device=base.weight.device))
        nn.init.kaiming_uniform_(self.A, a=math.sqrt(5))
        self.B = nn.Parameter(base.weight.new_zeros(base.out_features, r))
        self.drop = nn.Dropout(dropout)
    def forward(self, x):
        return self.base(x) + F.linear(F.linear(self.drop(x), self.A), self.B) * (self.alpha / self.r)

class LPeft(nn.Module):        # peft's layout: A and B as bias-free Linears
    def __init__(self, base, r=8, alpha=16, dropout=0.):
        super().__init__()
        self.base = base.requires_grad_(False)
        kw = dict(bias=False, dtype=base.weight.dtype, device=base.weight.device)
        self.A, self.B = nn.Linear(base.in_features, r, **kw), nn.Linear(r, base.out_features, **kw)
        nn.init.zeros_(self.B.weight)
        self.dropout, self.scaling = nn.Dropout(dropout), alpha / r
    def forward(self, x): return self.base(x) + self.B(self.A(self.dropout(x))) * self.scaling

class LMergedWeight(nn.Module):   # one F.linear with W + s·B A (no dropout path used: dropout applied by masking the delta's input)
    def __init__(self, base, r=8, alpha=16, dropout=0.):
        super().__init__()
        self.base = base
        base.requires_grad_(False)
        self.A = nn.Parameter(base.weight.new_empty(r, base.in_features).normal_() / base.in_features)
        self.B = nn.Parameter(torch.zeros_like(base.weight[:, :r]) if base.in_features >= r else base.weight.new_zeros(base.out_features, r))
        self.scale, self.do = alpha / r, nn.Dropout(dropout)
    def forward(self, x):
        delta = (self.B @ self.A) * self.scale
        return F.linear(x, self.base.weight, self.base.bias) + self.do(x) @ delta.T

# --- LoRALinear: wrong answers ----------------------------------------------------------------------------------------
def _mk(scale=lambda r, a: a / r, b_zero=True, a_zero=False, A_shape='ri', B_shape='or', freeze='all', fwd='ok', drop='input', A_std=None):
    class W(nn.Module):
        def __init__(self, base, r=8, alpha=16, dropout=0.):
            super().__init__()
            self.base = base
            if freeze == 'all': base.requires_grad_(False)
            elif freeze == 'weight': base.weight.requires_grad_(False)
            i, o, dt = base.in_features, base.out_features, base.weight.dtype
            shp = {'ri': (r, i), 'ir': (i, r), 'or': (o, r), 'ro': (r, o)}
            self.A = nn.Parameter(torch.zeros(shp[A_shape], dtype=dt) if a_zero else torch.randn(shp[A_shape], dtype=dt) * (A_std or 0.01))
            self.B = nn.Parameter(torch.zeros(shp[B_shape], dtype=dt) if b_zero else torch.randn(shp[B_shape], dtype=dt) * 0.01)
            self.s, self.do = scale(r, alpha), nn.Dropout(dropout)
        def forward(self, x):
            if fwd == 'transposed': return self.base(x) + self.do(x) @ (self.B @ self.A) * self.s
            if fwd == 'swapped': return self.base(x) + self.do(x) @ self.A.T @ self.B.T * self.s if self.A.shape[0] != self.B.shape[1] else self.base(x) + self.do(x) @ self.B.T @ self.A.T * self.s
            if fwd == 'nobias': return F.linear(x, self.base.weight) + self.do(x) @ self.A.T @ self.B.T * self.s
            if fwd == 'detach': return self.base(x) + self.do(x) @ self.A.data.T @ self.B.data.T * self.s
            if drop == 'base': return self.do(self.base(x)) + x @ self.A.T @ self.B.T * self.s
            if drop == 'both': d = self.do(x); return self.base(d) + d @ self.A.T @ self.B.T * self.s
            if drop == 'output': return self.do(self.base(x) + x @ self.A.T @ self.B.T * self.s)
            if drop == 'after': return self.base(x) + self.do(x @ self.A.T @ self.B.T * self.s)
            if drop == 'none': return self.base(x) + x @ self.A.T @ self.B.T * self.s
            if drop == 'always': return self.base(x) + F.dropout(x, self.do.p, training=True) @ self.A.T @ self.B.T * self.s
            return self.base(x) + self.do(x) @ self.A.T @ self.B.T * self.s
    return W

class LNotModule:
    def __init__(self, base, r=8, alpha=16, dropout=0.): self.base = base
class LNoAttrs(nn.Module):
    def __init__(self, base, r=8, alpha=16, dropout=0.): super().__init__(); self.lin = base
    def forward(self, x): return self.lin(x)
class LReturnsTuple(LoRALinear):
    def forward(self, x): return super().forward(x), None
class LEmptyA(LoRALinear):
    def __init__(self, base, r=8, alpha=16, dropout=0.):
        super().__init__(base, r, alpha, dropout)
        self.A = nn.Parameter(torch.empty(r, base.in_features, dtype=base.weight.dtype).fill_(float('nan')))
class LCopiesBase(LoRALinear):     # a fresh Linear instead of the given one
    def __init__(self, base, r=8, alpha=16, dropout=0.):
        super().__init__(nn.Linear(base.in_features, base.out_features, bias=base.bias is not None, dtype=base.weight.dtype), r, alpha, dropout)

def test_lora_linear():
    for ok in (LEinsum, LFLinear, LPeft, LMergedWeight): assert_check(check_lora_linear, ok)
    assert_check(check_lora_linear, LoRALinear, [
        (stub, 'not solved|cannot be called'),
        (_mk(b_zero=False), 'B should start at zero'),
        (_mk(b_zero=False, a_zero=True), 'swapped'),
        (_mk(a_zero=True), 'A should be drawn at random'),
        (_mk(A_std=1.0), 'too large'),
        (_mk(A_shape='ir'), 'transposed'), (_mk(B_shape='ro'), 'transposed'), (_mk(A_shape='or', B_shape='ri'), 'swapped'),
        (_mk(scale=lambda r, a: r / a), 'inverted'), (_mk(scale=lambda r, a: a), 'scaled by alpha'),
        (_mk(scale=lambda r, a: 1), 'not scaled'), (_mk(scale=lambda r, a: a // r), 'integer division'),
        (_mk(scale=lambda r, a: a / math.sqrt(r)), 'rsLoRA'),
        (_mk(freeze='none'), 'base weight is still trainable'), (_mk(freeze='weight'), "bias is still trainable"),
        (_mk(fwd='transposed'), 'transposed|shapes do not fit'), (_mk(fwd='nobias'), 'bias is missing'),
        (_mk(fwd='detach'), 'no gradient reached'),
        (_mk(drop='base'), 'base path'), (_mk(drop='both'), 'base path too'), (_mk(drop='output'), 'on the output'),
        (_mk(drop='after'), "path's output"), (_mk(drop='none'), 'no dropout was applied'), (_mk(drop='always'), 'eval mode'),
        (LNotModule, 'nn.Module'), (LNoAttrs, 'no attribute'), (LReturnsTuple, 'tensor'), (LEmptyA, 'NaN'),
        (LCopiesBase, "weight is not the base's")])

# --- add_lora ---------------------------------------------------------------------------------------------------------
def al_loop(model, targets, r=8, alpha=16, dropout=0.):          # walks the children recursively; counts what it wrapped
    for p in model.parameters(): p.requires_grad = False
    done = set()
    def walk(mod, prefix):
        for name, child in list(mod.named_children()):
            full = f"{prefix}{name}"
            hit = [t for t in targets if isinstance(child, nn.Linear) and (full == t or full.endswith('.' + t))]
            if hit: setattr(mod, name, LoRALinear(child, r, alpha, dropout)); done.update(hit)
            else: walk(child, full + '.')
    walk(model, '')
    if set(targets) - done: raise KeyError(f"no Linear matches {sorted(set(targets) - done)}")
    return model

def al_split(model, targets, r=8, alpha=16, dropout=0.):         # name.split and a dict of modules
    model.requires_grad_(False)
    mods = dict(model.named_modules())
    for t in targets: assert any(n.split('.')[-len(t.split('.')):] == t.split('.') for n in mods), f"target {t} matches nothing"
    for n, m in list(mods.items()):
        if isinstance(m, nn.Linear) and any(n.split('.')[-len(t.split('.')):] == t.split('.') for t in targets):
            *path, leaf = n.split('.')
            setattr(mods['.'.join(path)], leaf, LEinsum(m, r, alpha, dropout))
    return model

def al_peft(model, targets, r=8, alpha=16, dropout=0.):          # the peft-style wrapper, set_submodule
    model.requires_grad_(False)
    names = [n for n, m in model.named_modules() if isinstance(m, nn.Linear) and any(n == t or n.endswith('.' + t) for t in targets)]
    if not names: raise ValueError(f"Target modules {targets} not found in the base model")   # peft's words
    for n in names: model.set_submodule(n, LPeft(model.get_submodule(n), r, alpha, dropout))
    return model

def al_no_return(model, targets, r=8, alpha=16, dropout=0.): add_lora(model, targets, r, alpha, dropout)
def al_not_frozen(model, targets, r=8, alpha=16, dropout=0.):
    add_lora(model, targets, r, alpha, dropout)
    return model.requires_grad_(True)
def al_only_wrapped_frozen(model, targets, r=8, alpha=16, dropout=0.):
    for n in [n for n, m in model.named_modules() if isinstance(m, nn.Linear) and n.split('.')[-1] in targets]:
        model.set_submodule(n, LoRALinear(model.get_submodule(n), r, alpha, dropout))
    return model
def al_first_block(model, targets, r=8, alpha=16, dropout=0.):
    model.requires_grad_(False)
    for n in [n for n, m in model.named_modules() if isinstance(m, nn.Linear) and n.split('.')[-1] in targets and '.0.' in n + '.' and 'blocks.0' in n]:
        model.set_submodule(n, LoRALinear(model.get_submodule(n), r, alpha, dropout))
    return model
def al_dotted_only(model, targets, r=8, alpha=16, dropout=0.):   # misses top-level names ('toprobs')
    model.requires_grad_(False)
    for n in [n for n, m in model.named_modules() if isinstance(m, nn.Linear) and any(n.endswith('.' + t) for t in targets)]:
        model.set_submodule(n, LoRALinear(model.get_submodule(n), r, alpha, dropout))
    return model
def al_every_linear(model, targets, r=8, alpha=16, dropout=0.):
    model.requires_grad_(False)
    for n in [n for n, m in model.named_modules() if isinstance(m, nn.Linear)]:
        model.set_submodule(n, LoRALinear(model.get_submodule(n), r, alpha, dropout))
    return model
def al_swapped_args(model, targets, r=8, alpha=16, dropout=0.): return add_lora(model, targets, alpha, r, dropout)
def al_b_random(model, targets, r=8, alpha=16, dropout=0.):
    add_lora(model, targets, r, alpha, dropout)
    for m in model.modules():
        if isinstance(m, LoRALinear): nn.init.normal_(m.B, std=0.1)
    return model
def al_new_model(model, targets, r=8, alpha=16, dropout=0.):
    import copy
    return add_lora(copy.deepcopy(model), targets, r, alpha, dropout)   # a copy is fine
def al_unscaled(model, targets, r=8, alpha=16, dropout=0.): return add_lora(model, targets, r, r, dropout)

def test_add_lora():
    for ok in (al_loop, al_split, al_peft, al_new_model): assert_check(check_add_lora, ok)
    assert_check(check_add_lora, add_lora, [
        (stub, 'not solved|cannot be called'), (al_no_return, 'return the model'), (al_not_frozen, 'still trains'),
        (al_only_wrapped_frozen, 'still trains'), (al_first_block, 'was not wrapped'), (al_dotted_only, 'toprobs was not wrapped'),
        (al_every_linear, 'only the Linears named'), (al_swapped_args, 'rank'), (al_b_random, 'changed before training'),
        (al_unscaled, 'not scaled'), (lambda model, targets, r=8, alpha=16, dropout=0.: 'model', 'return the model')])

# --- merge_lora -------------------------------------------------------------------------------------------------------
def _lora_mods(model, cls=None):
    return [(n, m) for n, m in model.named_modules() if hasattr(m, 'A') and hasattr(m, 'B') and hasattr(m, 'base')]
def _put(model, n, new):
    parent, _, child = n.rpartition('.')
    setattr(model.get_submodule(parent), child, new)

def mg_einsum(model):            # a new nn.Linear, einsum for B A
    for n, m in _lora_mods(model):
        W = m.base.weight + m.scale * torch.einsum('or,ri->oi', m.B, m.A)
        lin = nn.Linear(W.shape[1], W.shape[0], bias=m.base.bias is not None, device=W.device)
        with torch.no_grad():
            lin.weight.copy_(W)
            if m.base.bias is not None: lin.bias.copy_(m.base.bias)
        _put(model, n, lin)
    return model
def mg_addmm(model):             # in place with addmm_
    for n, m in _lora_mods(model):
        with torch.no_grad(): m.base.weight.addmm_(m.B, m.A, alpha=m.alpha / m.r)
        _put(model, n, m.base)
    return model
def mg_data(model):              # .data, set_submodule
    for n, m in _lora_mods(model):
        m.base.weight.data = m.base.weight.data + (m.B.data @ m.A.data) * m.scale
        model.set_submodule(n, m.base)
    return model
def mg_peft(model):              # merges the peft-style wrapper (A, B are Linears)
    for n, m in _lora_mods(model):
        with torch.no_grad(): m.base.weight += m.B.weight @ m.A.weight * m.scaling
        _put(model, n, m.base)
    return model

def _mg_wrong(delta, keep=True, replace=True):
    def f(model):
        for n, m in _lora_mods(model):
            with torch.no_grad(): m.base.weight += delta(m)
            if not keep: m.base.bias = None
            if replace: _put(model, n, m.base)
            else: m.B.zero_() if False else None
        return model
    return f
mg_no_scale = _mg_wrong(lambda m: m.B @ m.A)
mg_inverted = _mg_wrong(lambda m: m.B @ m.A * (m.r / m.alpha))
mg_alpha = _mg_wrong(lambda m: m.B @ m.A * m.alpha)
mg_transposed = _mg_wrong(lambda m: (m.B @ m.A).T * m.scale if m.base.weight.shape[0] == m.base.weight.shape[1] else m.B @ m.A * m.scale)
mg_nothing = _mg_wrong(lambda m: 0 * m.base.weight)
mg_no_bias = _mg_wrong(lambda m: m.B @ m.A * m.scale, keep=False)
mg_left_wrapper = _mg_wrong(lambda m: m.B @ m.A * m.scale, replace=False)   # the update now counts twice
def mg_zero_b(model):            # merges, zeroes B, but leaves the wrapper
    for n, m in _lora_mods(model):
        with torch.no_grad(): m.base.weight += m.B @ m.A * m.scale; m.B.zero_()
    return model
def mg_no_return(model): merge_lora(model)
def mg_subclass(model):          # a Linear subclass in place: not a plain nn.Linear
    class MyLinear(nn.Linear): pass
    for n, m in _lora_mods(model):
        lin = MyLinear(m.base.in_features, m.base.out_features, bias=m.base.bias is not None)
        with torch.no_grad():
            lin.weight.copy_(m.base.weight + m.B @ m.A * m.scale)
            if lin.bias is not None: lin.bias.copy_(m.base.bias)
        _put(model, n, lin)
    return model

def test_merge_lora():
    for ok in (mg_einsum, mg_addmm, mg_data): assert_check(check_merge_lora, ok)
    import functools
    assert_check(functools.partial(check_merge_lora, wrapper=LPeft), mg_peft)
    assert_check(check_merge_lora, merge_lora, [
        (stub, 'not solved|cannot be called'), (mg_no_scale, 'forgot the scale'), (mg_inverted, 'inverted'), (mg_alpha, 'scale is alpha'),
        (mg_transposed, 'transposed'), (mg_nothing, "the base's"), (mg_no_bias, 'bias'), (mg_left_wrapper, 'still a LoRA wrapper'),
        (mg_zero_b, 'still a LoRA wrapper'), (mg_no_return, 'return the model'), (mg_subclass, 'plain nn.Linear'),
        (lambda model: [model], 'return the model')])

def test_checks_use_the_class_passed():
    "check_merge_lora builds its wrappers with the learner's class: a merge that only knows that class passes"
    import functools
    def mg_only_einsum_class(model):
        for n, m in [(n, m) for n, m in model.named_modules() if isinstance(m, LEinsum)]:
            with torch.no_grad(): m.base.weight += m.B @ m.A * m.s
            _put(model, n, m.base)
        return model
    assert_check(functools.partial(check_merge_lora, wrapper=LEinsum), mg_only_einsum_class)

# --- more wrong answers, one per class of mistake ---------------------------------------------------------------------
class LScaleAll(LoRALinear):
    def forward(self, x): return (self.base(x) + self.dropout(x) @ self.A.T @ self.B.T) * self.scale
class LHardDrop(LoRALinear):
    def __init__(self, base, r=8, alpha=16, dropout=0.): super().__init__(base, r, alpha, 0.1)
class LNoDropArg(LoRALinear):
    def __init__(self, base, r=8, alpha=16, dropout=0.): super().__init__(base, r, alpha, 0.)
class LBTiny(LoRALinear):
    def __init__(self, base, r=8, alpha=16, dropout=0.): super().__init__(base, r, alpha, dropout); nn.init.normal_(self.B, std=1e-6)
class LABuffer(LoRALinear):
    def __init__(self, base, r=8, alpha=16, dropout=0.):
        super().__init__(base, r, alpha, dropout)
        a = self.A.detach().clone(); del self.A; self.register_buffer('A', a)
class LNoGradBase(LEinsum):       # the base computed under no_grad but never frozen
    def __init__(self, base, r=8, alpha=16, dropout=0.): super().__init__(base, r, alpha, dropout); base.requires_grad_(True)
class LFloat32(LoRALinear):
    def __init__(self, base, r=8, alpha=16, dropout=0.):
        super().__init__(base, r, alpha, dropout); self.A = nn.Parameter(self.A.float()); self.B = nn.Parameter(self.B.float())

def al_substring(model, targets, r=8, alpha=16, dropout=0.):
    model.requires_grad_(False)
    for n in [n for n, m in model.named_modules() if isinstance(m, nn.Linear) and any(t in n for t in targets)]:
        model.set_submodule(n, LoRALinear(model.get_submodule(n), r, alpha, dropout))
    return model
def al_frozen_after(model, targets, r=8, alpha=16, dropout=0.):
    for n in [n for n, m in model.named_modules() if isinstance(m, nn.Linear) and n.split('.')[-1] in targets]:
        model.set_submodule(n, LoRALinear(model.get_submodule(n), r, alpha, dropout))
    return model.requires_grad_(False)
def al_weights_only_frozen(model, targets, r=8, alpha=16, dropout=0.):
    for n, p in model.named_parameters():
        if n.endswith('weight'): p.requires_grad_(False)
    for n in [n for n, m in model.named_modules() if isinstance(m, nn.Linear) and n.split('.')[-1] in targets]:
        model.set_submodule(n, LoRALinear(model.get_submodule(n), r, alpha, dropout))
    return model
def al_default_rank(model, targets, r=8, alpha=16, dropout=0.): return add_lora(model, targets)
def mg_first_only(model):
    for n, m in _lora_mods(model)[:1]:
        with torch.no_grad(): m.base.weight += m.B @ m.A * m.scale
        _put(model, n, m.base)
    return model
def mg_copy(model):               # a merged copy is a valid answer too
    import copy
    return merge_lora(copy.deepcopy(model))

def test_more_wrong_answers():
    assert_check(check_lora_linear, LoRALinear, [
        (LScaleAll, "base's output too"), (LHardDrop, 'dropout=0'), (LNoDropArg, 'no dropout was applied'), (LBTiny, 'B should start at zero'),
        (LABuffer, 'should train'), (LNoGradBase, 'base weight is still trainable'), (LFloat32, 'dtype')])
    assert_check(check_add_lora, add_lora, [
        (al_substring, 'only the Linears named'), (al_frozen_after, 'should train'), (al_weights_only_frozen, 'bias still trains'),
        (al_default_rank, 'rank 8, not r=')])
    assert_check(check_merge_lora, mg_copy, [(mg_first_only, 'still a LoRA wrapper')])

def al_no_dropout(model, targets, r=8, alpha=16, dropout=0.): return add_lora(model, targets, r, alpha)
def al_dropout_everywhere(model, targets, r=8, alpha=16, dropout=0.):   # nn.Dropout put after each wrapper: on the output
    add_lora(model, targets, r, alpha)
    for n, m in [(n, m) for n, m in model.named_modules() if isinstance(m, LoRALinear)]:
        model.set_submodule(n, nn.Sequential(m, nn.Dropout(dropout)) if dropout else m)
    return model

def test_add_lora_passes_dropout_on():
    assert_check(check_add_lora, add_lora, [(al_no_dropout, 'dropout=0.25 was not passed on'), (al_dropout_everywhere, 'was not wrapped|gone')])

def test_library_merge_folds_a_learners_wrapper():
    "In the learner's edition the library's merge_lora meets the learner's own LoRALinear (check_merge_lora(merge_lora, LoRALinear) after the exercise): it folds what the wrapper computes"
    import functools
    for cls in (LEinsum, LFLinear, LPeft, LMergedWeight): assert_check(functools.partial(check_merge_lora, wrapper=cls), merge_lora)

LEARNER_LORA = '''
class my_LoRALinear(nn.Module):
    def __init__(self, base, r=8, alpha=16, dropout=0.):
        super().__init__()
        self.base, self.s = base.requires_grad_(False), alpha / r
        self.A = nn.Parameter(torch.randn(r, base.in_features, dtype=base.weight.dtype, device=base.weight.device) * 0.01)
        self.B = nn.Parameter(torch.zeros(base.out_features, r, dtype=base.weight.dtype, device=base.weight.device))
        self.drop = nn.Dropout(dropout)
    def forward(self, x):
        CALLS['my_LoRALinear'] = CALLS.get('my_LoRALinear', 0) + 1
        return self.base(x) + torch.einsum('...i,ri,or->...o', self.drop(x), self.A, self.B) * self.s
'''
LEARNER_ADD = '''
def my_add_lora(model, targets, r=8, alpha=16, dropout=0.):
    CALLS['my_add_lora'] = CALLS.get('my_add_lora', 0) + 1
    model.requires_grad_(False)
    names = [n for n, m in model.named_modules() if isinstance(m, nn.Linear) and any(n == t or n.endswith('.' + t) for t in targets)]
    for t in targets:
        if not any(n == t or n.endswith('.' + t) for n in names): raise ValueError(f"targets: nothing is named {t}")
    for n in names: model.set_submodule(n, LoRALinear(model.get_submodule(n), r, alpha, dropout))
    return model
'''

def test_the_lesson_goes_on_with_the_learners_layer_and_add_lora(tmp_path):
    "The learner's edition, with LoRALinear and add_lora answered (merge left to the library, which folds the learner's class): it runs to its end on their code"
    from learner_run import run_answered
    seen = run_answered(tmp_path, '50_lora.ipynb', {'my_LoRALinear': LEARNER_LORA, 'my_add_lora': LEARNER_ADD})
    assert seen['end']['my_add_lora'] > seen['after check']['my_add_lora']          # the measurements adapt with it
    assert seen['end']['my_LoRALinear'] > seen['after check']['my_LoRALinear']

# --- an independent audit: wrong answers the checks were not first written against -----------------------------------
class LBAlmostZero(LoRALinear):       # B "zero" but drawn tiny: the model moves before training
    def __init__(self, base, r=8, alpha=16, dropout=0.): super().__init__(base, r, alpha, dropout); nn.init.normal_(self.B, std=1e-9)
class LDropBetween(LoRALinear):
    def forward(self, x): return self.base(x) + self.dropout(x @ self.A.T) @ self.B.T * self.scale
class LTrainableCopy(LoRALinear):     # the base weight trains through a copy of it
    def __init__(self, base, r=8, alpha=16, dropout=0.):
        super().__init__(base, r, alpha, dropout); self.W = nn.Parameter(base.weight.detach().clone())
    def forward(self, x): return F.linear(x, self.W, self.base.bias) + self.dropout(x) @ self.A.T @ self.B.T * self.scale
class LSharedParam(LTrainableCopy):   # nn.Parameter(base.weight): the same storage, trainable again
    def __init__(self, base, r=8, alpha=16, dropout=0.): LoRALinear.__init__(self, base, r, alpha, dropout); self.W = nn.Parameter(base.weight)
class LUnfreezesInForward(LoRALinear):
    def forward(self, x): self.base.weight.requires_grad_(True); return super().forward(x)
class LBiasTwice(LoRALinear):
    def forward(self, x): return self.base(x) + (0 if self.base.bias is None else self.base.bias) + self.dropout(x) @ self.A.T @ self.B.T * self.scale
class LBiasScaled(LoRALinear):
    def forward(self, x):
        b = 0 if self.base.bias is None else self.base.bias
        return F.linear(x, self.base.weight) + (b + self.dropout(x) @ self.A.T @ self.B.T) * self.scale
class LHalfOut(LoRALinear):
    def forward(self, x): return super().forward(x).half()
class LHalfAB(LoRALinear):            # A and B in fp16 whatever the base's dtype
    def __init__(self, base, r=8, alpha=16, dropout=0.):
        super().__init__(base, r, alpha, dropout); self.A = nn.Parameter(self.A.detach().half()); self.B = nn.Parameter(self.B.detach().half())
    def forward(self, x): return self.base(x) + (self.dropout(x).half() @ self.A.T @ self.B.T * self.scale).to(x.dtype)
class LOnCPU(LoRALinear):             # A and B made without device=: on the CPU whatever the base's device
    def __init__(self, base, r=8, alpha=16, dropout=0.):
        super().__init__(base, r, alpha, dropout)
        A = torch.empty(r, base.in_features, dtype=base.weight.dtype); nn.init.kaiming_uniform_(A, a=math.sqrt(5))
        self.A, self.B = nn.Parameter(A), nn.Parameter(torch.zeros(base.out_features, r, dtype=base.weight.dtype))
class LCPUInForward(LoRALinear):      # a CPU tensor made in forward
    def forward(self, x): return self.base(x) + self.dropout(x) @ self.A.T @ self.B.T * torch.tensor([self.scale], dtype=x.dtype)
class LInplace(LoRALinear):           # valid: += on the base's output
    def forward(self, x): y = self.base(x); y += self.dropout(x) @ self.A.T @ self.B.T * self.scale; return y
def l_factory(base, r=8, alpha=16, dropout=0.): return LEinsum(base, r, alpha, dropout)   # valid: a function that builds the layer

def al_b_almost_zero(model, targets, r=8, alpha=16, dropout=0.):
    add_lora(model, targets, r, alpha, dropout)
    for m in model.modules():
        if isinstance(m, LoRALinear): nn.init.normal_(m.B, std=1e-9)
    return model
def al_silent(model, targets, r=8, alpha=16, dropout=0.):      # a misspelt target adapts nothing, says nothing
    model.requires_grad_(False)
    for n in [n for n, m in model.named_modules() if isinstance(m, nn.Linear) and any(n == t or n.endswith('.' + t) for t in targets)]:
        model.set_submodule(n, LoRALinear(model.get_submodule(n), r, alpha, dropout))
    return model
def al_assert_unnamed(model, targets, r=8, alpha=16, dropout=0.):
    assert any(isinstance(m, nn.Linear) and any(n == t or n.endswith('.' + t) for t in targets) for n, m in model.named_modules())
    return al_silent(model, targets, r, alpha, dropout)
def al_returns_a_layer(model, targets, r=8, alpha=16, dropout=0.):
    add_lora(model, targets, r, alpha, dropout)
    return next(m for m in model.modules() if isinstance(m, LoRALinear))
def al_half(model, targets, r=8, alpha=16, dropout=0.): return add_lora(model.half(), targets, r, alpha, dropout)
def al_extra_param(model, targets, r=8, alpha=16, dropout=0.):
    add_lora(model, targets, r, alpha, dropout); model.scale = nn.Parameter(torch.ones(1)); return model

def _mg_new(delta, bias=lambda m: m.base.bias, device=True):
    def f(model):
        for n, m in _lora_mods(model):
            lin = nn.Linear(m.base.in_features, m.base.out_features, bias=m.base.bias is not None, device=m.base.weight.device if device else None)
            with torch.no_grad():
                lin.weight.copy_(m.base.weight + delta(m))
                if lin.bias is not None: lin.bias.copy_(bias(m))
            _put(model, n, lin)
        return model
    return f
mg_bias_scaled = _mg_new(lambda m: m.B @ m.A * m.scale, bias=lambda m: m.base.bias * m.scale)
mg_on_cpu = _mg_new(lambda m: m.B @ m.A * m.scale, device=False)
def mg_half(model): return merge_lora(model).half()
def mg_returns_identity(model): merge_lora(model); return nn.Identity()
def mg_unfrozen(model): return merge_lora(model).requires_grad_(True)    # valid: what trains after merging is not the merge's business

def test_audit_lora_linear():
    for ok in (LInplace, l_factory): assert_check(check_lora_linear, ok)
    assert_check(check_lora_linear, LoRALinear, [
        (LBAlmostZero, 'B should start at zero'), (LDropBetween, 'between A and B'), (LTrainableCopy, 'only A and B should train, but W'),
        (LSharedParam, 'only A and B should train, but W'), (LUnfreezesInForward, 'gradient reached the base weight'),
        (LBiasTwice, 'bias is added twice'), (LBiasScaled, 'bias is scaled by alpha / r'), (LHalfOut, 'dtype'), (LHalfAB, "base weight's dtype"),
        (LOnCPU, "made on the cpu|another device"), (LCPUInForward, "device"),
        (LoRALinear(nn.Linear(3, 3)), 'not a layer made with it')])

def test_audit_add_lora():
    assert_check(check_add_lora, add_lora, [
        (al_b_almost_zero, "B is not zero"), (al_silent, 'adapted nothing and said nothing'), (al_assert_unnamed, 'without naming the target'),
        (al_returns_a_layer, 'return the model you were given'), (al_half, 'changed dtype'), (al_extra_param, 'scale still trains'),
        (LoRALinear, 'not a class'), (nn.Identity(), 'not a module')])

def test_audit_merge_lora():
    assert_check(check_merge_lora, mg_unfrozen, [
        (mg_bias_scaled, 'bias is scaled'), (mg_on_cpu, 'on the cpu after merging|another device'), (mg_half, 'changed dtype'),
        (mg_returns_identity, 'return the model you were given'), (LoRALinear, 'not a class'), (nn.Identity(), 'not a module')])

# --- a second audit: parameters the optimizer never sees, a one-signed A, a target matched by a name's end -------------
class LPlainTensors(nn.Module):       # tensors with requires_grad, not nn.Parameter: model.parameters() (the optimizer) never sees them
    def __init__(self, base, r=8, alpha=16, dropout=0.):
        super().__init__()
        self.base, kw = base.requires_grad_(False), dict(dtype=base.weight.dtype, device=base.weight.device)
        self.A = (torch.randn(r, base.in_features, **kw) * 0.01).requires_grad_()
        self.B = torch.zeros(base.out_features, r, **kw, requires_grad=True)
        self.s, self.drop = alpha / r, nn.Dropout(dropout)
    def forward(self, x): return self.base(x) + self.drop(x) @ self.A.T @ self.B.T * self.s
class LParameterTo(LPlainTensors):     # nn.Parameter(...).to(device): a copy, no parameter, on a GPU (the check's other device)
    def __init__(self, base, r=8, alpha=16, dropout=0.):
        nn.Module.__init__(self)
        self.base, dt, dev = base.requires_grad_(False), base.weight.dtype, base.weight.device
        self.A = nn.Parameter(torch.randn(r, base.in_features, dtype=dt) * 0.01).to(dev)
        self.B = nn.Parameter(torch.zeros(base.out_features, r, dtype=dt)).to(dev)
        self.s, self.drop = alpha / r, nn.Dropout(dropout)
class LRandA(LoRALinear):              # torch.rand: every entry of A in [0, 1)
    def __init__(self, base, r=8, alpha=16, dropout=0.):
        super().__init__(base, r, alpha, dropout); nn.init.uniform_(self.A)
class LKaimingDefault(LoRALinear):     # valid: kaiming_uniform_ without a=sqrt(5)
    def __init__(self, base, r=8, alpha=16, dropout=0.):
        super().__init__(base, r, alpha, dropout); nn.init.kaiming_uniform_(self.A)

def al_endswith(model, targets, r=8, alpha=16, dropout=0.):   # n.endswith(t) without the dot: 'heads' matches 'unifyheads'
    model.requires_grad_(False)
    names = [n for n, m in model.named_modules() if isinstance(m, nn.Linear) and any(n.endswith(t) for t in targets)]
    if not names: raise ValueError(f"targets: nothing is named {targets}")
    for n in names: model.set_submodule(n, LoRALinear(model.get_submodule(n), r, alpha, dropout))
    return model
def al_train_mode(model, targets, r=8, alpha=16, dropout=0.): return add_lora(model, targets, r, alpha, dropout).train()   # valid

def test_audit_parameters_and_names():
    for ok in (LKaimingDefault,): assert_check(check_lora_linear, ok)
    assert_check(check_add_lora, al_train_mode)
    assert_check(check_lora_linear, LoRALinear, [
        (LPlainTensors, "A is not among your layer's parameters"), (LParameterTo, "not among your layer's parameters around a base on"),
        (LRandA, 'all have one sign')])
    assert_check(check_add_lora, add_lora, [(al_endswith, "'unifyheads' ends with 'heads' but is not named by it")])
