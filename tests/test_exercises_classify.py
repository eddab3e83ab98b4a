"Lesson 11's check accepts the pooling over real tokens and rejects the stub and each typical mistake with its own hint."
import ast, inspect, json, pathlib
import torch
import pytest
from transformers_scratch.core import assert_check
from transformers_scratch.models import masked_mean
from transformers_scratch.checks.classify import check_masked_mean
from conftest import stub

pytestmark = pytest.mark.usefixtures('one_thread')   # tiny tensors: one thread is faster
ROOT = pathlib.Path(__file__).resolve().parents[1]


def over_padding(h, m): return h.mean(1)
def by_length(h, m): return (h * m[..., None]).sum(1) / h.size(1)
def masked_then_mean(h, m): return (h * m[..., None]).mean(1)
def not_divided(h, m): return (h * m[..., None]).sum(1)
def batch_count(h, m): return (h * m[..., None]).sum(1) / m.sum()
def first_row_count(h, m): return (h * m[..., None]).sum(1) / m[0].sum()
def pads_averaged(h, m): return masked_mean(h, ~m)
def max_pool(h, m): return h.masked_fill(~m[..., None], float('-inf')).max(1)[0].nan_to_num(0.)
def minus_one(h, m): return (h * m[..., None]).sum(1) / (m.sum(1, keepdim=True) - 1).clamp(min=1)
def nan_when_empty(h, m): return (h * m[..., None]).sum(1) / m.sum(1, keepdim=True)
def loop_rows(h, m): return torch.stack([h[i][m[i]].mean(0) for i in range(h.size(0))])   # NaN for a row of pads
def wrong_dim(h, m): return (h * m[..., None]).mean(2)
def keepdim(h, m): return (h * m[..., None]).sum(1, keepdim=True) / m.sum(1)[:, None, None].clamp(min=1)
def count_no_keepdim(h, m): return (h * m[..., None]).sum(1) / m.sum(1).clamp(min=1)
def float_mask(h, m): return (h * m[..., None].float()).sum(1) / m.sum(1, keepdim=True).clamp(min=1)
def zeroes_pads_in_place(h, m):
    h[~m] = 0
    return h.sum(1) / m.sum(1, keepdim=True).clamp(min=1)
def squeezed(h, m): return masked_mean(h, m).squeeze()
def count_on_cpu(h, m):
    n = torch.tensor(m.sum(1, keepdim=True).clamp(min=1).tolist(), dtype=h.dtype)
    return (h * m[..., None]).sum(1) / n

def test_check_masked_mean():
    assert_check(check_masked_mean, masked_mean, [
        (stub, 'not solved'),
        (over_padding, 'over the padding too'),
        (by_length, 'divided by the length t'),
        (masked_then_mean, 'divided by the length t'),
        (not_divided, 'without dividing'),
        (batch_count, 'whole batch'),
        (first_row_count, "first row's count"),
        (pads_averaged, 'averaged the pads'),
        (max_pool, 'maximum'),
        (minus_one, 'one less'),
        (nan_when_empty, 'NaN'),
        (loop_rows, 'NaN'),
        (wrong_dim, 'dim 2'),
        (keepdim, 'no dim of size 1'),
        (count_no_keepdim, r'keepdim=True'),
        (float_mask, 'dtype'),
        (zeroes_pads_in_place, 'changed its input'),
        (squeezed, 'batch dim of a batch of one is gone'),
        (count_on_cpu, "device"),
    ])

def test_lesson_solution_is_the_library_function():
    "Lesson 11 shows the solution that lesson 06 exports (the classifier's pooling): the same code"
    cells = [''.join(c['source']) for c in json.loads((ROOT/'nbs'/'11_classify.ipynb').read_text(encoding='utf-8'))['cells']]
    sol = next(s for s in cells if s.lstrip().startswith('# @title Solution: masked_mean'))
    fn = next(n for n in ast.parse(sol).body if isinstance(n, ast.FunctionDef))
    assert ast.dump(fn) == ast.dump(ast.parse(inspect.getsource(masked_mean)).body[0])
