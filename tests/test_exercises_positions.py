"Each check in lesson 04 accepts the solution and rejects the stub and the typical wrong answers with the right hint."
import math, pytest, torch
from transformers_scratch.checks.toolkit import assert_check
from transformers_scratch.positions import sinusoidal_encoding, sinusoidal_shift, positions_from_pad
from transformers_scratch.checks.positions import check_sinusoidal_encoding, check_positions_from_pad
from conftest import stub


pytestmark = pytest.mark.usefixtures('one_thread')


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
def pe_double(t, e): return sinusoidal_encoding(t, e).double()     # not the embeddings' float32

def test_check_sinusoidal_encoding():
    assert_check(check_sinusoidal_encoding, sinusoidal_encoding, [
        (stub, 'not solved'), (pe_swapped, 'swapped'), (pe_dim_index, 'dim index'), (pe_no_two, 'you used i/e'),
        (pe_no_e, 'divide the exponent by e'), (pe_base_1000, 'base is 10000, you used 1000'), (pe_multiply, 'multiplied'),
        (pe_from_1, 'start at 0'), (pe_transposed, 'transposed'), (pe_transposed_formula, 'transposed'),
        (pe_halves, 'interleave'), (pe_even_only, 'odd e'), (pe_double, 'float32.*got float64')])


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


# --- new wrong answers (issue 11): hard-coded sizes, batch of one, dtype, ignored dims ------------------------------
def pe_hard_e16(t, e):                                 # frequencies for e=16 whatever e is
    pos, freq = torch.arange(t)[:, None].float(), 10000 ** (-torch.arange(0, 16, 2) / 16)
    pe = torch.zeros(t, e); pe[:, 0::2] = torch.sin(pos * freq); pe[:, 1::2] = torch.cos(pos * freq)
    return pe
def pe_range4(t, e):                                   # a Python loop over 4 pairs, written for e=8
    pe = torch.zeros(t, e)
    for i in range(4):
        if 2 * i < e: pe[:, 2 * i] = torch.sin(torch.arange(t) / 10000 ** (2 * i / e))
        if 2 * i + 1 < e: pe[:, 2 * i + 1] = torch.cos(torch.arange(t) / 10000 ** (2 * i / e))
    return pe
def pe_squeeze(t, e): return sinusoidal_encoding(t, e).squeeze()
def pe_odd_last_zero(t, e):                            # e // 2 frequencies: for odd e the last dim stays 0
    pos, freq = torch.arange(t)[:, None].float(), 10000 ** (-torch.arange(0, e - 1, 2) / e)
    pe = torch.zeros(t, e); pe[:, 0:e - 1:2] = torch.sin(pos * freq); pe[:, 1::2] = torch.cos(pos * freq)
    return pe
def pe_odd_e_minus_1(t, e):                            # divides by e - 1 for odd e ("make it even")
    return _pe(t, e, lambda j: 10000 ** (-2 * (j // 2) / (e - e % 2)))
def pe_half(t, e): return sinusoidal_encoding(t, e).half()
def pe_long(t, e):
    pe = torch.zeros(t, e, dtype=torch.long); pe[:] = sinusoidal_encoding(t, e); return pe
def pe_first_50(t, e): return sinusoidal_encoding(50, e)[:t]   # a table of 50 rows
def pe_normalised_pos(t, e): return _pe(t, e, pair(e), start=0) if t < 2 else torch.where(
    (torch.arange(e) % 2 == 0), torch.sin(torch.arange(t)[:, None] / t * 10000 ** (-2 * (torch.arange(e) // 2) / e)),
    torch.cos(torch.arange(t)[:, None] / t * 10000 ** (-2 * (torch.arange(e) // 2) / e)))

def test_check_sinusoidal_encoding_issue11():
    assert_check(check_sinusoidal_encoding, sinusoidal_encoding, [
        (pe_hard_e16, 'hard-coded'), (pe_range4, 'fixed number of pairs'), (pe_squeeze, 'squeeze'), (pe_odd_last_zero, 'odd e'),
        (pe_odd_e_minus_1, 'odd e'), (pe_half, 'float32'), (pe_long, 'return floats'), (pe_first_50, 'hard-coded'),
        (pe_normalised_pos, 'dims 0 and 1 should be sin\(p\)')])


def pp_squeeze(m):      return (m.squeeze().long().cumsum(-1) - 1).clamp(min=0)
def pp_clamp_5(m):      return (m.long().cumsum(1) - 1).clamp(0, 5)                 # a fixed maximum
def pp_dim0(m):         return (m.long().cumsum(0) - 1).clamp(min=0)
def pp_inverted(m):     return ((~m).long().cumsum(1) - 1).clamp(min=0)             # True taken as "pad"
def pp_inplace(m):
    m[:, -1] = True                                    # "every row needs a real token"
    return (m.long().cumsum(1) - 1).clamp(min=0)
def pp_bool(m):         return m.long().cumsum(1) > 1
def pp_range2(m):                                      # a loop over the rows, written for a batch of 2
    out = torch.zeros_like(m, dtype=torch.long)
    for i in range(2): out[i] = (m[i].long().cumsum(0) - 1).clamp(min=0)
    return out
def pp_pad_index_t(m):  return torch.where(m, (m.long().cumsum(1) - 1).clamp(min=0), m.size(1))   # pads at index t
def pp_pad_minus1(m):   return torch.where(m, m.long().cumsum(1) - 1, -1)
def pp_hard_t(m):       return (torch.arange(6) - (~m).long().sum(1, keepdim=True)).clamp(min=0)
def pp_first_index(m):                                 # also right for front- and end-padded rows
    first = m.long().argmax(1, keepdim=True)
    return (torch.arange(m.size(1), device=m.device) - first).clamp(min=0)

def pp_first_index_cpu(m):                             # the arange is made on the CPU
    first = m.long().argmax(1, keepdim=True)
    return (torch.arange(m.size(1)) - first).clamp(min=0)

def test_check_positions_from_pad_device():   # issue 16
    assert_check(check_positions_from_pad, positions_from_pad, [(pp_first_index_cpu, "stay on the inputs' device")])

def test_check_positions_from_pad_issue11():
    assert_check(check_positions_from_pad, positions_from_pad, [
        (pp_squeeze, 'squeeze'), (pp_clamp_5, 'wrong positions'), (pp_dim0, 'down the batch'), (pp_inverted, 'counted the pads'),
        (pp_inplace, 'in place'), (pp_bool, 'integer'), (pp_range2, 'hard-coded|wrong positions'), (pp_pad_index_t, '>= t'),
        (pp_pad_minus1, 'negative'), (pp_hard_t, r'wrong positions|subtracted each row.s number of pads')])
    assert_check(check_positions_from_pad, pp_first_index)


# --- issue 31: more mistakes learners make, with the hint of their real cause, and valid answers in other styles ------
def pe_int_div(t, e): return _pe(t, e, lambda j: 10000. ** (-(2 * (j // 2) // e)))           # exponent 0: every frequency 1
def pe_linspace(t, e):                                                                      # exponents 0 .. 1 inclusive
    ex = torch.linspace(0, 1, e // 2 + e % 2).repeat_interleave(2)[:e]
    return _pe(t, e, lambda j: 10000. ** (-ex))
def pe_fp16(t, e): return _pe(t, e, pair(e)).half().float()                                   # computed in half precision
def pe_both_full(t, e):                                                                     # a sine and a cosine for every dim
    ang = torch.arange(t)[:, None] * 10000 ** (-torch.arange(e) / e)
    return torch.cat([ang.sin(), ang.cos()], 1)
def pe_only_sines(t, e): return sinusoidal_encoding(t, e)[:, 0::2]
def pe_extra_row(t, e): return _pe(t + 1, e, pair(e))
def pe_e_hard_8(t, e): return _pe(t, e, lambda j: 10000 ** (-2 * (j // 2) / 8))
def pe_cos_at_0(t, e): return _pe(t, e, pair(e), start=0) + torch.where(torch.arange(e) % 2 == 0, 1., 0.)   # sin + 1

def test_check_sinusoidal_encoding_issue31():
    assert_check(check_sinusoidal_encoding, sinusoidal_encoding, [
        (pe_int_div, 'frequency 1.*integer division'), (pe_linspace, 'linspace'), (pe_fp16, 'half precision'),
        (pe_both_full, 'per \\*pair\\* of dims'), (pe_only_sines, 'share the e dims'), (pe_extra_row, 'one row per position'),
        (pe_e_hard_8, 'frequencies of e=8: e is hard-coded'), (pe_cos_at_0, 'row 0')])

def pe_exp_log(t, e):                                        # the Annotated Transformer's exp(-log(10000) 2i/e)
    pe = torch.zeros(t, e)
    pos = torch.arange(t).unsqueeze(1)
    div = torch.exp(torch.arange(0, e, 2) * (-math.log(10000.0) / e))
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div[:e // 2])
    return pe
def pe_polar(t, e):                                          # complex exponentials, float64 then float32
    w = 10000 ** (-torch.arange(0, e, 2, dtype=torch.float64) / e)
    z = torch.polar(torch.ones(t, len(w), dtype=torch.float64), torch.arange(t, dtype=torch.float64)[:, None] * w)
    return torch.view_as_real(z).flatten(1)[:, :e].float()  # (re, im) = (cos, sin): swap below
def pe_polar_swapped(t, e):
    w = 10000 ** (-torch.arange(0, e, 2, dtype=torch.float64) / e)
    ang = torch.arange(t, dtype=torch.float64)[:, None] * w
    return torch.stack([ang.sin(), ang.cos()], -1).flatten(1)[:, :e].float()
def pe_loops(t, e):
    return torch.tensor([[math.sin(p / 10000 ** (j / e)) if j % 2 == 0 else math.cos(p / 10000 ** ((j - 1) / e))
                          for j in range(e)] for p in range(t)], dtype=torch.float32).reshape(t, e)

def test_sinusoidal_valid_styles():
    for fn in (pe_exp_log, pe_polar_swapped, pe_loops, lambda t, e: sinusoidal_encoding(t, e).clone()):
        assert_check(check_sinusoidal_encoding, fn)
    assert_check(check_sinusoidal_encoding, sinusoidal_encoding, [(pe_polar, 'swapped')])

def pp_where(m):   return torch.where(m, m.long().cumsum(1) - 1, torch.zeros_like(m, dtype=torch.long))
def pp_loop(m):                                              # a loop over the rows with a running count
    out = torch.zeros(m.shape, dtype=torch.long, device=m.device)
    for i in range(m.size(0)):
        c = m[i].long().cumsum(0) - 1
        out[i] = c.clamp(min=0)
    return out
def pp_int32(m):   return (m.int().cumsum(1) - 1).clamp(min=0).long()

def test_positions_from_pad_valid_styles():
    for fn in (pp_where, pp_loop, pp_int32, pp_first_index, pp_pads_zero):
        assert_check(check_positions_from_pad, fn)

def pp_sub_pads(m): return (torch.arange(m.size(1), device=m.device) - (~m).sum(1, keepdim=True)).clamp(min=0)
def pp_bool_cumsum(m): return m.cumsum(1) - 1            # cumsum of the bool mask: pads in front go negative

def test_positions_from_pad_issue31():
    assert_check(check_positions_from_pad, positions_from_pad, [
        (pp_sub_pads, 'subtracted each row.s number of pads'), (pp_bool_cumsum, 'negative positions')])

# issue 31, second audit: the dtype the docstring names, and tensors made on the CPU in code that indexes by value
def pp_int32_out(m):    return (m.long().cumsum(1) - 1).clamp(min=0).int()        # int32 result
def pp_cpu_buffer(m):                                          # a zeros buffer made on the CPU, filled by a boolean index
    out = torch.zeros(m.shape, dtype=torch.long)
    out[m] = (m.long().cumsum(1) - 1)[m]
    return out
def pp_cpu_trip(m):                                            # the values go through .cpu() into a buffer on the mask's device
    out = torch.zeros_like(m, dtype=torch.long)
    out[m] = (m.long().cumsum(1) - 1)[m].cpu()
    return out
def pp_from_list(m):                                           # Python lists, no device
    return torch.tensor([[max(int(m[i, :j + 1].sum()) - 1, 0) for j in range(m.size(1))] for i in range(m.size(0))])
def pp_full_cpu(m):                                            # torch.where with a CPU-made fill tensor
    return torch.where(m, m.long().cumsum(1) - 1, torch.zeros(m.shape, dtype=torch.long))

def test_check_positions_from_pad_issue31():
    assert_check(check_positions_from_pad, positions_from_pad, [
        (pp_int32_out, r'torch.long.*int32'), (pp_cpu_buffer, r"device"),
        (pp_cpu_trip, r"device"), (pp_from_list, r"device"), (pp_full_cpu, r"mask's device|stay on")])

def pp_buffer_on_device(m):                                    # a buffer made on the mask's device, filled by a boolean index
    out = torch.zeros(m.shape, dtype=torch.long, device=m.device)
    out[m] = (m.long().cumsum(1) - 1)[m]
    return out
def pp_new_zeros(m):                                           # new_zeros, then index_put_ with nonzero indices
    out = m.new_zeros(m.shape, dtype=torch.long)
    return out.index_put_(tuple(m.nonzero().T), (m.long().cumsum(1) - 1)[m])
def pp_loop_device(m):                                         # a Python loop, the result made on the mask's device
    return torch.tensor([[max(int(m[i, :j + 1].sum()) - 1, 0) for j in range(m.size(1))] for i in range(m.size(0))],
                        device=m.device)

def test_positions_from_pad_valid_styles_issue31():
    for fn in (pp_buffer_on_device, pp_new_zeros, pp_loop_device):
        assert_check(check_positions_from_pad, fn)

def pp_arange_moved(m):                                        # an arange made on the CPU, then moved to the mask's device
    j = torch.arange(m.size(1)).to(m.device)
    first = torch.where(m, j, m.size(1)).amin(1, keepdim=True)
    return torch.where(m, m.long().cumsum(1) - 1, 0).clamp(min=0) + 0 * (j - first).clamp(min=0)
def pp_arange_to_cpu(m):                                       # the same, sent to 'cpu' by name: wrong on a GPU
    j = torch.arange(m.size(1)).to('cpu')
    return (m.long().cumsum(1) - 1).clamp(min=0) + 0 * j

def test_positions_from_pad_moved_tensors():
    assert_check(check_positions_from_pad, pp_arange_moved)
    assert_check(check_positions_from_pad, positions_from_pad, [(pp_arange_to_cpu, r"device")])


# third audit: a learnable table (nn.Parameter, requires_grad_()) is not the fixed encoding
def test_audit3_table_is_fixed():
    assert_check(check_sinusoidal_encoding, sinusoidal_encoding, [
        (lambda t, e: torch.nn.Parameter(sinusoidal_encoding(t, e)), r'fixed, not learned'),
        (lambda t, e: sinusoidal_encoding(t, e).requires_grad_(), r'fixed, not learned')])
