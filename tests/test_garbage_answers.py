"""No check crashes, whatever the learner's answer returns (issue 31).

Every `check_*` of every checks module (found by listing them, so a check is covered the day it is written) is fed a
catalogue of garbage: functions, module instances and `nn.Module` classes that return a tuple, a list, a dict, None, a
number, a string, numpy, a tensor of the wrong shape, dtype or device, NaNs, the input itself, a non-contiguous view, an
input modified in place, or that raise. Under `TFS_CHECKS=raise` each must be refused with a `CheckError` (a one-line
diagnosis), never another exception (a crash of the check's own code) and never accepted. Under the learner's settings
(`TFS_CHECKS` unset) a check prints exactly one ✗ or ○ line and returns, and that line is the check's own diagnosis,
not the safety net's "could not read" line."""
import contextlib, importlib, io, pathlib
import pytest, torch, torch.nn as nn
from transformers_scratch.checks.toolkit import CheckError

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODULES = sorted(f.stem for f in (ROOT/'transformers_scratch'/'checks').glob('*.py') if f.stem not in ('__init__', 'toolkit'))   # toolkit: the checks' helpers, no checks of its own

def _checks():
    out = []
    for m in MODULES:
        mod = importlib.import_module(f'transformers_scratch.checks.{m}')
        out += [(m, k) for k, v in vars(mod).items()
                if k.startswith('check_') and callable(v) and getattr(v, '__module__', '') == mod.__name__]
    return out

CHECKS = _checks()

def _first_tensor(args):
    "The first tensor among `args` (looking into lists, tuples and dicts), or a small float tensor"
    todo = list(args)
    while todo:
        a = todo.pop(0)
        if isinstance(a, torch.Tensor): return a
        if isinstance(a, (list, tuple)): todo += list(a)
        elif isinstance(a, dict): todo += list(a.values())
    return torch.zeros(2, 3)

class Weird(Exception): "An exception no check knows by name"

def _raise(e): raise e

def _in_place(x):
    with torch.no_grad(): return x.mul_(2) if x.is_floating_point() else x.add_(1)

# what a wrong answer returns, from the first tensor `x` among its arguments
RETURNS = {
    'a tuple (out, loss)': lambda x: (x, x.float().sum()),
    'a list': lambda x: [x],
    'a dict': lambda x: {'logits': x},
    'None': lambda x: None,
    'a float': lambda x: 0.5,
    'an int': lambda x: 3,
    'a string': lambda x: 'oops',
    'an object': lambda x: object(),
    'a numpy array': lambda x: x.detach().cpu().numpy(),
    'a module': lambda x: nn.Linear(2, 2),
    'a 0-dim tensor': lambda x: x.float().sum(),
    'a flattened tensor': lambda x: x.reshape(-1),
    'an extra dim': lambda x: x.unsqueeze(0),
    'the last dim halved': lambda x: x[..., : max(1, x.shape[-1] // 2)] if x.dim() else x,
    'fp16': lambda x: x.half(),
    'float64': lambda x: x.double(),
    'ints': lambda x: x.long(),
    'bools': lambda x: x.bool(),
    'on meta': lambda x: torch.empty(x.shape, dtype=x.dtype, device='meta'),
    'NaNs': lambda x: torch.full(x.shape, float('nan')),
    'zeros': lambda x: torch.zeros(x.shape, dtype=x.dtype, device=x.device),
    'the input': lambda x: x,
    'a non-contiguous view of the input': lambda x: x.transpose(0, -1).contiguous().transpose(0, -1) if x.dim() > 1 else x[::1],
    'the input changed in place': _in_place,
    'ValueError': lambda x: _raise(ValueError('bad value')),
    'RuntimeError': lambda x: _raise(RuntimeError('shape mismatch')),
    'KeyError': lambda x: _raise(KeyError('k')),
    'IndexError': lambda x: _raise(IndexError('index 5 is out of bounds')),
    'AssertionError': lambda x: _raise(AssertionError('my own assert')),
    'an exception of its own': lambda x: _raise(Weird('weird')),
}

def _function(ret):
    def answer(*args, **kwargs): return ret(_first_tensor((args, kwargs)))
    return answer

def _module_class(ret):
    class Answer(nn.Module):
        def __init__(self, *args, **kwargs):
            super().__init__()
            self.proj = nn.Linear(3, 3)
        def forward(self, *args, **kwargs): return ret(_first_tensor((args, kwargs)))
    return Answer

def _answers():
    "(label, answer): each garbage return as a function, a module class and a module instance, and modules for functions"
    out = []
    for what, ret in RETURNS.items():
        out += [(f"a function returning {what}", _function(ret)), (f"an nn.Module class returning {what}", _module_class(ret))]
    out += [(f"an instance returning {w}", _module_class(RETURNS[w])()) for w in ('a tuple (out, loss)', 'None', 'the input', 'ValueError')]
    out += [('nn.Identity()', nn.Identity()), ('nn.Linear(4, 4)', nn.Linear(4, 4)), ('the class nn.Linear', nn.Linear),
            ('a lambda of no arguments', lambda: None), ('None itself', None), ('an int itself', 3)]
    return out

ANSWERS = _answers()

def _check(m, name): return getattr(importlib.import_module(f'transformers_scratch.checks.{m}'), name)

# the library's own answer, with its result spoiled at the very end: these reach the check's later reading of the output
# (a right model that returns (logits, loss) as nanoGPT's does, a right function that returns numpy...)
WRONG_AT_THE_END = ['a tuple (out, loss)', 'a list', 'a dict', 'None', 'a float', 'a string', 'a numpy array', 'on meta',
                    'NaNs', 'an extra dim', 'a flattened tensor', 'zeros', 'fp16', 'float64', 'ints']
ALSO_AT_THE_END = ['a non-contiguous view of the input', 'a 0-dim tensor', 'the last dim halved', 'bools']

def _spoiled(sol):
    "(label, answer, must_refuse) for the library's `sol` (a function or an nn.Module class) with its result spoiled"
    out = []
    for w in WRONG_AT_THE_END + ALSO_AT_THE_END:
        ret, seen = RETURNS[w], {}
        def spoil(res, ret=ret, seen=seen):
            out = ret(_first_tensor((res,)))
            kept = (isinstance(res, torch.Tensor) and isinstance(out, torch.Tensor) and res.device == out.device and
                    res.dtype == out.dtype and res.shape == out.shape and torch.equal(res.detach().cpu(), out.detach().cpu()))
            seen['changed'] = seen.get('changed', True) and isinstance(res, torch.Tensor) and not kept
            return out
        if isinstance(sol, type) and issubclass(sol, nn.Module):
            ans = type(sol.__name__, (sol,), {'forward': lambda self, *a, spoil=spoil, **k: spoil(sol.forward(self, *a, **k))})
        else:
            def ans(*a, spoil=spoil, **k): return spoil(sol(*a, **k))
            ans.__name__ = getattr(sol, '__name__', 'answer')
        out.append((f"the library's answer returning {w}", ans, w in WRONG_AT_THE_END, seen))
    return out

@pytest.mark.parametrize('m,name', CHECKS, ids=[f"{m}.{n}" for m, n in CHECKS])
def test_a_right_answer_spoiled_at_the_end_is_diagnosed(m, name, one_thread):
    "The library's answer returning a tuple, numpy, None... at the end: a CheckError, never a crash; refused where that changed its tensor"
    from transformers_scratch.checks.toolkit import _resolve
    check = _check(m, name)
    sol, bad = _resolve(check.solution), []
    if sol is None: pytest.skip(f"{name} names no library solution")
    for label, ans, refuse, seen in _spoiled(sol):
        torch.manual_seed(0)
        try:
            with contextlib.redirect_stdout(io.StringIO()): check(ans)
        except CheckError: continue
        except Exception as e: bad.append(f"{label}: the check crashed with {type(e).__name__}: {str(e)[:200]}")
        else:
            if refuse and seen.get('changed'): bad.append(f"{label}: accepted")
    assert not bad, f"{name} ({m}):\n  " + "\n  ".join(bad)

@pytest.mark.parametrize('m,name', CHECKS, ids=[f"{m}.{n}" for m, n in CHECKS])
def test_garbage_is_refused_with_a_checkerror(m, name, one_thread):
    "Under TFS_CHECKS=raise every garbage answer ends in a CheckError: no crash of the check's own code, no pass"
    check, bad = _check(m, name), []
    for label, ans in ANSWERS:
        torch.manual_seed(0)
        try:
            with contextlib.redirect_stdout(io.StringIO()): check(ans)
        except CheckError: continue
        except Exception as e: bad.append(f"{label}: the check crashed with {type(e).__name__}: {str(e)[:200]}")
        else: bad.append(f"{label}: accepted")
    assert not bad, f"{name} ({m}):\n  " + "\n  ".join(bad)

@pytest.mark.parametrize('m,name', CHECKS, ids=[f"{m}.{n}" for m, n in CHECKS])
def test_garbage_gets_one_line_in_a_notebook(m, name, one_thread, monkeypatch):
    "In a learner's notebook (TFS_CHECKS unset) a garbage answer gets exactly one ✗ line, the check's own diagnosis"
    monkeypatch.delenv('TFS_CHECKS', raising=False)
    check, bad = _check(m, name), []
    for label, ans in ANSWERS[::5] + [ANSWERS[0], ANSWERS[1]]:
        buf = io.StringIO()
        try:
            with contextlib.redirect_stdout(buf): check(ans)
        except Exception as e:
            bad.append(f"{label}: raised {type(e).__name__}: {str(e)[:200]}"); continue
        lines = [l for l in buf.getvalue().splitlines() if l.strip()]
        if len(lines) != 1 or not lines[0].startswith(('✗', '○')): bad.append(f"{label}: printed {lines!r}")
        elif 'could not read what your code returned' in lines[0]: bad.append(f"{label}: only the safety net caught it: {lines[0]}")
    assert not bad, f"{name} ({m}):\n  " + "\n  ".join(bad)

def test_every_checks_module_is_covered():
    "The listing finds the checks of every checks module (a module without checks would be a mistake of the listing)"
    assert {m for m, _ in CHECKS} == set(MODULES) - {'__init__'}
    assert len(CHECKS) >= 40
