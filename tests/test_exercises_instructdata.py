"Lesson 51's check accepts the solution and valid answers in other styles, and rejects the stub and each typical mistake with its own hint."
import hashlib, random, zlib
import numpy as np
from transformers_scratch.checks.toolkit import assert_check
from transformers_scratch.instructdata import held_out
from transformers_scratch.checks.instructdata import check_held_out
from conftest import stub

def _text(key): return '+'.join(map(str, sorted(key))) if isinstance(key, tuple) else key

# --- valid answers in other styles -----------------------------------------------------------------------------------
def ho_sha256(key, share=10): return int(hashlib.sha256(_text(key).encode()).hexdigest(), 16) % share == 0
def ho_crc32(key, share=10): return zlib.crc32(_text(key).encode()) % share == 0
def ho_sorted_str(key, share=10):                            # a pair as a sorted list's repr, md5's bytes as a big-endian int
    k = str(sorted(key)) if not isinstance(key, str) else key
    return int.from_bytes(hashlib.md5(k.encode()).digest(), 'big') % share == 0
def ho_numpy(key, share=10):                                 # a numpy bool
    return np.bool_(int(hashlib.blake2b(_text(key).encode(), digest_size=8).hexdigest(), 16) % share == 0)
def ho_not(key, share=10): return not int(hashlib.sha1(_text(key).encode()).hexdigest(), 16) % share

# --- wrong answers ---------------------------------------------------------------------------------------------------
def ho_random(key, share=10): return random.random() < 1 / share
def ho_hash(key, share=10): return hash(_text(key)) % share == 0
def ho_abs_hash(key, share=10): return abs(hash(_text(key))) % share == 0
def ho_ordered(key, share=10): return int(hashlib.md5(str(key).encode()).hexdigest(), 16) % share == 0
def ho_inverted(key, share=10): return int(hashlib.md5(_text(key).encode()).hexdigest(), 16) % share != 0
def ho_fixed_ten(key, share=10): return int(hashlib.md5(_text(key).encode()).hexdigest(), 16) % 10 == 0
def ho_number(key, share=10): return int(hashlib.md5(_text(key).encode()).hexdigest(), 16) % share
def ho_string(key, share=10): return 'valid' if held_out(key, share) else 'train'
def ho_words_only(key, share=10): return int(hashlib.md5(key.encode()).hexdigest(), 16) % share == 0     # str.encode on a pair
def ho_none(key, share=10): return False
def ho_all(key, share=10): return True
def ho_half(key, share=10): return int(hashlib.md5(_text(key).encode()).hexdigest(), 16) % 2 == 0
def ho_length(key, share=10): return len(_text(key)) % share == 0           # a word of 10 letters; every pair or none
def ho_tensor(key, share=10):
    import torch
    return torch.tensor(held_out(key, share))

def test_held_out():
    for ok in (held_out, ho_sha256, ho_crc32, ho_sorted_str, ho_numpy, ho_not): assert_check(check_held_out, ok)
    assert_check(check_held_out, held_out, [
        (stub, 'not solved'),
        (ho_random, 'random draw'),
        (ho_hash, r"Python's hash\(\)"),
        (ho_abs_hash, r"Python's hash\(\)"),
        (ho_ordered, 'change side once swapped'),
        (ho_inverted, 'nine in ten'),
        (ho_fixed_ten, 'with share=4'),
        (ho_number, 'got the number'),
        (ho_string, 'return True or False, got str'),
        (ho_words_only, 'a pair of numbers is a key too'),
        (ho_none, 'no word is held out'),
        (ho_all, 'every word is held out'),
        (ho_half, 'expected about one in share=10'),
        (ho_length, 'expected about one in share=10'),
        (ho_tensor, 'return True or False, got Tensor'),
    ])


# --- a key that is not the whole word or both numbers; share ignored for pairs --------------------------------------
def _md5(s): return int(hashlib.md5(s.encode()).hexdigest(), 16)
def ho_sum(key, share=10): return _md5(str(sum(key)) if isinstance(key, tuple) else key) % share == 0     # (47, 38) one with (40, 45)
def ho_min(key, share=10): return _md5(str(min(key)) if isinstance(key, tuple) else key) % share == 0     # a whole row of the table
def ho_max(key, share=10): return _md5(str(max(key)) if isinstance(key, tuple) else key) % share == 0
def ho_prefix(key, share=10): return zlib.crc32((_text(key) if isinstance(key, tuple) else key[:2]).encode()) % share == 0
def ho_pair_ten(key, share=10): return _md5(_text(key)) % (10 if isinstance(key, tuple) else share) == 0
def ho_seeded_random(key, share=10): return random.Random(_text(key)).random() < 1 / share   # seeded by the key's text: fine

def test_held_out_keys_on_the_whole_key():
    assert_check(check_held_out, ho_seeded_random)
    assert_check(check_held_out, held_out, [
        (ho_sum, 'follows from its sum alone'), (ho_min, 'follows from its smaller number alone'),
        (ho_max, 'follows from its larger number alone'), (ho_prefix, 'follows from its first letters alone'),
        (ho_pair_ten, 'share for pairs too')])
