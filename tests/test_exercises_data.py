"Lesson 10's check accepts the solution and other valid styles, and rejects the stub and the typical wrong answers with the right hint."
import hashlib, mmap, subprocess, zlib
from functools import partial
from pathlib import Path
import pytest
from transformers_scratch.checks.toolkit import assert_check
from transformers_scratch.data import file_sha256
from transformers_scratch.checks.data import check_file_sha256
from conftest import stub

# --- valid answers, in other styles ---------------------------------------------------------------------------------
def whole_file(path): return hashlib.sha256(Path(path).read_bytes()).hexdigest()
def file_digest(path):
    with open(path, 'rb') as f: return hashlib.file_digest(f, 'sha256').hexdigest()
def iter_partial(path):
    h = hashlib.new('sha256')
    with open(path, 'rb') as f:
        for chunk in iter(partial(f.read, 4096), b''): h.update(chunk)
    return h.hexdigest()
def with_mmap(path):
    with open(path, 'rb') as f:
        if Path(path).stat().st_size == 0: return hashlib.sha256(b'').hexdigest()
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m: return hashlib.sha256(m).hexdigest()
def sha256sum(path):
    return subprocess.run(['sha256sum', str(path)], capture_output=True, text=True, check=True).stdout.split()[0]
def readinto(path):
    h, buf = hashlib.sha256(), bytearray(1000)
    with open(path, 'rb', buffering=0) as f:
        while n := f.readinto(buf): h.update(buf[:n])
    return h.hexdigest()

@pytest.mark.parametrize('fn', [file_sha256, whole_file, file_digest, iter_partial, with_mmap, sha256sum, readinto])
def test_valid_answers_pass(fn): assert_check(check_file_sha256, fn)

# --- wrong answers --------------------------------------------------------------------------------------------------
def text_mode(path):
    with open(path, encoding='utf-8') as f: return hashlib.sha256(f.read().encode()).hexdigest()
def text_latin1(path):                       # no crash on bytes: still universal newlines
    with open(path, encoding='latin-1') as f: return hashlib.sha256(f.read().encode('latin-1')).hexdigest()
def the_name(path): return hashlib.sha256(str(path).encode()).hexdigest()
def md5(path): return hashlib.md5(Path(path).read_bytes()).hexdigest()
def sha1(path): return hashlib.sha1(Path(path).read_bytes()).hexdigest()
def sha512(path): return hashlib.sha512(Path(path).read_bytes()).hexdigest()
def raw_digest(path): return hashlib.sha256(Path(path).read_bytes()).digest()
def the_object(path): return hashlib.sha256(Path(path).read_bytes())
def upper(path): return file_sha256(path).upper()
def with_name(path): return f"{file_sha256(path)}  {path}"
def with_newline(path): return file_sha256(path) + '\n'
def first_chunk(path):
    with open(path, 'rb') as f: return hashlib.sha256(f.read(65536)).hexdigest()
def last_chunk(path):
    with open(path, 'rb') as f:
        h = hashlib.sha256()
        while chunk := f.read(8192): h = hashlib.sha256(chunk)
    return h.hexdigest()
def short_chunk_dropped(path):
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        while len(chunk := f.read(4096)) == 4096: h.update(chunk)
    return h.hexdigest()
def short_chunk_dropped_big(path):           # small files are hashed whole: only the big ones lose their tail
    data = Path(path).read_bytes()
    return hashlib.sha256(data if len(data) < 4096 else data[:len(data) // 4096 * 4096]).hexdigest()
def path_only(path): return hashlib.sha256(path.read_bytes()).hexdigest()     # a str has no read_bytes
def truncates(path):
    data = Path(path).read_bytes()
    open(path, 'w').close()                 # 'w' empties the file
    return hashlib.sha256(data).hexdigest()
def crc32(path): return f"{zlib.crc32(Path(path).read_bytes()):08x}"
def no_file(path): return None
def empty_skipped(path):
    data = Path(path).read_bytes()
    return hashlib.sha256(data).hexdigest() if data else ''
def chunks_hexed(path):                    # the hash of each chunk's digest, a Merkle-like mix-up
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        while chunk := f.read(65536): h.update(hashlib.sha256(chunk).digest())
    return h.hexdigest()

def truncated(path): return file_sha256(path)[:32]
def base64_digest(path):
    import base64
    return base64.b64encode(hashlib.sha256(Path(path).read_bytes()).digest()).decode()
def as_int(path): return int(file_sha256(path), 16)
def text_no_newline_translation(path):       # newline='' keeps \r\n, but bytes that are not UTF-8 still crash
    with open(path, newline='', encoding='utf-8') as f: return hashlib.sha256(f.read().encode()).hexdigest()

WRONGS = [(stub, 'not solved'), (text_mode, r"not UTF-8|read as text"), (text_latin1, r'\\r\\n into \\n.*binary'),
          (the_name, "file's name"), (md5, 'MD5, not SHA-256'), (sha1, 'SHA1, not SHA-256'), (sha512, 'SHA512'),
          (raw_digest, r'hexdigest\(\): digest\(\)'), (the_object, 'not the hash object'), (upper, 'lower case'),
          (with_name, '64 hexadecimal characters alone'), (with_newline, 'alone'), (first_chunk, 'only the first 65,536 bytes'),
          (last_chunk, 'only the last chunk'), (short_chunk_dropped, r'no bytes at all.*shorter than asked'), (short_chunk_dropped_big, r'last, shorter chunk .* dropped'),
          (path_only, 'str or a Path'), (truncates, 'changed the file'), (crc32, 'you returned 8 characters'), (no_file, 'got NoneType'),
          (empty_skipped, 'an empty file'), (chunks_hexed, 'not the SHA-256 of its bytes'),
          (truncated, 'returned 32 characters.*has 64'), (base64_digest, 'digest in base64'), (as_int, 'got int'), (text_no_newline_translation, 'not UTF-8 text')]

def test_wrong_answers_are_named(): assert_check(check_file_sha256, file_sha256, WRONGS)

# --- the learner's answer carries the lesson on ------------------------------------------------------------------------
ANSWER = '''
def my_file_sha256(path):
    CALLS['file_sha256'] = CALLS.get('file_sha256', 0) + 1
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for chunk in iter(lambda: f.read(1 << 15), b''): h.update(chunk)
    return h.hexdigest()
'''

def test_the_lesson_goes_on_with_the_learners_answer(tmp_path):
    "The learner's edition with the exercise answered: once the check passes, the lesson checks tiny Shakespeare with it"
    from learner_run import run_answered
    seen = run_answered(tmp_path, '10_data.ipynb', {'my_file_sha256': ANSWER})
    assert seen['end']['file_sha256'] > seen['after check']['file_sha256'], seen


# third audit: one read of a megabyte (right for every file up to 1 MB), a hash object kept between calls, the bare name
def one_read_mib(path):
    with open(path, 'rb') as f: return hashlib.sha256(f.read(1 << 20)).hexdigest()
def one_read_mb(path):
    with open(path, 'rb') as f: return hashlib.sha256(f.read(10**6)).hexdigest()
_KEPT = hashlib.sha256()
def kept_between_calls(path):                # a module-level hash object: the files before are in every digest
    _KEPT.update(Path(path).read_bytes())
    return _KEPT.copy().hexdigest()
def bare_name(path): return hashlib.sha256(Path(path).name.encode()).hexdigest()

def test_audit3_wrongs():
    assert_check(check_file_sha256, file_sha256, [
        (one_read_mib, r'only the first 1,048,576 bytes'), (one_read_mb, r'only the first 1,000,000 bytes'),
        (kept_between_calls, r'hashed together with the files before it'), (bare_name, r"hashed the file's name")])
