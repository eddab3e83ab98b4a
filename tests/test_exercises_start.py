"The start page's example check: it passes the solution and rejects the stub and the typical mistakes."
import torch
from transformers_scratch.checks.toolkit import assert_check
from conftest import stub
from transformers_scratch.checks.start import check_double, double

def plus_two(x): return x + 2
def squared(x): return x * x
def float32(x): return (2 * x).float()
def inplace(x): return x.mul_(2)
def as_list(x): return [2 * v for v in x.tolist()]
def on_cpu(x): return 2 * x.cpu()

def test_check_double():
    assert_check(check_double, double, [(stub, 'not solved'), (plus_two, 'added 2'), (squared, 'squared'),
                                        (float32, 'dtype'), (inplace, 'in place'), (as_list, 'tensor'), (on_cpu, 'device')])

def times_float(x): return x * 2.0                 # turns an int tensor into floats
def plus_float(x): return x + x.float()            # the same, another way
def flattened(x): return (2 * x).flatten()
def valid_add(x): return x + x
def valid_mul(x): return torch.mul(x, 2)
def valid_shift(x): return x * torch.tensor(2, dtype=x.dtype)

def test_check_double_ints_and_shapes():
    "An int tensor must stay ints; a flattened result is named as such; other ways to double pass"
    assert_check(check_double, double, [(times_float, 'dtype'), (plus_float, 'dtype'), (flattened, 'flattened')])
    for ok in (valid_add, valid_mul, valid_shift): assert_check(check_double, ok)
