"Lesson 20a's checks accept the solution and reject the stub and each typical mistake with its own hint."
import pytest
from transformers_scratch.checks.toolkit import assert_check
from transformers_scratch.lmdata import lm_pair
from transformers_scratch.checks.lmdata import check_lm_pair
from conftest import stub

pytestmark = pytest.mark.usefixtures('one_thread')

def test_lm_pair():
    assert_check(check_lm_pair, lm_pair, [
        (stub, 'not solved'),
        (lambda ids, i, n: (ids[i:i + n], ids[i:i + n]), 'targets are the inputs'),
        (lambda ids, i, n: (ids[i:i + n], ids[i - 1:i + n - 1]), 'wrong way'),
        (lambda ids, i, n: (ids[i:i + n], ids[i + 1:i + n]), 'as many as the inputs'),          # one token short
        (lambda ids, i, n: (ids[i + 1:i + n + 1], ids[i:i + n]), 'swapped'),
        (lambda ids, i, n: (ids[i:i + n], ids[i + 2:i + n + 2]), r'y should be the window one token later'),
        (lambda ids, i, n: (ids[i + 1:i + n + 1], ids[i + 2:i + n + 2]), r'x should be the window|one token late'),
        (lambda ids, i, n: ids[i:i + n + 1], 'return a pair'),
        (lambda ids, i, n: (ids[i:i + n + 1], ids[i + 1:i + n + 2]), r"x should have seq_len|one too many"),
    ])
    assert_check(check_lm_pair, lambda ids, i, n: (ids[i:][:n], ids[i:][1:n + 1]))   # any right way passes


# --- new wrong answers (issue 11): next id instead of next token, ignored arguments, sizes, dtype, in place ---------
def lp_plus_one(ids, i, n): return ids[i:i + n], ids[i:i + n] + 1                 # "the next token is id + 1"
def lp_hard_8(ids, i, n): return ids[i:i + 8], ids[i + 1:i + 9]
def lp_from_0(ids, i, n): return ids[:n], ids[1:n + 1]                          # ignores i
def lp_i_times_n(ids, i, n): return ids[i * n:i * n + n], ids[i * n + 1:i * n + n + 1]
def lp_float(ids, i, n): return ids[i:i + n].float(), ids[i + 1:i + n + 1].float()
def lp_squeeze(ids, i, n): return ids[i:i + n].squeeze(), ids[i + 1:i + n + 1].squeeze()
def lp_inplace(ids, i, n):                                   # shifts a view of the caller's ids
    x, w = ids[i:i + n].clone(), ids[i:i + n + 1]
    w[:-1] = w[1:].clone()
    return x, w[:-1]
def lp_lists(ids, i, n): return ids[i:i + n].tolist(), ids[i + 1:i + n + 1].tolist()
def lp_x_short(ids, i, n): return ids[i:i + n - 1], ids[i + 1:i + n]
def lp_clone(ids, i, n): return ids[i:i + n].clone(), ids.roll(-1)[i:i + n]     # right: the last window never wraps

def test_lm_pair_issue11():
    assert_check(check_lm_pair, lm_pair, [
        (lp_plus_one, 'added 1'), (lp_hard_8, 'seq_len=5'), (lp_from_0, 'started at 0'), (lp_i_times_n, r'i \* seq_len'),
        (lp_float, 'dtype'), (lp_squeeze, 'squeeze'), (lp_inplace, 'in place'), (lp_lists, 'tensors'), (lp_x_short, 'seq_len=5')])
    assert_check(check_lm_pair, lp_clone)


# --- issue 31: valid styles, and more plausible slips ----------------------------------------------------------------
import torch
def lp_unfold(ids, i, n):                                   # valid: windows of n + 1, split
    w = ids.unfold(0, n + 1, 1)[i]
    return w[:-1], w[1:]
def lp_narrow(ids, i, n): return ids.narrow(0, i, n), ids.narrow(0, i + 1, n)   # valid
def lp_index(ids, i, n):                                    # valid: index with positions made where the ids are
    j = torch.arange(i, i + n, device=ids.device)
    return ids[j], ids[j + 1]

def test_lm_pair_valid_styles():
    for ok in (lp_unfold, lp_narrow, lp_index, lp_clone): assert_check(check_lm_pair, ok)

def lp_roll(ids, i, n): x = ids[i:i + n]; return x, x.roll(-1)                   # the last target wraps round
def lp_next_window(ids, i, n): return ids[i:i + n], ids[i + n:i + 2 * n]          # the next window, not the next token
def lp_stacked(ids, i, n): return torch.stack([ids[i:i + n], ids[i + 1:i + n + 1]])   # one (2, n) tensor
def lp_cpu_list(ids, i, n):                                 # through a Python list: a new tensor on the CPU
    w = ids.tolist()[i:i + n + 1]
    return torch.tensor(w[:-1]), torch.tensor(w[1:])

def test_lm_pair_issue31():
    assert_check(check_lm_pair, lm_pair, [
        (lp_roll, 'last target'), (lp_next_window, 'one token later'), (lp_stacked, 'pair'), (lp_cpu_list, 'device|made from a list')])


# issue 31, second audit: each wrong window gets its own cause, "hard-coded" only when the length is
def lp_early(ids, i, n): return ids[i - 1:i - 1 + n], ids[i:i + n]               # starts at i - 1
def lp_late(ids, i, n): return ids[i + 1:i + 1 + n], ids[i + 2:i + 2 + n]        # starts at i + 1
def lp_short(ids, i, n): return ids[i:i + n - 1], ids[i + 1:i + n]               # one token short
def lp_fixed(ids, i, n): return ids[i:i + 5], ids[i + 1:i + 6]                   # the first fixture's length, hard-coded
def lp_dict(ids, i, n): return dict(input_ids=ids[i:i + n], labels=ids[i:i + n])  # Hugging Face's convention

def test_lm_pair_causes():
    assert_check(check_lm_pair, lm_pair, [
        (lp_early, 'i - 1|one token early'), (lp_late, 'one token late|past its end'), (lp_short, 'one too few'),
        (lp_fixed, 'hard-coded'), (lp_dict, 'not a dict')])
    from transformers_scratch.checks.toolkit import CheckError
    with pytest.raises(CheckError) as e: check_lm_pair(lp_early)
    assert 'hard-coded' not in str(e.value)


def test_lm_pair_last_target():
    assert_check(check_lm_pair, lm_pair, [(lp_roll, 'last target')])


# the audit's round: int32 ids show a dtype that is not kept (int64 is also torch's default, so int64 ids hid it)
def lp_long(ids, i, n): return ids[i:i + n].long(), ids[i + 1:i + n + 1].long()
def lp_as_tensor(ids, i, n):                                # rebuilt from a list, on the right device but int64
    return (torch.as_tensor(ids[i:i + n].tolist(), device=ids.device), torch.as_tensor(ids[i + 1:i + n + 1].tolist(), device=ids.device))

def test_lm_pair_keeps_the_ids_dtype():
    assert_check(check_lm_pair, lm_pair, [(lp_long, 'dtype torch.int32.*int64'), (lp_as_tensor, 'made from a list')])
