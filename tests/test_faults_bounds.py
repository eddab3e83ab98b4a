"""The fault suite, second round (issue 25): memory bounded before allocation, one validation of a configuration, and
the `tfs` faults that ended silently or in a traceback.

As in tests/test_faults.py every case asserts the exit code, exactly one non-empty line on stderr with no traceback,
the words that name the flag or the file, and that nothing was left behind; the memory cases also bound the time and
the peak memory, measured in a subprocess whose address space is limited (`RLIMIT_AS`) so that a loader that inflated
what a file declares would fail there instead of passing slowly."""
import io, json, re, signal, struct, subprocess, sys, textwrap, time, zipfile, zlib
from pathlib import Path
import pytest, torch
from faultkit import tfs, one_line, left, env, tiny_models   # the shared assertions and tiny models of every fault case

def zip_bomb(path, mib=2048, method=zlib.DEFLATED, format='transformers_scratch.classify/2'):
    """A `torch.save` file whose one weight record declares `mib` MiB of zeros: deflated (about a thousandth of that on
    disk: 2 GiB in 2 MiB), or stored (`method=0`) with 16 bytes where it declares `mib` MiB. The CRC is not computed: a
    reader allocates what the directory declares before it can check one."""
    buf = io.BytesIO()
    torch.save({'format': format, 'state_dict': {'w': torch.zeros(4)}}, buf)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    one = c.compress(bytes(2**20)) + c.flush(zlib.Z_FULL_FLUSH)     # after a full flush every MiB of zeros compresses alike
    bomb = one * mib + b'\x03\x00' if method == zlib.DEFLATED else bytes(16)   # + an empty final block
    src, out, central = zipfile.ZipFile(buf), io.BytesIO(), []
    for i in src.infolist():
        data, m, size, crc = src.read(i), 0, i.file_size, i.CRC
        if i.filename.endswith('/data/0'): data, m, size, crc = bomb, method, mib * 2**20, 0
        name = i.filename.encode()
        central.append((name, m, crc, len(data), size, out.tell()))
        out.write(struct.pack('<4s5H3L2H', b'PK\x03\x04', 20, 0, m, 0, 33, crc, len(data), size, len(name), 0) + name + data)
    start = out.tell()
    for name, m, crc, held, size, at in central:
        out.write(struct.pack('<4s6H3L5H2L', b'PK\x01\x02', 20, 20, 0, m, 0, 33, crc, held, size, len(name), 0, 0, 0, 0, 0, at) + name)
    out.write(struct.pack('<4s4H2LH', b'PK\x05\x06', 0, 0, len(central), len(central), out.tell() - start, start, 0))
    Path(path).write_bytes(out.getvalue())
    return Path(path)

@pytest.fixture(scope='module')
def d(tmp_path_factory):
    "Tiny models of each kind, and forged copies of them"
    d = tmp_path_factory.mktemp('bounds')
    zip_bomb(d/'bomb.pt'); zip_bomb(d/'liar.pt', method=0)
    tiny_models(d)                                                   # clf.pt, lm.pt, tr.pt, enc.pt
    ck = torch.load(d/'clf.pt', weights_only=True)
    forge = lambda name, **kw: torch.save(dict(ck, **kw), d/name)
    forge('clf-deep.pt', config=dict(ck['config'], depth=10**6, emb=8))
    forge('clf-pad.pt', config=dict(ck['config'], pad_idx=10**9))
    forge('clf-dropout.pt', config=dict(ck['config'], dropout=5.0))
    forge('clf-mixed.pt', vocab=ck['vocab'][:5] + [7] + ck['vocab'][6:])
    forge('clf-crop.pt', crop=dict(ck['crop'], seq_len=-5))
    forge('clf-nan.pt', state_dict={k: torch.full_like(v, float('nan')) if v.is_floating_point() else v for k, v in ck['state_dict'].items()})
    ck = torch.load(d/'lm.pt', weights_only=True)
    torch.save(dict(ck, config=dict(ck['config'], dropout=5.0)), d/'lm-dropout.pt')
    ck = torch.load(d/'tr.pt', weights_only=True)
    torch.save(dict(ck, config=dict(ck['config'], mult=1e9)), d/'tr-mult-huge.pt')
    torch.save(dict(ck, config=dict(ck['config'], mult=-4)), d/'tr-mult-negative.pt')
    torch.save(dict(ck, src_vocab=ck['src_vocab'][:4] + [3, 'b']), d/'tr-mixed.pt')
    ck = torch.load(d/'enc.pt', weights_only=True)
    torch.save(dict(ck, vocab=list(range(len(ck['vocab'])))), d/'enc-ints.pt')
    return d

# ------------------------------------------------------------------------------------- 1. memory bounded before allocation
BOUNDED = """
    import contextlib, io, json, resource, sys, time
    import torch
    import transformers_scratch.cli as cli, transformers_scratch.classify, transformers_scratch.gpt2_classify, transformers_scratch.lm
    import transformers_scratch.translate, transformers_scratch.pretrain, transformers_scratch.generate
    from transformers_scratch.checkpoints import load_checkpoint
    from transformers_scratch.classify import load_classifier
    from transformers_scratch.lm import load_lm
    from transformers_scratch.translate import load_translator
    from transformers_scratch.pretrain import load_encoder_file
    d, out = sys.argv[1], sys.argv[2]
    vm = int(open('/proc/self/statm').read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (vm + 2**30, resource.RLIM_INFINITY))   # 1 GiB more than now: 2 GiB cannot be inflated
    peak0, res = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, {}
    def run(name, f):
        t = time.perf_counter()
        try: f(); r = 'loaded'
        except ValueError as e: r = str(e)
        except BaseException as e: r = f'{type(e).__name__}: {e}'
        res[name] = [r, time.perf_counter() - t]
    for f in sys.argv[3:]:
        for name, load in (('load_checkpoint', lambda: load_checkpoint(f'{d}/{f}', 'x/1')), ('load_classifier', lambda: load_classifier(f'{d}/{f}')),
                           ('load_lm', lambda: load_lm(f'{d}/{f}')), ('load_translator', lambda: load_translator(f'{d}/{f}')),
                           ('load_encoder_file', lambda: load_encoder_file(f'{d}/{f}'))):
            run(f'{f} {name}', load)
        for args in (['predict', '--model', f'{d}/{f}', 'a good film'], ['generate', '--model', f'{d}/{f}', '--n', '3'],
                     ['translate', '--model', f'{d}/{f}', 'ein hund'], ['classify', '--quick', '--encoder', f'{d}/{f}', '--out', f'{out}/m.pt']):
            err = io.StringIO()
            def cmd():
                with contextlib.redirect_stderr(err):
                    try: cli.main(args)
                    except SystemExit as e: raise ValueError(f'exit {e.code}: {err.getvalue()}')
            run(f'{f} tfs {args[0]}', cmd)
    t = time.perf_counter()
    try: torch.load(f'{d}/{sys.argv[3]}', weights_only=True); control = 'loaded'   # what the checks spare the loaders
    except BaseException as e: control = type(e).__name__
    res['control'] = [control, time.perf_counter() - t]
    res['peak_growth_mib'] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak0) / 1024
    print(json.dumps(res))
    """

@pytest.mark.parametrize('f,pattern', [('bomb.pt', r"record 'archive/data/0' would inflate [\d,]+ times, from 2\.0 MiB to 2\.0 GiB: a zip bomb"),
                                       ('liar.pt', r"damaged: record 'archive/data/0' declares 2,147,483,648 bytes and holds 16"),
                                       ('clf-deep.pt', r"config depth: expected an integer in \[1, 1,024\], got 1000000")],
                         ids=['zip-bomb', 'stored-record-that-lies', 'depth-1e6'])
def test_bounded_before_allocation(d, tmp_path, f, pattern):
    """A 2 MiB file whose one record inflates to 2 GiB, a record that declares 2 GiB and holds 16 bytes, and a forged
    `depth=10**6` at `emb=8`: every loader and every `tfs` command that reads a model refuses each in one line naming the
    file, in under 2 s, with the peak memory grown by less than 100 MiB, under an address-space limit 2 GiB would break"""
    r = subprocess.run([sys.executable, '-c', textwrap.dedent(BOUNDED), d, tmp_path, f], capture_output=True, text=True, env=env(), timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    growth, control = res.pop('peak_growth_mib'), res.pop('control')
    assert len(res) == 9, res
    for name, (msg, secs) in res.items():
        line = msg.split(': ', 1)[1] if msg.startswith('exit 2: ') else msg
        assert msg == line or msg.startswith('exit 2: tfs: error:'), (name, msg)
        relevant = f != 'clf-deep.pt' or 'classifier' in name or 'predict' in name   # the other loaders refuse a classifier as such
        assert f in line and (re.search(pattern, line) or not relevant) and len(line.strip().splitlines()) == 1, (name, msg)
        assert secs < 2, (name, secs)
    assert growth < 100, f"peak memory grew by {growth:.0f} MiB"
    if f != 'clf-deep.pt': assert control != 'loaded', control   # the same file through `torch.load` alone: it does inflate
    assert left(tmp_path) == []

# ------------------------------------------------------------------------------ 2. forged configurations: one line each
FORGED = [('predict', 'clf-pad.pt', r'config pad_idx: expected None or a token id in \[0, \d+\], got 1000000000'),
          ('predict', 'clf-dropout.pt', r'config dropout: expected a number in \[0, 1\), got 5\.0'),
          ('predict', 'clf-mixed.pt', r'damaged: vocab: entry 5 is int 7, not a string'),
          ('predict', 'clf-nan.pt', r"damaged: weight '.*' holds NaN or infinite values"),
          ('generate', 'lm-dropout.pt', r'config dropout: expected a number in \[0, 1\), got 5\.0'),
          ('translate', 'tr-mult-huge.pt', r'config mult: expected an integer in \[1, 64\], got 1000000000\.0'),
          ('translate', 'tr-mult-negative.pt', r'config mult: expected an integer in \[1, 64\], got -4'),
          ('translate', 'tr-mixed.pt', r'damaged: src_vocab: entry 4 is int 3'),
          ('classify', 'enc-ints.pt', r'damaged: vocab: entry 0 is int 0, not a string')]
ARGS = {'predict': ['a good film'], 'generate': ['--n', '3'], 'translate': ['ein hund'], 'classify': ['--quick']}

@pytest.mark.parametrize('cmd,f,pattern', FORGED, ids=[f for _, f, _ in FORGED])
def test_forged_configuration(d, capsys, tmp_path, cmd, f, pattern):
    flag = '--encoder' if cmd == 'classify' else '--model'
    start = time.perf_counter()
    code, out, err = tfs(capsys, cmd, flag, d/f, *ARGS[cmd], *(['--out', tmp_path/'m.pt'] if cmd == 'classify' else []))
    line = one_line(code, err, pattern)
    assert str(d/f) in line and out == '' and left(tmp_path) == [] and time.perf_counter() - start < 10

# ---------------------------------------------------------------------------------------------- 3. the `tfs` command
@pytest.mark.parametrize('args,pattern', [
    (['generate', '--pretrained', ''], r"^tfs generate: error: --pretrained is empty: give a hub name"),
    (['generate', '--pretrained', '  '], '--pretrained is empty'),
    (['classify', '--gpt2', '', '--quick'], '--gpt2 is empty'),
    (['classify', '--gpt2', 'no/such/folder', '--quick'], r"--gpt2 'no/such/folder': no such folder \(--quick .*reads no model"),
    (['generate', '--model', ''], '--model is empty'),
    (['predict', '--model', '', 'a good film'], '--model is empty'),
    (['classify', '--quick', '--encoder', ''], '--encoder is empty'),
    (['handout', '--dest', ''], '--dest is empty'),
    (['predict', '--model', 'm.pt', b'un film \xe9patant'.decode('utf-8', 'surrogateescape')], r'the text to classify is not valid UTF-8 text \(byte 0xe9 at character 8\)'),
    (['generate', '--prompt', b'\xff\xfe'.decode('utf-8', 'surrogateescape')], r'--prompt is not valid UTF-8 text \(byte 0xff'),
    (['translate', '--model', 'm.pt', b'ein \x81'.decode('utf-8', 'surrogateescape')], r'the sentence is not valid UTF-8'),
], ids=['pretrained-empty', 'pretrained-blank', 'classify-gpt2-empty', 'classify-gpt2-missing-quick', 'model-empty', 'predict-model-empty', 'encoder-empty', 'dest-empty',
        'predict-not-utf8', 'prompt-not-utf8', 'sentence-not-utf8'])
def test_refused_before_any_work(capsys, tmp_path, monkeypatch, args, pattern):
    "An empty name is not 'not given' (`--pretrained ''` would train for hours), and text that is not UTF-8 is refused"
    monkeypatch.chdir(tmp_path)
    start = time.perf_counter()
    code, out, err = tfs(capsys, *args)
    one_line(code, err, pattern)
    assert out == '' and left(tmp_path) == [] and time.perf_counter() - start < 10

@pytest.mark.parametrize('cmd,flag,f', [('classify', '--encoder', 'enc.pt'), ('generate', '--model', 'lm.pt')])
def test_out_is_not_the_input(d, capsys, tmp_path, cmd, flag, f):
    "`classify --encoder e.pt --out e.pt` would replace the encoder with the classifier: refused, the file untouched"
    (tmp_path/f).write_bytes((d/f).read_bytes()); before = (tmp_path/f).read_bytes()
    (tmp_path/'link.pt').symlink_to(tmp_path/f)
    for out in (tmp_path/f, tmp_path/'.'/f, tmp_path/'link.pt'):
        code, _, err = tfs(capsys, cmd, flag, tmp_path/f, '--out', out, *(['--quick'] if cmd == 'classify' else ['--n', '3']))
        one_line(code, err, rf"--out '.*' is the {flag} file")
    assert (tmp_path/f).read_bytes() == before and left(tmp_path) == sorted(['link.pt', f])

@pytest.mark.parametrize('how', [['--encoder', 'enc.pt'], ['--gpt2', 'gpt2']], ids=['encoder', 'gpt2'])
def test_precision_a_cpu_cannot_do(d, capsys, tmp_path, monkeypatch, how):
    "`classify --encoder/--gpt2 ... --precision fp16` where there is no GPU: refused, not trained in fp32"
    import transformers_scratch.training as T
    monkeypatch.setattr(T, 'launch_device', lambda: torch.device('cpu'))     # where every run's `start_run` picks the device
    monkeypatch.setenv('TFS_OFFLINE', '1')
    flag, f = how
    code, out, err = tfs(capsys, 'classify', '--quick', flag, d/f if f == 'enc.pt' else f, '--precision', 'fp16', '--out', tmp_path/'m.pt')
    one_line(code, err, r'precision: fp16.*CUDA')
    assert out == '' and left(tmp_path) == []

def test_json_line_never_holds_nan(d, capsys, monkeypatch):
    "A result that is not a finite number is written as null (JSON has no NaN), with one note on stderr naming it"
    import transformers_scratch.classify as C
    monkeypatch.setattr(C, 'predict_text', lambda m, t: {'label': 'pos', 'probs': {'pos': float('nan'), 'neg': float('inf')},
                                                         'truncated': False})
    code, out, err = tfs(capsys, 'predict', '--model', d/'clf.pt', 'a good film')
    res = json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in the JSON line"))
    assert code == 0 and res['probs'] == {'pos': None, 'neg': None}
    one_line(code, err, r'^tfs: note: probs\.pos, probs\.neg are not a finite number \(NaN or infinity\); written as null', 0)

def test_an_error_names_the_model(d, capsys):
    "A stored crop of -5 ends in an error of the model's code ('x: the sequence is empty'): the line says which file"
    code, out, err = tfs(capsys, 'predict', '--model', d/'clf-crop.pt', 'a good film')
    assert 'clf-crop.pt' in one_line(code, err, r'crop|sequence') and out == ''

def proc(args, stdin=None, **kw):
    "`tfs ARGS` in a fresh Python, as the console script runs it (argv[0] is 'tfs'): the CompletedProcess"
    code = "import sys; sys.argv[0] = 'tfs'; from transformers_scratch.cli import main; sys.exit(main())"
    return subprocess.run([sys.executable, '-c', code, *map(str, args)], input=stdin, capture_output=True, env=env(), timeout=300, **kw)

def test_translate_stdin_not_utf8(d):
    "Bytes that are not UTF-8 on translate's standard input: the lines before are translated, then one error line, exit 2"
    r = proc(['translate', '--model', d/'tr.pt'], stdin=b'ein hund\nein \xff\xfe hund\nder park\n')
    one_line(r.returncode, r.stderr.decode(), r'^tfs translate: error: standard input, line 2: not valid UTF-8 text \(byte 0xff at 4\)')
    assert len(r.stdout.decode().splitlines()) == 1

def test_translate_stdin_closed(d):
    "`tfs translate --model M <&-`: one line, not a TypeError"
    r = subprocess.run(f"'{sys.executable}' -c 'from transformers_scratch.cli import main; main()' translate --model '{d/'tr.pt'}' <&-",
                       shell=True, capture_output=True, text=True, env=env(), timeout=300)
    one_line(r.returncode, r.stderr, r'standard input is closed: give the sentence as an argument')
    assert r.stdout == ''

def test_stdout_at_dev_full(d):
    "`tfs predict ... > /dev/full`: one line naming standard output, not an errno alone"
    if not Path('/dev/full').exists(): pytest.skip('no /dev/full')
    with open('/dev/full', 'w') as full:
        r = subprocess.run([sys.executable, '-c', 'from transformers_scratch.cli import main; main()', 'predict', '--model', str(d/'clf.pt'),
                            'a good film'], stdout=full, stderr=subprocess.PIPE, text=True, env=env(), timeout=300)
    one_line(r.returncode, r.stderr, r'^tfs predict: error: standard output: the results could not be written \(No space left on device\)')

def test_ctrl_c_while_starting(d, tmp_path):
    """Ctrl-C at any moment while `tfs` starts (torch and fastai import for seconds): exit 130 and one line, never a
    traceback or an abort. The console script's handler is installed before torch is imported."""
    script = tmp_path/'tfs'   # what pip writes for the console script `tfs=transformers_scratch.cli:main`
    script.write_text(f"#!{sys.executable}\nimport re, sys\nfrom transformers_scratch.cli import main\nif __name__ == '__main__':\n"
                      f"    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n    sys.exit(main())\n")
    script.chmod(0o755)
    lines = []
    for delay in (0.3, 0.5, 0.8, 1.2, 1.8):
        p = subprocess.Popen([str(script), 'predict', '--model', str(d/'clf.pt'), 'a good film'], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env(), preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))   # as a terminal's job
        time.sleep(delay); p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=120)
        lines.append(one_line(p.returncode, err, r'^tfs: interrupted \(Ctrl-C\)', 130))
        assert out == ''
    assert any('while starting' in l for l in lines), lines   # some of them did land during the imports
    assert left(tmp_path) == ['tfs']

def test_a_refusal_after_the_start_is_one_line(capsys, tmp_path, monkeypatch):
    "The full configuration's note on a CPU is said when training starts: a refusal before it (no data here) stays one line"
    monkeypatch.setenv('TFS_DATA', str(tmp_path/'empty')); monkeypatch.setenv('TFS_OFFLINE', '1')
    (tmp_path/'empty').mkdir(); monkeypatch.chdir(tmp_path)
    code, out, err = tfs(capsys, 'classify')
    line = one_line(code, err, r"dataset 'imdb_sample' not found", want=code)
    assert code != 0 and 'note' not in line and out == ''

def test_the_note_is_said_when_training_starts(capsys):
    "start_run's note waits for set_precision, which every runner calls once its learner is built"
    from types import SimpleNamespace
    from transformers_scratch.training import start_run
    from transformers_scratch.runtime import set_precision
    capsys.readouterr()
    start_run(False)
    assert capsys.readouterr().err == ''
    set_precision(SimpleNamespace(dls=SimpleNamespace(device=torch.device('cpu'))), 'fp32')
    assert 'the full configuration is meant for a GPU' in capsys.readouterr().err
    start_run(True); set_precision(SimpleNamespace(dls=SimpleNamespace(device=torch.device('cpu'))), 'fp32')
    assert capsys.readouterr().err == ''      # --quick: no note, and none left over from before
