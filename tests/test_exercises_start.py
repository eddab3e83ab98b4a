"The start page's example check: it passes the solution and rejects the stub and the typical mistakes."
from transformers_scratch.core import assert_check
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
