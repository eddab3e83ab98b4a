"Each check in lesson 04 accepts the solution and rejects the stub and the typical wrong answers with the right hint."
import math, torch
from transformers_scratch.core import TODO, assert_check
from transformers_scratch.positions import *


def stub(*args, **kwargs): raise TODO("not yet")


# --- sinusoidal_encoding -------------------------------------------------------------------------------------------
def _pe(t, e, freq_of_dim, swap=False, start=0):
    "Vectorised PE with a per-dim frequency, as a learner might write it"
    pos = torch.arange(start, start + t, dtype=torch.float32)[:, None]
    ang = pos * freq_of_dim(torch.arange(e, dtype=torch.float32))         # (t, e)
    even = (torch.arange(e) % 2 == 0) != swap
    return torch.where(even, torch.sin(ang), torch.cos(ang))

pair = lambda e: (lambda j: 10000 ** (-2 * (j // 2) / e))
def pe_swapped(t, e):   return _pe(t, e, pair(e), swap=True)
def pe_dim_index(t, e): return _pe(t, e, lambda j: 10000 ** (-j / e))
def pe_no_two(t, e):    return _pe(t, e, lambda j: 10000 ** (-(j // 2) / e))
def pe_no_e(t, e):      return _pe(t, e, lambda j: 10000. ** (-2 * (j // 2)))
def pe_base_1000(t, e): return _pe(t, e, lambda j: 1000 ** (-2 * (j // 2) / e))
def pe_multiply(t, e):  return _pe(t, e, lambda j: 10000 ** (2 * (j // 2) / e))
def pe_from_1(t, e):    return _pe(t, e, pair(e), start=1)
def pe_transposed(t, e): return sinusoidal_encoding(t, e).T
def pe_transposed_formula(t, e):                       # positions and dims swapped in the formula itself
    return torch.tensor([[(math.sin if p % 2 == 0 else math.cos)(j / 10000 ** (2 * (p // 2) / t)) for j in range(e)]
                         for p in range(t)])
def pe_halves(t, e):
    pe = sinusoidal_encoding(t, e)
    return torch.cat([pe[:, 0::2], pe[:, 1::2]], 1)
def pe_even_only(t, e):                                # breaks for odd e
    pos, freq = torch.arange(t)[:, None].float(), 10000 ** (-torch.arange(0, e, 2) / e)
    return torch.stack([torch.sin(pos * freq), torch.cos(pos * freq)], -1).view(t, e)
def pe_double(t, e): return sinusoidal_encoding(t, e).double()     # another float dtype is fine

def test_check_sinusoidal_encoding():
    assert_check(check_sinusoidal_encoding, sinusoidal_encoding, [
        (stub, 'not solved'), (pe_swapped, 'swapped'), (pe_dim_index, 'dim index'), (pe_no_two, 'you used i/e'),
        (pe_no_e, 'divide the exponent by e'), (pe_base_1000, 'base is 10000, you used 1000'), (pe_multiply, 'multiplied'),
        (pe_from_1, 'start at 0'), (pe_transposed, 'transposed'), (pe_transposed_formula, 'transposed'),
        (pe_halves, 'interleave'), (pe_even_only, 'odd e')])
    assert_check(check_sinusoidal_encoding, pe_double)


# --- positions_from_pad --------------------------------------------------------------------------------------------
def pp_row_start(m):  return torch.arange(m.size(1)).expand_as(m).clone()
def pp_from_1(m):     return m.long().cumsum(1)
def pp_negative(m):   return m.long().cumsum(1) - 1
def pp_float(m):      return (m.float().cumsum(1) - 1).clamp(min=0)
def pp_pads_zero(m):  return (m.long().cumsum(1) - 1).clamp(min=0) * m         # also fine: pads at 0
def pp_reversed(m):   return (m.long().flip(1).cumsum(1) - 1).clamp(min=0).flip(1)

def test_check_positions_from_pad():
    assert_check(check_positions_from_pad, positions_from_pad, [
        (stub, 'not solved'), (pp_row_start, 'start of the row'), (pp_from_1, 'started at 1'),
        (pp_negative, 'negative'), (pp_float, 'integer'), (pp_reversed, 'wrong positions')])
    assert_check(check_positions_from_pad, pp_pads_zero)


def test_sinusoidal_shift_any_offset():
    pe = sinusoidal_encoding(300, 32)
    for k in (0, 1, 100, -50):
        lo, hi = max(0, -k), min(300, 300 - k)
        assert torch.allclose(pe[lo + k:hi + k], pe[lo:hi] @ sinusoidal_shift(k, 32).T, atol=1e-4)
