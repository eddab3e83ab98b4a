"Lesson 19's tokenizer against Hugging Face's `tokenizers`: identical ids, the same compression, tokenizer.json both ways, fast enough."
import json, os, re, time, pathlib
import pytest
from transformers_scratch.bpe import (BPETokenizer, TokenizerFileError, read_tokenizer_json, save_tokenizer,
                                      load_tokenizer, train_bpe, train_bpe_fast)
from transformers_scratch.checks.bpe import TRAIN_TEXT

pytest.importorskip('tokenizers')
SHAKES = pathlib.Path(os.environ['TFS_DATA'])/'tinyshakespeare'/'input.txt'
EDGES = ("Hello   world!!  \n\n\t 12345 6.02e23 don't I'll we've they're DON'T 'tis  \r\n  \n"
         "café naïve Ünïcödé 日本語のテキスト Ελληνικά русский 😀👍🏽 🇫🇷 ½ Ⅻ ١٢٣ \u200b\u00a0nbsp \x00 end  ")

@pytest.fixture(scope='module')
def corpus():
    text = SHAKES.read_text(encoding='utf-8') if SHAKES.exists() else TRAIN_TEXT * 400
    return text[:200_000], text[200_000:300_000]

def _hf(text, vocab_size, special=()):
    from tokenizers import Tokenizer, models, trainers, pre_tokenizers, decoders
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    t.decoder = decoders.ByteLevel()
    t.train_from_iterator([text], trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(special), show_progress=False,
                                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return t

@pytest.fixture(scope='module')
def hf(corpus): return _hf(corpus[0], 600, special=['<|endoftext|>'])

def test_our_encoder_gives_tokenizers_ids_on_held_out_text(corpus, hf):
    ours = read_tokenizer_json(hf.to_str())
    for t in (corpus[1], EDGES, EDGES + '<|endoftext|>' + corpus[1][:3000] + '<|endoftext|>', '', ' ', '<|endoftext|>'):
        assert ours.encode(t) == hf.encode(t).ids

def test_invalid_utf8_decodes_as_tokenizers_does(hf):
    ours = read_tokenizer_json(hf.to_str())
    for bs in ([0xff], [0x80, 97], [0xe6, 0x97], [97, 0xf0, 0x9f, 98], [0xc3], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xc0, 0xaf]):
        ids = [ours.to_id[b] for b in bs]
        assert ours.decode(ids) == hf.decode(ids, skip_special_tokens=False), bs

def test_compression_within_one_percent_of_tokenizers(corpus):
    train, held = corpus
    for v in (400, 1000):
        ours, theirs = BPETokenizer.train(train, v, special=()), _hf(train, v)
        assert len(ours) == theirs.get_vocab_size() == v
        ratio = len(theirs.encode(held).ids) / len(ours.encode(held))      # bytes per token, ours over theirs
        assert abs(ratio - 1) < 0.01, (v, ratio)

def test_tokenizer_json_loads_in_tokenizers_and_the_course_codec(corpus, tmp_path):
    from tokenizers import Tokenizer
    from transformers_scratch.hub import read_tokenizer
    ours = BPETokenizer.train(corpus[0], 500)
    p = save_tokenizer(ours, tmp_path/'tok')
    text = EDGES + '<|endoftext|>' + corpus[1][:20000]
    assert Tokenizer.from_file(str(p)).encode(text).ids == ours.encode(text)
    codec = read_tokenizer(tmp_path/'tok')
    assert codec.encode(corpus[1][:20000]) == ours.encode(corpus[1][:20000]) and codec.eos_id == ours.special['<|endoftext|>'] == 499
    assert codec.n_vocab == len(ours) == 500 and codec.decode(codec.encode(EDGES)) == EDGES
    back = load_tokenizer(p)
    assert back.encode(text) == ours.encode(text) and back.pairs == ours.pairs

def test_round_trip_any_text():
    tok = BPETokenizer.train(TRAIN_TEXT * 3, 320)
    for t in (EDGES, "\U0010ffff\ufffd\ud7ff", "<|endoftext|><|endoftext|>", "a" * 1000, ""):
        assert tok.decode(tok.encode(t)) == t

@pytest.mark.parametrize('bad,why', [
    ('{', 'not JSON'), ('[]', 'not a BPE'), (json.dumps({'model': {'type': 'WordPiece', 'vocab': {}}}), 'not a BPE'),
    (json.dumps({'model': {'type': 'BPE', 'vocab': {}, 'merges': []}, 'pre_tokenizer': {'type': 'Whitespace'}}), "not GPT-2's"),
    (json.dumps({'model': {'type': 'BPE', 'vocab': {'a': 0}, 'merges': []}, 'pre_tokenizer': {'type': 'ByteLevel'}}), 'lacks'),
    (json.dumps({'model': {'type': 'BPE', 'vocab': {' x': 0}, 'merges': []}, 'pre_tokenizer': {'type': 'ByteLevel'}}), 'not byte-level'),
])
def test_a_file_that_is_no_byte_level_bpe_is_one_line(bad, why):
    with pytest.raises(TokenizerFileError, match=why) as e: read_tokenizer_json(bad, 'my/tokenizer.json')
    assert str(e.value).startswith('my/tokenizer.json: ') and '\n' not in str(e.value)

def test_bad_merges_in_a_file(hf):
    js = json.loads(hf.to_str())
    js['model']['merges'][3] = 'just-one'
    with pytest.raises(TokenizerFileError, match='merge 3 is not a pair'): read_tokenizer_json(json.dumps(js))
    js = json.loads(hf.to_str()); js['model']['merges'] = js['model']['merges'][1:]   # a merge that needs one never made
    with pytest.raises(TokenizerFileError, match='not both made before it'): read_tokenizer_json(json.dumps(js))

def test_gpt2s_own_vocabulary():
    from transformers_scratch.hub import hub_file, hub_url
    from transformers_scratch.runtime import online
    if not online(hub_url()): pytest.skip("GPT-2's tokenizer.json needs the hub (offline here)")
    gpt2 = load_tokenizer(hub_file('gpt2', 'tokenizer.json'))
    assert gpt2.encode("This is some text") == [1212, 318, 617, 2420]
    assert gpt2.encode("<|endoftext|>") == [50256] and gpt2.decode(gpt2.encode(EDGES)) == EDGES

def test_fast_enough(corpus):
    "Lower bounds with room for a loaded 2-core machine: training to 500 on 100 KB about a second, all of Shakespeare in seconds"
    t0 = time.perf_counter(); m = train_bpe_fast(corpus[0][:100_000], 500); t_train = time.perf_counter() - t0
    assert len(m) == 244 and t_train < 5, t_train
    if SHAKES.exists():
        text = SHAKES.read_text(encoding='utf-8')
        tok = BPETokenizer.train(corpus[0], 512)
        t0 = time.perf_counter(); ids = tok.encode(text); t_enc = time.perf_counter() - t0
        assert tok.decode(ids) == text and t_enc < 15, t_enc

def test_the_fast_trainer_is_the_didactic_one():
    for text, n in ((TRAIN_TEXT, 330), ("aaabdaaabac", 300), (EDGES * 3, 300)):
        assert list(train_bpe_fast(text, n).items()) == list(train_bpe(text, n).items())

# --- tfs bpe ----------------------------------------------------------------------------------------------------------
def _tfs(capsys, *argv):
    from transformers_scratch.cli import main, tfs_result
    try: main(list(argv)); code = 0
    except SystemExit as e: code = e.code
    out, err = capsys.readouterr()
    return code, tfs_result(out), err.strip()

def test_tfs_bpe_writes_a_tokenizer_json_that_tokenizers_reads(tmp_path, capsys):
    from tokenizers import Tokenizer
    f = tmp_path/'corpus.txt'
    f.write_text(TRAIN_TEXT * 4 + "café 😀", encoding='utf-8')
    code, res, err = _tfs(capsys, 'bpe', '--data', str(f), '--vocab-size', '300', '--out', str(tmp_path/'tok'))
    assert code == 0, err
    assert res['vocab_size'] == 300 and res['merges'] == 43 and res['tokenizer'] == str(tmp_path/'tok'/'tokenizer.json')
    ours = load_tokenizer(tmp_path/'tok')
    assert Tokenizer.from_file(res['tokenizer']).encode(EDGES).ids == ours.encode(EDGES)

def test_tfs_bpe_on_a_dataset(tmp_path, capsys):
    if not SHAKES.exists(): pytest.skip('tiny Shakespeare is not in TFS_DATA')
    code, res, err = _tfs(capsys, 'bpe', '--vocab-size', '400', '--out', str(tmp_path/'s'))
    assert code == 0 and res['source'] == 'tinyshakespeare' and res['vocab_size'] == 400 and res['bytes_per_token'] > 1.5, err

@pytest.mark.parametrize('content,args,msg', [
    (b'', (), 'the file is empty'), (b'  \n\t', (), r'empty \(only whitespace\)'), (b'abc\xff\xfe', (), 'not UTF-8 text'),
    (b'hello', ('--vocab-size', '200'), '--vocab-size: at least 257'), (b'hello', ('--vocab-size', '5000000'), '--vocab-size: at most 1,000,000'),
    (b'hello', ('--vocab-size', '0'), 'positive integer'), (b'hello', ('--vocab-size', 'many'), 'positive integer'),
])
def test_tfs_bpe_refuses_in_one_line(tmp_path, capsys, content, args, msg):
    f = tmp_path/'t.txt'
    f.write_bytes(content)
    code, res, err = _tfs(capsys, 'bpe', '--data', str(f), '--out', str(tmp_path/'o'), *args)
    assert code == 2 and res is None and len(err.splitlines()) == 1 and re.search(msg, err), err
    assert not (tmp_path/'o').exists()

def test_tfs_bpe_names_a_missing_file_a_folder_and_a_bad_out(tmp_path, capsys):
    (tmp_path/'t.txt').write_text('hello there', encoding='utf-8')
    for argv, msg in ((('--data', str(tmp_path/'nope.txt')), 'no such dataset or file'), (('--data', str(tmp_path)), 'is a folder'),
                      (('--data', str(tmp_path/'t.txt'), '--out', str(tmp_path/'t.txt')), "--out: .* is a file")):
        code, res, err = _tfs(capsys, 'bpe', *argv)
        assert code == 2 and len(err.splitlines()) == 1 and re.search(msg, err), err

def test_tfs_bpe_process_says_each_bad_input_in_one_line(tmp_path):
    "The `tfs` console script itself, one process per case, run side by side: exit 2, one line naming the flag or the file, no output"
    import subprocess
    from faultkit import one_line, env
    (tmp_path/'empty.txt').write_bytes(b'')
    (tmp_path/'latin1.txt').write_bytes('café crème'.encode('latin-1'))
    (tmp_path/'ok.txt').write_text('hello there', encoding='utf-8')
    cases = [(('--data', 'empty.txt'), r"--data .*empty\.txt: the file is empty"),
             (('--data', 'latin1.txt'), r"--data .*latin1\.txt: not UTF-8 text \(byte 0xe9 at offset 3\)"),
             (('--data', 'ok.txt', '--vocab-size', '255'), r"--vocab-size: at least 257 \(the 256 bytes and <\|endoftext\|>\), got 255"),
             (('--data', 'ok.txt', '--vocab-size', str(10**12)), r"--vocab-size: at most 1,000,000, got 1,000,000,000,000")]
    procs = [subprocess.Popen(['tfs', 'bpe', *args, '--out', f'out{i}'], cwd=tmp_path, env=env(TFS_OFFLINE='1'), text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for i, (args, _) in enumerate(cases)]
    for i, (p, (args, pattern)) in enumerate(zip(procs, cases)):
        out, err = p.communicate(timeout=300)
        assert one_line(p.returncode, err, pattern).startswith('tfs bpe: error: ') and out == '', args
        assert not (tmp_path/f'out{i}').exists()
