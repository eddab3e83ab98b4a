"""The fault suite, second round, the loaders' part (issue 25): GPT-2 folders validated like checkpoints, no silent
wrong results, the token cache and the temporary folders.

As in tests/test_faults.py each case asserts the exception type or the exit code, exactly one line (no traceback)
naming the file it is about, and that nothing was left behind; the memory case also bounds the time and the peak
memory, in a subprocess whose address space is limited (`RLIMIT_AS`), so that a loader that built what a forged
config.json asks for fails there instead of passing slowly. The GPT-2 folders are tiny and made offline by
`tiny_gpt2` (our own writer of Hugging Face's files; tests/test_gpt2.py checks them against `transformers`)."""
import io, json, os, re, signal, subprocess, sys, tempfile, textwrap, time
from pathlib import Path
import numpy as np, pandas as pd, pytest, torch
from dataclasses import asdict
from transformers_scratch.checkpoints import save_checkpoint
from transformers_scratch import gpt2 as G, gpt2_classify as GC, runs as R
from transformers_scratch.gpt2 import tiny_gpt2, load_gpt2, gpt2_tokenizer
from transformers_scratch.hub import PretrainedError, bpe_codec
from transformers_scratch.gpt2_classify import (GPT2Classifier, GPT2TextClassifier, save_gpt2_classifier, load_gpt2_classifier,
                                                gpt2_dls)
from transformers_scratch.runs import run_gpt2_classify
from transformers_scratch.textdata import numericalize_df, synth_text_df, text_dls
from transformers_scratch.classify import load_classifier
from transformers_scratch.data import validate_texts
from transformers_scratch.runtime import note_truncation
from transformers_scratch import pretrain as P
from faultkit import tfs, one_line, left, env, tiny_models   # the shared assertions and tiny models of every fault case

DATA = Path(os.environ['TFS_DATA'])
pytestmark = pytest.mark.usefixtures('one_thread')
TEXTS = ["the cat sat on the mat, and the dog sat on the log."] * 20 + ["a good film", "a bad film", "good, not bad"] * 10

@pytest.fixture(scope='module')
def d(tmp_path_factory):
    "A tiny GPT-2 folder, a GPT-2 classifier, a classifier, a character model, an encoder, and forged copies of them"
    d = tmp_path_factory.mktemp('loaders')
    g = tiny_gpt2(d/'gpt2', TEXTS, emb=16, heads=2, depth=1, seq_len=32, vocab_size=300)
    tok = gpt2_tokenizer(g)
    m = GPT2Classifier(load_gpt2(g), 2, tok.eos_id)
    save_gpt2_classifier(GPT2TextClassifier(m, tok, ['a', 'b'], 8), d/'gpt2-clf.pt')
    info = dict(config=asdict(m.config), classes=['a', 'b'], seq_len=8, pool='last', pad_id=tok.eos_id)   # as `save_gpt2_classifier`
    save_checkpoint(d/'gpt2-clf-tiktoken.pt', GC._FORMAT, m, tokenizer={'tiktoken': 'gpt2'}, **info)
    save_checkpoint(d/'gpt2-clf-vocab.pt', GC._FORMAT, m, tokenizer=dict(tok.files, **{'vocab.json': '{"a": 0, "b": "1"}'}), **info)
    tiny_models(d)                                                   # clf.pt, lm.pt, tr.pt, enc.pt
    ck = torch.load(d/'clf.pt', weights_only=True)
    torch.save(dict(ck, crop=dict(ck['crop'], seq_len=-5)), d/'clf-crop.pt')
    torch.save(dict(ck, vocab=ck['vocab'][:5] + [7] + ck['vocab'][6:]), d/'clf-mixed.pt')
    ck = torch.load(d/'lm.pt', weights_only=True)
    keep = [i for i, c in enumerate(ck['vocab']) if c not in 'xyz']                           # sorted, but lacks x, y, z:
    torch.save(dict(ck, vocab=[ck['vocab'][i] for i in keep], config=dict(ck['config'], n_tokens=len(keep)),   # a whole model
                    state_dict={k: v[keep] if k.startswith(('trunk.token_emb.', 'toprobs.')) else v for k, v in ck['state_dict'].items()}),
               d/'lm-fewer.pt')
    torch.save(dict(ck, vocab=ck['vocab'][::-1]), d/'lm-unsorted.pt')                          # the ids of other characters
    ck = torch.load(d/'enc.pt', weights_only=True)
    torch.save(dict(ck, vocab=list(range(len(ck['vocab'])))), d/'enc-ints.pt')
    return d

def raises(f, pattern, exc=ValueError):
    "`f()` raises `exc` with a one-line message matching `pattern`; the message"
    with pytest.raises(exc) as e: f()
    msg = str(e.value)
    assert '\n' not in msg and len(msg) < 500 and re.search(pattern, msg), msg
    return msg

def folder_with(d, tmp_path, name='f', config=None, weights=None, **files):
    "A copy of the tiny GPT-2 folder with `config` (a dict, or the text of config.json), `weights` or tokenizer `files` replaced"
    f = tmp_path/name; f.mkdir()
    for p in (d/'gpt2').iterdir(): (f/p.name).write_bytes(p.read_bytes())
    if config is not None: (f/'config.json').write_bytes(config if isinstance(config, bytes) else
                                                        (config if isinstance(config, str) else json.dumps(config)).encode())
    if weights is not None:
        from safetensors.torch import save_file
        save_file(weights, str(f/'model.safetensors'))
    for k, v in files.items(): (f/k.replace('_', '.')).write_bytes(v if isinstance(v, bytes) else v.encode())
    return f

# ------------------------------------------------------------------------- 1. GPT-2 folders validated like checkpoints
def config(d, **kw):
    c = json.loads((d/'gpt2'/'config.json').read_text())
    for k, v in kw.items():
        if v is None: c.pop(k)
        else: c[k] = v
    return c

CONFIGS = [(dict(n_embd=None), r'config n_embd: expected an integer .*got None'),
           (dict(n_positions=None), r'config n_positions: expected an integer .*got None'),
           (dict(vocab_size=None), r'config vocab_size: expected an integer .*got None'),
           (dict(n_embd='abc'), r"config n_embd: expected an integer .*got 'abc'"),
           (dict(n_embd=0), r'config n_embd: expected an integer in \[1, 65,536\], got 0'), (dict(n_embd=-16), r'config n_embd: .*got -16'),
           (dict(n_head=0), r'config n_head: expected an integer in \[1, 1,024\], got 0'), (dict(n_head=3), 'config n_head: 3 does not divide emb=16'),
           (dict(n_layer=1e9), r'config n_layer: expected an integer in \[1, 1,024\], got 1000000000\.0'),
           (dict(n_positions=True), r'config n_positions: .*got True'),
           (dict(layer_norm_epsilon='abc'), r"config layer_norm_epsilon: expected a number in \(0, 0\.1\], got 'abc'"),
           (dict(layer_norm_epsilon=-1e-5), r'config layer_norm_epsilon: .*got -1e-05'),
           (dict(layer_norm_epsilon=5.0), r'config layer_norm_epsilon: .*got 5\.0'),
           (dict(activation_function=['gelu']), r"activation_function=\['gelu'\]"), (dict(model_type='bert'), "model_type is 'bert'")]

@pytest.mark.parametrize('kw,pattern', CONFIGS, ids=[' '.join(f'{k}={v}' for k, v in kw.items()) for kw, _ in CONFIGS])
def test_gpt2_config_checked(d, tmp_path, kw, pattern):
    "A forged config.json: one line naming the file and the key, before anything is built (`load_gpt2`, `tfs generate --pretrained`)"
    f = folder_with(d, tmp_path, config=config(d, **kw))
    raises(lambda: load_gpt2(f), rf"^source: '{re.escape(str(f/'config.json'))}' is not a GPT-2 config\.json \(.*{pattern}", PretrainedError)

@pytest.mark.parametrize('text,pattern', [(b'{"n_embd": ', r'is not valid JSON \(JSONDecodeError'), (b'\xff\xfe{}', r'is not valid JSON \(UnicodeDecodeError'),
                                          (b'[' * 100_000 + b']' * 100_000, r'is not valid JSON \(nested too deeply\)'),
                                          (b'[1, 2]', 'is not a config.json'), (b'{"n_embd": 1' + b'0' * 5000 + b'}', 'is not valid JSON'),
                                          (b' ' * (2**20 + 1), 'bytes, more than the 1,048,576')],
                         ids=['cut', 'not-utf8', 'deep', 'list', 'huge-int', 'too-large'])
def test_gpt2_config_not_json(d, tmp_path, capsys, text, pattern):
    f = folder_with(d, tmp_path, config=text)
    raises(lambda: load_gpt2(f), rf"{re.escape(str(f/'config.json'))}.*{pattern}", PretrainedError)
    code, out, err = tfs(capsys, 'generate', '--pretrained', f, '--n', '2')
    one_line(code, err, rf"^tfs generate: error: --pretrained: {re.escape(str(f/'config.json'))}.*{pattern}")
    assert out == ''

BOUNDED = """
    import contextlib, io, json, resource, sys, time
    import transformers_scratch.cli as cli
    from transformers_scratch.gpt2 import load_gpt2
    from transformers_scratch.hub import PretrainedError
    import transformers_scratch.llama, transformers_scratch.training   # what the runner imports when it runs: before the clock and the limit
    vm = int(open('/proc/self/statm').read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (vm + 2**30, resource.RLIM_INFINITY))   # 1 GiB more than now: no model of these sizes fits
    peak0, res = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, {}
    for f in sys.argv[1:]:
        t = time.perf_counter()
        try: load_gpt2(f); r = 'loaded'
        except PretrainedError as e: r = str(e)
        except BaseException as e: r = f'{type(e).__name__}: {e}'
        res[f + ' load_gpt2'] = [r, time.perf_counter() - t]
        err, t = io.StringIO(), time.perf_counter()
        with contextlib.redirect_stderr(err):
            try: cli.main(['generate', '--pretrained', f, '--n', '2']); code = 0
            except SystemExit as e: code = e.code
            except BaseException as e: code = f'{type(e).__name__}: {e}'
        res[f + ' tfs generate'] = [f'exit {code}: {err.getvalue()}', time.perf_counter() - t]
    res['peak_growth_mib'] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak0) / 1024
    print(json.dumps(res))
    """

def test_gpt2_config_bounded_before_allocation(d, tmp_path):
    """A config.json of 300 bytes asks for 10^9 layers, or 1,024 layers 16,384 wide (about 13 TB): refused from the file
    alone, in well under a second, with the peak memory grown by less than 50 MiB, under an address-space limit of 1 GiB
    more than the process had (building the model would break it)"""
    fs = [folder_with(d, tmp_path, 'layers', config=config(d, n_layer=10**9)),
          folder_with(d, tmp_path, 'wide', config=config(d, n_layer=1024, n_embd=16384, n_head=16, n_positions=1024, n_inner=None))]
    assert all((f/'config.json').stat().st_size < 400 for f in fs)
    r = subprocess.run([sys.executable, '-c', textwrap.dedent(BOUNDED), *map(str, fs)], capture_output=True, text=True, env=env(), timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    growth = res.pop('peak_growth_mib')
    assert len(res) == 4, res
    for name, (msg, secs) in res.items():
        f = name.split()[0]
        want = r'config n_layer: expected an integer .*got 1000000000' if f.endswith('layers') else r'ask for about [\d,.]+ [GT]iB of memory, more than'
        assert str(Path(f)/'config.json') in msg and re.search(want, msg) and len(msg.strip().splitlines()) == 1, (name, msg)
        assert not name.endswith('generate') or msg.startswith('exit 2: tfs generate: error: --pretrained: '), (name, msg)
        assert secs < 0.5, (name, secs)
    assert growth < 50, f"peak memory grew by {growth:.0f} MiB"

def test_gpt2_weights_larger_than_the_config_allows(d, tmp_path):
    "A model.safetensors of 1 GiB (sparse) beside a tiny config.json: refused from its size, before a byte is read"
    f = folder_with(d, tmp_path)
    os.truncate(f/'model.safetensors', 2**30)
    t = time.perf_counter()
    raises(lambda: load_gpt2(f), rf"^source: {re.escape(str(f/'model.safetensors'))} has 1,073,741,824 bytes, more than the [\d,]+ its config.json", PretrainedError)
    assert time.perf_counter() - t < 0.5

def deep(n=100_000): return '[' * n + ']' * n

TOKENIZERS = [('vocab_json', '{"a": ', 'vocab.json', r'JSONDecodeError'), ('vocab_json', b'{"\xff": 0}', 'vocab.json', 'UnicodeDecodeError'),
              ('vocab_json', deep(), 'vocab.json', r'nested too deeply'), ('vocab_json', '["a", "b"]', 'vocab.json', 'not a JSON object of tokens'),
              ('vocab_json', '{"a": 0, "b": "1"}', 'vocab.json', 'not a JSON object of tokens'),
              ('merges_txt', '#version: 0.2\nt h e\n', 'merges.txt', r"line 2 is not a pair 'a b': 't h e'"),
              ('merges_txt', '#version: 0.2\nqq zz\n', 'merges.txt', r'Exception|Error'),
              ('tokenizer_json', '{"version": "1.0"}', 'tokenizer.json', r'Exception|Error'), ('tokenizer_json', deep(), 'tokenizer.json', r'recursion|Exception|nested'),
              ('tokenizer_json', b'\xff\xfe', 'tokenizer.json', 'UnicodeDecodeError'), ('tokenizer_json', '[1, 2, 3]', 'tokenizer.json', r'Exception|Error')]

@pytest.mark.parametrize('key,text,name,pattern', TOKENIZERS, ids=[f'{n}-{i}' for i, (_, _, n, _) in enumerate(TOKENIZERS)])
def test_tokenizer_files_read_through_one_function(d, tmp_path, key, text, name, pattern):
    "Every fault of a tokenizer file (`json`, UTF-8, `tokenizers`, recursion) is one `PretrainedError` naming the file"
    f = folder_with(d, tmp_path, **{key: text})
    if key == 'tokenizer_json': (f/'vocab.json').unlink()                    # tokenizer.json is read first anyway
    raises(lambda: gpt2_tokenizer(f), rf"^tokenizer: {re.escape(str(f/name))} is not a valid {re.escape(name)} \(.*({pattern})", PretrainedError)

def test_tokenizer_faults_through_the_cli_and_a_model_file(d, tmp_path, capsys):
    f = folder_with(d, tmp_path, merges_txt='#version: 0.2\nt h e\n')
    code, out, err = tfs(capsys, 'generate', '--pretrained', f, '--prompt', 'the cat', '--n', '2')
    one_line(code, err, rf"^tfs generate: error: --pretrained: tokenizer: {re.escape(str(f/'merges.txt'))} is not a valid merges.txt \(ValueError: line 2")
    code, out, err = tfs(capsys, 'predict', '--model', d/'gpt2-clf-vocab.pt', 'a good film')
    one_line(code, err, rf"^tfs: error: tokenizer: the vocab.json kept in '{re.escape(str(d/'gpt2-clf-vocab.pt'))}' is not a valid vocab.json")
    raises(lambda: bpe_codec({'vocab.json': '{}'}, where=d/'x.pt'), r"expected tokenizer.json, or vocab.json and merges.txt in '.*x.pt'", PretrainedError)

@pytest.mark.parametrize('value', [float('nan'), float('inf')])
def test_gpt2_weights_not_finite(d, tmp_path, capsys, value):
    from safetensors.torch import load_file
    sd = load_file(str(d/'gpt2'/'model.safetensors'))
    f = folder_with(d, tmp_path, weights={k: torch.full_like(v, value) if 'ln_f' in k else v for k, v in sd.items()})
    raises(lambda: load_gpt2(f), rf"^source: {re.escape(str(f/'model.safetensors'))} is damaged: NaN or infinite values in transformer\.ln_f", PretrainedError)
    code, out, err = tfs(capsys, 'generate', '--pretrained', f, '--n', '2')
    one_line(code, err, rf"{re.escape(str(f/'model.safetensors'))} is damaged: NaN or infinite")
    assert out == ''

def test_gpt2_tokenizer_larger_than_the_model(d, tmp_path):
    "A tokenizer with ids the model has no embedding for: refused, naming the folder (an IndexError later, or wrong tokens)"
    from safetensors.torch import load_file
    sd = load_file(str(d/'gpt2'/'model.safetensors'))
    f = folder_with(d, tmp_path, config=config(d, vocab_size=100), weights={k: v[:100] if 'wte' in k else v for k, v in sd.items()})
    raises(lambda: R.run_gpt2_generate(f, 'the cat', 2), rf"^tokenizer: the tokenizer of '{re.escape(str(f))}' has \d+ tokens and its model 100", PretrainedError)

def test_tiktoken_stays_offline(d, tmp_path, monkeypatch, capsys):
    """A saved classifier whose tokenizer is tiktoken's 'gpt2', without tiktoken's files: under TFS_OFFLINE one line
    naming the file, at once, and nothing tries the network"""
    import socket, tiktoken, tiktoken.load, tiktoken.registry
    monkeypatch.setenv('TFS_OFFLINE', '1'); monkeypatch.setenv('TIKTOKEN_CACHE_DIR', str(tmp_path/'empty'))
    monkeypatch.setattr(tiktoken.registry, 'ENCODINGS', {})                   # nothing loaded in this process either
    asked = []
    monkeypatch.setattr(tiktoken.load, 'read_file', lambda url: asked.append(url) or pytest.fail(f"tiktoken went online: {url}"))
    monkeypatch.setattr(socket, 'create_connection', lambda *a, **k: asked.append(a) or pytest.fail("a connection was opened"))
    t = time.perf_counter()
    raises(lambda: load_gpt2_classifier(d/'gpt2-clf-tiktoken.pt'), rf"^tokenizer: the tokenizer of '{re.escape(str(d/'gpt2-clf-tiktoken.pt'))}' "
           r"\(tiktoken's 'gpt2' encoding\) is not in tiktoken's cache and the network is off \(TFS_OFFLINE", PretrainedError)
    code, out, err = tfs(capsys, 'predict', '--model', d/'gpt2-clf-tiktoken.pt', 'a good film')
    one_line(code, err, rf"'{re.escape(str(d/'gpt2-clf-tiktoken.pt'))}' \(tiktoken's 'gpt2' encoding\) is not in tiktoken's cache")
    assert time.perf_counter() - t < 5 and asked == [] and out == ''
    assert tiktoken.load.read_file.__name__ == '<lambda>'                     # tiktoken's own function is put back

def test_generate_model_compile_reaches_the_decoder(d, capsys, monkeypatch):
    "`tfs generate --model F --compile` hands `compile=True` to the decoding (the compiled step itself: test_generate, test_llama)"
    import transformers_scratch.generate as gen                              # where `run_generate` takes it from when it runs
    seen, real = [], gen.generate_text
    monkeypatch.setattr(gen, 'generate_text', lambda *a, **kw: seen.append(kw.get('compile')) or real(*a, **{**kw, 'compile': False}))
    for flags in ([], ['--compile']):
        code, out, err = tfs(capsys, 'generate', '--model', d/'lm.pt', '--n', '2', *flags)
        assert code == 0, err
    assert seen == [False, True]

# ------------------------------------------------------------------------------------------ 2. no silent wrong results
NOTE = r'^tfs: note: the prompt has (\d+) tokens and the model reads the last (\d+)$'

def test_long_prompt_is_noted_the_same_way(d, capsys):
    "A prompt longer than the model's positions: GPT-2 and our own language model say it in the same one line"
    code, out, err = tfs(capsys, 'generate', '--pretrained', d/'gpt2', '--prompt', 'the cat sat on the mat. ' * 40, '--n', '2')
    n, k = re.match(NOTE, one_line(code, err, NOTE, 0)).groups()
    assert int(n) > 32 and k == '32' and json.loads(out.strip().splitlines()[-1])['prompt_tokens'] == int(n)
    code, out, err = tfs(capsys, 'generate', '--model', d/'lm.pt', '--prompt', 'ROMEO: ' * 10, '--n', '2')
    assert re.match(NOTE, one_line(code, err, NOTE, 0)).groups() == ('70', '16')
    code, out, err = tfs(capsys, 'generate', '--pretrained', d/'gpt2', '--prompt', 'the cat', '--n', '2')
    assert code == 0 and err == ''
    assert not note_truncation(16, 16)
    for keep, part in (('start', 'the first 16'), ('both', 'the first 8 and the last 8')):
        note_truncation(40, 16, 'a sentence', keep)
        assert capsys.readouterr().err == f"tfs: note: a sentence has 40 tokens and the model reads {part}\n"

@pytest.mark.skipif(torch.cuda.is_available(), reason='fp16 runs on a CUDA GPU')
@pytest.mark.parametrize('precision', ['fp16', 'bf16'])
def test_precision_the_cpu_cannot_do(d, capsys, tmp_path, monkeypatch, precision):
    "fp16/bf16 on a CPU: refused before any work by every classify path (none trains in fp32 and reports fp16)"
    monkeypatch.setattr(tempfile, 'tempdir', str(tmp_path))
    want = rf'precision: {precision} mixed precision needs a CUDA GPU'
    for args in (['--gpt2', d/'gpt2', '--quick'], ['--gpt2', d/'gpt2', '--data', 'imdb_sample'], ['--quick']):
        t = time.perf_counter()
        code, out, err = tfs(capsys, 'classify', *args, '--precision', precision, '--out', tmp_path/'m.pt')
        one_line(code, err, want)
        assert out == '' and time.perf_counter() - t < 10 and left(tmp_path) == []
    code, out, err = tfs(capsys, 'classify', '--encoder', d/'enc.pt', '--quick', '--precision', precision, '--out', tmp_path/'m.pt')
    one_line(code, err, rf'precision.*{precision}')
    raises(lambda: R.run_finetune(d/'enc.pt', precision=precision, out=tmp_path/'m.pt'), want)
    raises(lambda: run_gpt2_classify(d/'gpt2', 'imdb_sample', precision=precision), want)
    assert out == '' and left(tmp_path) == []

def test_bf16_needs_compute_capability_8():
    "bf16 on a GPU older than an A100 (a T4 is 7.5) is refused too; fp16 and 'auto' are what it can do"
    from transformers_scratch.runtime import validate_precision
    raises(lambda: validate_precision('bf16', 'cuda', (7, 5)), r"^precision: bf16 needs a GPU of compute capability 8\.0 or later .* this one is 7\.5")
    for p in ('fp16', 'auto', 'fp32'): validate_precision(p, 'cuda', (7, 5))
    validate_precision('bf16', 'cuda', (9, 0))

def texts_csv(tmp_path, df):
    "A `$TFS_DATA` folder whose imdb_sample/texts.csv is `df`"
    (tmp_path/'data'/'imdb_sample').mkdir(parents=True)
    df.to_csv(tmp_path/'data'/'imdb_sample'/'texts.csv', index=False)
    return tmp_path/'data'/'imdb_sample'/'texts.csv'

@pytest.mark.parametrize('fault,pattern', [('empty', r'of its 1,000 texts are empty \(the first in row \d+\)'),
                                           ('one-class', r"every text has the label 'negative'")])
def test_empty_texts_and_one_class_are_refused(d, capsys, tmp_path, monkeypatch, fault, pattern):
    "A texts.csv with empty texts, or one label only: one line naming the file, before any training, on every classify path"
    df = pd.read_csv(DATA/'imdb_sample'/'texts.csv')
    if fault == 'empty': df.loc[::3, 'text'] = ' '
    else: df['label'] = 'negative'
    f = texts_csv(tmp_path, df)
    monkeypatch.setenv('TFS_DATA', str(tmp_path/'data')); monkeypatch.setattr(tempfile, 'tempdir', str(tmp_path/'tmp'))
    (tmp_path/'tmp').mkdir()
    for args in (['--gpt2', d/'gpt2', '--quick'], ['--quick'], ['--quick', '--encoder', d/'enc.pt']):
        t = time.perf_counter()
        code, out, err = tfs(capsys, 'classify', *args, '--out', tmp_path/'m.pt')
        one_line(code, err, rf"{re.escape(str(f))}.*{pattern}")
        assert out == '' and time.perf_counter() - t < 30 and not (tmp_path/'m.pt').exists() and left(tmp_path/'tmp') == []
    df = synth_text_df(n=40)                                   # a DataFrame of one's own: the same refusals, naming `df`
    raises(lambda: validate_texts(df.assign(text=[''] + list(df.text[1:]))), r'^df: 1 of its 40 texts are empty \(the first in row 0\)')
    raises(lambda: text_dls(df.assign(label='x'), seq_len=8, bs=4, device='cpu'), r"^df: every text has the label 'x'")
    raises(lambda: gpt2_dls(df.assign(label=None), gpt2_tokenizer(d/'gpt2'), 8, 4), r'^df: 40 of its 40 labels are empty')

@pytest.mark.parametrize('f,loader,pattern', [
    ('clf-mixed.pt', load_classifier, r'damaged: vocab: entry 5 is int 7, not a string'),
    ('enc-ints.pt', P.load_encoder_file, r'damaged: vocab: entry 0 is int 0, not a string'),
    ('clf-crop.pt', load_classifier, r'damaged: crop seq_len=-5: expected an integer in \[1, 16\]')])
def test_forged_vocabulary_or_crop_refused_at_load(d, f, loader, pattern):
    assert str(d/f) in raises(lambda: loader(d/f), pattern)

def test_model_errors_name_the_file(d, capsys):
    "A vocabulary that lacks the prompt's characters, or the text's, names the model file; so does a stored crop of -5"
    code, out, err = tfs(capsys, 'generate', '--model', d/'lm.pt', '--prompt', 'ROMEO €', '--n', '2')
    one_line(code, err, rf"prompt: 1 character\(s\) not in the vocabulary: '€' .* in '{re.escape(str(d/'lm.pt'))}'$")
    code, out, err = tfs(capsys, 'generate', '--model', d/'lm-fewer.pt', '--n', '2')
    one_line(code, err, rf"model: '{re.escape(str(d/'lm-fewer.pt'))}' is not a checkpoint .* its vocabulary lacks characters of tinyshakespeare.*'x', 'y', 'z'")
    code, out, err = tfs(capsys, 'predict', '--model', d/'clf-crop.pt', 'a good film')
    one_line(code, err, rf"'{re.escape(str(d/'clf-crop.pt'))}' .*crop seq_len=-5")
    code, out, err = tfs(capsys, 'generate', '--model', d/'lm-unsorted.pt', '--n', '2')      # other characters for the same ids
    one_line(code, err, rf"'{re.escape(str(d/'lm-unsorted.pt'))}' .*damaged: vocab: not the sorted, distinct characters of a text")

# ----------------------------------------------------------------------------------- 3. the token cache, the temporaries
def cache_file(tmp_path, df):
    ids, vocab = numericalize_df(df, cache=tmp_path/'cache')
    (f,) = (tmp_path/'cache').glob('tokens-*.npz')
    return f, ids, vocab

def poison(f, how):
    with np.load(f) as z: a = {k: z[k] for k in z.files}
    if how == 'ids-beyond-vocab': a['ids'] = a['ids'].copy(); a['ids'][3] = 10**6
    elif how == 'negative-ids': a['ids'] = a['ids'].copy(); a['ids'][0] = -1
    elif how == 'float-ids': a['ids'] = a['ids'].astype(np.float32)
    elif how == '2d-ids': a['ids'] = a['ids'][:len(a['ids']) // 2 * 2].reshape(2, -1)
    elif how == 'offsets': a['offsets'] = a['offsets'][::-1]
    elif how == 'rows': a['offsets'] = a['offsets'][:-1]
    elif how == 'no-vocab': del a['vocab']
    elif how == 'int-vocab': a['vocab'] = np.arange(len(a['vocab']))
    elif how == 'objects': a['vocab'] = np.array(list(a['vocab']), dtype=object)
    if how == 'cut': f.write_bytes(f.read_bytes()[:100]); return
    if how == 'objects':
        with open(f, 'wb') as o: np.savez(o, **a, allow_pickle=True)   # an object array: pickled, refused by np.load
        return
    with open(f, 'wb') as o: np.savez(o, **a)

@pytest.mark.parametrize('how', ['ids-beyond-vocab', 'negative-ids', 'float-ids', '2d-ids', 'offsets', 'rows', 'no-vocab', 'int-vocab', 'objects', 'cut'])
def test_token_cache_validated_and_rebuilt(tmp_path, capsys, how):
    "A damaged or forged tokens-*.npz: said in one line naming it, tokenized again, the same ids as fresh, and the file rewritten"
    df = synth_text_df(n=40)
    f, ids, vocab = cache_file(tmp_path, df)
    poison(f, how)
    capsys.readouterr()
    ids2, vocab2 = numericalize_df(df, cache=tmp_path/'cache')
    one_line(0, capsys.readouterr().err, rf"^tfs: note: the token cache {re.escape(str(f))} is damaged \(.+\); tokenizing the texts again$", 0)
    assert vocab2 == vocab and len(ids2) == len(ids) and all(np.array_equal(a, b) for a, b in zip(ids, ids2))
    numericalize_df(df, cache=tmp_path/'cache')                          # rewritten: read back without a word
    assert capsys.readouterr().err == '' and left(tmp_path/'cache') == [f.name]

def test_token_cache_zip_bomb_not_inflated(tmp_path, capsys):
    "A cache whose one record would inflate a thousand times: refused from the zip's directory and rebuilt"
    import zipfile
    df = synth_text_df(n=40)
    f, ids, vocab = cache_file(tmp_path, df)
    with np.load(f) as z: a = {k: z[k] for k in z.files}
    with zipfile.ZipFile(f, 'w', zipfile.ZIP_DEFLATED) as z:
        for k, v in a.items():
            buf = io.BytesIO(); np.save(buf, v if k != 'ids' else np.zeros(2**24, np.int32)); z.writestr(f'{k}.npy', buf.getvalue())
    capsys.readouterr()
    ids2, _ = numericalize_df(df, cache=tmp_path/'cache')
    one_line(0, capsys.readouterr().err, r'is damaged \(.*would inflate [\d,]+ times.*\); tokenizing the texts again', 0)
    assert all(np.array_equal(a, b) for a, b in zip(ids, ids2))

def tiny_dirs(folder): return [p for p in Path(folder).rglob('*') if 'tiny-gpt2' in p.name]

def test_quick_gpt2_folder_removed_on_every_exit(tmp_path, monkeypatch):
    "`classify --gpt2 --quick` makes its tiny GPT-2 in a temporary folder: gone after a run, an error and Ctrl-C"
    monkeypatch.setattr(tempfile, 'tempdir', str(tmp_path))
    made = []
    real = G.tiny_gpt2                                                       # `run_gpt2_classify` takes it from gpt2 when it runs
    monkeypatch.setattr(G, 'tiny_gpt2', lambda folder, *a, **k: made.append(Path(folder)) or real(folder, *a, **k))
    res = run_gpt2_classify(recipe=GC.GPT2_CLASSIFY_QUICK.replace(epochs=1, seq_len=16), quick=True)
    assert res['quick'] and made and made[-1].parent.parent == tmp_path and not made[-1].exists() and left(tmp_path) == []
    for exc in (ValueError('boom'), KeyboardInterrupt()):
        def fail(*a, **k): raise exc
        monkeypatch.setattr(G, 'load_gpt2', fail)
        with pytest.raises(type(exc)): run_gpt2_classify(recipe=GC.GPT2_CLASSIFY_QUICK.replace(epochs=1), quick=True)
        assert made[-1].is_dir() is False and left(tmp_path) == [], left(tmp_path)

def test_quick_gpt2_ctrl_c_leaves_nothing(tmp_path):
    "Ctrl-C while `tfs classify --gpt2 gpt2 --quick` trains: exit 130, one line, and no tiny-gpt2 folder left in TMPDIR"
    p = subprocess.Popen([sys.executable, '-c', 'from transformers_scratch.cli import main; main()', 'classify', '--gpt2', 'gpt2', '--quick'],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env(TMPDIR=str(tmp_path), TFS_OFFLINE='1'),
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))   # as a terminal's job: a background
    t = time.time()                                                                      # `pytest &` passes SIGINT on ignored
    while not tiny_dirs(tmp_path) and p.poll() is None and time.time() - t < 120: time.sleep(0.05)
    assert tiny_dirs(tmp_path), "the tiny model was never made"
    time.sleep(0.5); p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    lines = [l for l in err.splitlines() if l.strip() and not l.startswith('quick:')]
    assert p.returncode == 130 and 'Traceback' not in err and len(lines) == 1 and 'interrupted (Ctrl-C)' in lines[0], err
    assert tiny_dirs(tmp_path) == []
