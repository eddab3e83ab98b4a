"""The fault suite (issue 14): hostile model files, bad data files, bad arguments, outputs that cannot be written,
interrupts, write faults and closed pipes, against every `tfs` subcommand and every model loader.

Every case asserts the exit code, exactly one non-empty line on stderr with no traceback, the words that name the flag
or the file, nothing left at the output path (no temporary file either), and that no code from a file ran (the `trap`
files that a hostile pickle would create never appear). Most cases run `cli.main` in-process and fail before any work;
the tiny models they need are made once per module. Subprocesses only where a real process is needed: a signal, a
file-size limit, a broken or closed pipe, concurrent writers."""
import gzip, io, json, os, pickle, re, shutil, subprocess, sys, textwrap, time
from pathlib import Path
import pytest, torch
from transformers_scratch.cli import main
from transformers_scratch.checkpoints import load_checkpoint
from transformers_scratch.classify import load_classifier
from transformers_scratch.lm import load_lm
from transformers_scratch.translate import load_translator
from transformers_scratch.pretrain import load_encoder_file
from faultkit import tfs, one_line, left, env, tiny_models   # the shared assertions and tiny models of every fault case

DATA = Path(os.environ['TFS_DATA'])

# ---------------------------------------------------------------------------------------------------------------- files
class Opens:
    "Unpickling it creates file `p` (io.open(p, 'w'))"
    def __init__(self, p): self.p = str(p)
    def __reduce__(self): return (io.open, (self.p, 'w'))

class Runs:
    "Unpickling it runs a shell command that creates file `p`"
    def __init__(self, p): self.p = str(p)
    def __reduce__(self): return (os.system, (f"touch '{self.p}'",))

@pytest.fixture(scope='module')
def d(tmp_path_factory):
    "The module's folder: hostile files, tiny models of each kind, and the traps"
    d = tmp_path_factory.mktemp('faults')
    traps = [d/'trap-open', d/'trap-system']
    (d/'evil.pkl').write_bytes(pickle.dumps(Opens(traps[0])))                       # a plain pickle
    (d/'evil-system.pkl').write_bytes(pickle.dumps(Runs(traps[1]), protocol=2))
    torch.save({'format': 'transformers_scratch.classify/2', 'state_dict': {}, 'x': Opens(traps[0])}, d/'evil.pt')
    torch.save(Runs(traps[1]), d/'evil-system.pt')                                # torch.save of an object
    (d/'empty.pt').write_bytes(b'')
    (d/'random.pt').write_bytes(os.urandom(4096))
    (d/'text.pt').write_text('this is not a model\n')
    # a tiny model of each kind: clf.pt (trained one epoch), lm.pt, tr.pt, enc.pt
    learn = tiny_models(d)
    learn.export(d/'learner.pkl')                                                 # the old format: a pickled Learner
    # truncated and forged checkpoints
    for k in ('clf', 'lm', 'tr', 'enc'):
        b = (d/f'{k}.pt').read_bytes(); (d/f'{k}-cut.pt').write_bytes(b[:len(b) // 2])
    ck = torch.load(d/'clf.pt', weights_only=True)
    torch.save({k: v for k, v in ck.items() if k != 'vocab'}, d/'clf-novocab.pt')
    torch.save(dict(ck, config=dict(ck['config'], emb='8')), d/'clf-badconfig.pt')
    torch.save(dict(ck, config=dict(ck['config'], emb=16, heads=2)), d/'clf-mismatch.pt')
    torch.save(dict(ck, config=dict(ck['config'], emb=2**16, heads=2, depth=2**20)), d/'clf-huge.pt')   # forged sizes: no allocation
    torch.save(dict(ck, config=dict(ck['config'], heads=3)), d/'clf-heads.pt')
    ck = torch.load(d/'lm.pt', weights_only=True)
    torch.save({k: v for k, v in ck.items() if k != 'data'}, d/'lm-nodata.pt')
    torch.save(dict(ck, config=dict(ck['config'], emb=32)), d/'lm-mismatch.pt')
    torch.save(dict(ck, config=dict(ck['config'], seq_len=2**40)), d/'lm-huge.pt')
    ck = torch.load(d/'tr.pt', weights_only=True)
    torch.save({k: v for k, v in ck.items() if k != 'src_vocab'}, d/'tr-novocab.pt')
    torch.save(dict(ck, src_vocab=['a', 'b']), d/'tr-badvocab.pt')
    torch.save(dict(ck, config=dict(ck['config'], emb=2**20, depth=2**10)), d/'tr-huge.pt')
    ck = torch.load(d/'enc.pt', weights_only=True)
    torch.save(dict(ck, config=dict(ck['config'], seq_len=0)), d/'enc-zero.pt')
    (d/'folder.pt').mkdir()
    return d

@pytest.fixture(autouse=True)
def no_code_ran(d):
    "After every case: no file of the traps exists, that is, no code from a model file ran"
    yield
    assert not (d/'trap-open').exists() and not (d/'trap-system').exists(), "a hostile file ran code"

# ---------------------------------------------------------------------------------------------- model files: the loaders
HOSTILE = ['evil.pkl', 'evil-system.pkl', 'evil.pt', 'evil-system.pt']
LOADERS = {'load_classifier': load_classifier, 'load_lm': load_lm, 'load_translator': load_translator,
           'load_encoder_file': load_encoder_file, 'load_checkpoint': lambda p: load_checkpoint(p, 'x/1')}

@pytest.mark.parametrize('name', LOADERS)
@pytest.mark.parametrize('f', HOSTILE)
def test_loaders_refuse_code(d, name, f):
    "Each loader, fed a pickle and a torch.save file whose unpickling would create a file: a one-line refusal saying why"
    with pytest.raises(ValueError) as e: LOADERS[name](d/f)
    msg = str(e.value)
    assert '\n' not in msg and f in msg and re.search(r'pickled Python objects.*run.*code', msg), msg

def test_the_old_learner_pickle_is_refused(d, capsys):
    "A `learn.export` file of the old `tfs classify`: refused, in one line that says why"
    one_line(*tfs(capsys, 'predict', '--model', d/'learner.pkl', 'a good film')[::2], r"learner\.pkl.*pickled Python objects.*run any code")

# ------------------------------------------------------------------------------------------ model files: the subcommands
PREDICT = [('evil.pkl', 'run any code'), ('evil-system.pkl', 'run any code'), ('evil.pt', 'run any code'),
           ('evil-system.pt', 'run any code'), ('empty.pt', 'empty or cut short'), ('random.pt', 'not a checkpoint'),
           ('text.pt', 'not a checkpoint'), ('clf-cut.pt', 'damaged or truncated'), ('lm.pt', 'not a classifier'),
           ('tr.pt', 'not a classifier'), ('enc.pt', 'not a classifier'), ('clf-novocab.pt', "no 'vocab'"),
           ('clf-badconfig.pt', 'damaged: config'), ('clf-mismatch.pt', 'damaged: weights: .*size mismatch'), ('missing.pt', 'no such file'),
           ('folder.pt', 'is a folder'), ('clf-huge.pt', r'config depth: expected an integer in \[1, 1,024\], got 1048576'), ('clf-heads.pt', 'does not divide')]

@pytest.mark.parametrize('f,pattern', PREDICT, ids=[f for f, _ in PREDICT])
def test_predict_bad_model(d, capsys, f, pattern):
    before = left(d)
    code, out, err = tfs(capsys, 'predict', '--model', d/f, 'a good film')
    line = one_line(code, err, pattern)
    assert line.startswith('tfs: error: model:') and f in line and out == '' and left(d) == before

GENERATE = [('evil.pkl', 'run any code'), ('evil.pt', 'run any code'), ('empty.pt', 'empty or cut short'),
            ('random.pt', 'not a checkpoint'), ('lm-cut.pt', 'damaged or truncated'), ('clf.pt', 'not a checkpoint written by `tfs generate'),
            ('tr.pt', 'not a checkpoint written'), ('lm-nodata.pt', "no 'data'"), ('lm-mismatch.pt', 'damaged: weights: '),
            ('missing.pt', 'no such file'), ('lm-huge.pt', r'config seq_len: expected an integer in \[1, 1,048,576\], got \d+'), ('folder.pt', 'is a folder')]

@pytest.mark.parametrize('f,pattern', GENERATE, ids=[f for f, _ in GENERATE])
def test_generate_bad_model(d, capsys, f, pattern):
    code, out, err = tfs(capsys, 'generate', '--model', d/f, '--n', '5')
    assert f in one_line(code, err, pattern) and out == ''

TRANSLATE = [('evil.pt', 'run any code'), ('evil-system.pkl', 'run any code'), ('empty.pt', 'empty or cut short'),
             ('tr-cut.pt', 'damaged or truncated'), ('lm.pt', 'not a model written by `tfs translate'), ('clf.pt', 'not a model written'),
             ('tr-novocab.pt', "no 'src_vocab'"), ('tr-badvocab.pt', 'damaged'), ('text.pt', 'not a checkpoint'),
             ('tr-huge.pt', r'config emb: expected an integer in \[1, 65,536\], got 1048576')]

@pytest.mark.parametrize('f,pattern', TRANSLATE, ids=[f for f, _ in TRANSLATE])
def test_translate_bad_model(d, capsys, f, pattern):
    code, out, err = tfs(capsys, 'translate', '--model', d/f, 'ein hund')
    assert f in one_line(code, err, pattern) and out == ''

ENCODER = [('evil.pkl', 'run any code'), ('evil.pt', 'run any code'), ('empty.pt', 'empty'), ('enc-cut.pt', 'damaged'),
           ('clf.pt', 'not an encoder'), ('lm.pt', 'not an encoder'), ('enc-zero.pt', r'config seq_len: expected an integer in \[1, 1,048,576\], got 0')]

@pytest.mark.parametrize('f,pattern', ENCODER, ids=[f for f, _ in ENCODER])
def test_classify_bad_encoder(d, capsys, tmp_path, f, pattern):
    code, out, err = tfs(capsys, 'classify', '--quick', '--encoder', d/f, '--out', tmp_path/'clf.pt')
    assert f in one_line(code, err, pattern) and left(tmp_path) == []

# ------------------------------------------------------------------------------------ arguments: refused before any work
ARGS = [
    (['generate', '--n', '100000000'], r'--n: n: the number of new tokens must be in \[0, 100,000\]'),
    (['generate', '--n', '-1'], '--n'),
    (['generate', '--temperature', '1e-45'], r'--temperature: .*>= 0\.0001.*greedy'),
    (['generate', '--temperature', 'nan'], r'--temperature: .*>= 0\.0001.*greedy'),
    (['generate', '--temperature', 'inf'], '--temperature'),
    (['generate', '--temperature', '0'], '--temperature'),
    (['generate', '--top-k', '0'], '--top-k'),
    (['generate', '--top-p', '0'], '--top-p'),
    (['generate', '--top-p', 'nan'], '--top-p'),
    (['generate', '--seed', '1e23'], '--seed must be an integer'),
    (['generate', '--seed', str(2**64)], r'--seed must be in \[0, 2\*\*63\)'),
    (['generate', '--prompt', ''], '--prompt'),
    (['translate', '--beam', '1000000'], '--beam must be at most 100'),
    (['translate', '--beam', '0'], '--beam'),
    (['translate', '--quick', '--max-train', '120'], r'--max-train 120.*zero steps'),
    (['translate', '--src', 'en', '--tgt', 'en'], 'differ'),
    (['translate', '--epochs', '100000'], '--epochs must be at most'),
    (['translate', '--seed', '-1'], '--seed'),
    (['classify', '--quick', '--emb', '65536', '--seq-len', '65536'], r'^tfs classify: error: --emb: .*seq_len=65536.* GiB of memory, more than'),
    (['classify', '--quick', '--seq-len', str(10**7)], r'^tfs classify: error: --seq-len: expected an integer in \[1, 1,048,576\], got 10000000'),
    (['classify', '--quick', '--depth', '100000'], r'^tfs classify: error: --depth: expected an integer in \[1, 1,024\], got 100000'),
    (['classify', '--emb', '10', '--heads', '4'], r'^tfs classify: error: --heads: 4 does not divide emb=10'),
    (['classify', '--quick', '--heads', '3'], r'^tfs classify: error: --heads: 3 does not divide emb=64'),
    (['classify', '--epochs', '0'], '--epochs'),
    (['pretrain', '--quick', '--epochs', '5000', '--out', 'x.pt'], '--epochs must be at most'),
    (['pretrain', '--quick'], '--out'),
    (['predict', '--model', 'x.pt', '   '], 'empty'),
]

@pytest.mark.parametrize('args,pattern', ARGS, ids=[' '.join(a) for a, _ in ARGS])
def test_bad_arguments(capsys, tmp_path, monkeypatch, args, pattern):
    monkeypatch.chdir(tmp_path)
    start = time.perf_counter()
    code, out, err = tfs(capsys, *args)
    one_line(code, err, pattern)
    assert out == '' and left(tmp_path) == [] and time.perf_counter() - start < 10   # before any data or training

def test_fp16_on_a_cpu_is_refused(capsys, tmp_path, monkeypatch):
    "fp16 where there is no CUDA would train in fp32 and report fp16: refused before any work"
    import transformers_scratch.training as T
    monkeypatch.setattr(T, 'launch_device', lambda: torch.device('cpu'))     # where `start_run` picks the device
    for prec in ('fp16', 'bf16'):
        code, out, err = tfs(capsys, 'classify', '--quick', '--precision', prec, '--out', tmp_path/'m.pt')
        one_line(code, err, rf'precision: {prec}.*CUDA')
    assert left(tmp_path) == []

# -------------------------------------------------------------------------------------- outputs: checked before any work
OUT_CMDS = {'classify': ['classify', '--quick'], 'generate': ['generate', '--quick'],
            'translate': ['translate', '--quick'], 'pretrain': ['pretrain', '--quick']}

@pytest.mark.parametrize('kind', ['folder', 'under-a-file', 'unwritable'])
@pytest.mark.parametrize('cmd', OUT_CMDS)
def test_out_checked_before_work(capsys, tmp_path, cmd, kind):
    (tmp_path/'file').write_text('a regular file')
    out = {'folder': tmp_path, 'under-a-file': tmp_path/'file'/'m.pt', 'unwritable': Path('/proc/tfs-fault-test.pt')}[kind]
    pattern = {'folder': 'is a folder', 'under-a-file': 'is a file, not a folder', 'unwritable': 'not writable'}[kind]
    start = time.perf_counter()
    code, _, err = tfs(capsys, *OUT_CMDS[cmd], '--out', out)
    assert one_line(code, err, pattern).startswith(f'tfs {cmd}: error: --out')
    assert time.perf_counter() - start < 10 and left(tmp_path) == ['file'] and (tmp_path/'file').read_text() == 'a regular file'

@pytest.mark.parametrize('kind', ['is-a-file', 'under-a-file'])
def test_cache_checked_before_work(capsys, tmp_path, monkeypatch, kind):
    (tmp_path/'file').write_text('x')
    monkeypatch.setenv('TFS_CACHE', str(tmp_path/'file' if kind == 'is-a-file' else tmp_path/'file'/'cache'))
    code, _, err = tfs(capsys, 'classify', '--quick', '--out', tmp_path/'m.pt')
    one_line(code, err, 'TFS_CACHE.*is a file')
    assert left(tmp_path) == ['file']

# ------------------------------------------------------------------------------------------------------------ data files
@pytest.fixture
def data(tmp_path, monkeypatch):
    "A data folder of links to the real datasets, where a test may replace one file"
    root = tmp_path/'data'
    for name in ('imdb_sample', 'multi30k', 'tinyshakespeare'):
        (root/name).mkdir(parents=True)
        for f in (DATA/name).iterdir(): (root/name/f.name).symlink_to(f)
    monkeypatch.setenv('TFS_DATA', str(root)); monkeypatch.setenv('TFS_OFFLINE', '1')
    monkeypatch.setenv('TFS_CACHE', str(tmp_path/'cache'))
    return root

def _replace(p, content):
    p.unlink()
    p.write_bytes(content)

gz = gzip.compress
GOOD_GZ = lambda: gzip.decompress((DATA/'multi30k'/'train.de.gz').read_bytes())
DATA_FAULTS = [
    ('classify', 'imdb_sample/texts.csv', lambda: b'', 'texts.csv'),
    ('classify', 'imdb_sample/texts.csv', lambda: b'label,text\nnegative,\xff\xfe bad bytes\n', r'texts\.csv.*UTF-8'),
    ('classify', 'imdb_sample/texts.csv', lambda: b'a,b\n1,2\n', r'texts\.csv.*missing label, text, is_valid'),
    ('classify', 'imdb_sample/texts.csv', lambda: os.urandom(3000), 'texts.csv'),
    ('translate', 'multi30k/train.de.gz', lambda: gz(GOOD_GZ())[:5000], r'train\.de\.gz.*gzip'),
    ('translate', 'multi30k/train.de.gz', lambda: b'plain text, not gzip\n', r'train\.de\.gz'),
    ('translate', 'multi30k/train.de.gz', lambda: gz(b'\xff\xfe\xfa not utf-8\n'), r'train\.de\.gz.*UTF-8'),
    ('translate', 'multi30k/train.de.gz', lambda: gz(b'ein satz\nzwei\n'), r'train\.de\.gz.*one line per sentence pair'),
    ('translate', 'multi30k/val.en.gz', lambda: gz(b''), r'val\.en\.gz.*empty'),
    ('generate', 'tinyshakespeare/input.txt', lambda: b'', r'input\.txt.*empty'),
    ('generate', 'tinyshakespeare/input.txt', lambda: b'\xff\xfe\x00\x81' * 100, r'input\.txt.*UTF-8'),
]

@pytest.mark.parametrize('cmd,f,content,pattern', DATA_FAULTS, ids=[f'{c}-{f}-{i}' for i, (c, f, _, _) in enumerate(DATA_FAULTS)])
def test_bad_data_file(capsys, tmp_path, data, cmd, f, content, pattern):
    _replace(data/f, content())
    extra = {'classify': [], 'translate': ['--max-train', '200'], 'generate': []}[cmd]
    code, out, err = tfs(capsys, cmd, '--quick', *extra, '--out', tmp_path/'m.pt')
    assert Path(f).name in one_line(code, err, pattern)
    assert not (tmp_path/'m.pt').exists() and not list(tmp_path.glob('.m.pt*'))

# ------------------------------------------------- a data file named with the flag it came through: real `tfs` processes
@pytest.fixture
def every_data(tmp_path):
    "A data folder of links to the real datasets, where a test replaces one file"
    root = tmp_path/'data'
    for name in ('imdb_sample', 'tinyshakespeare', 'ag_news', 'aclImdb_csv'):
        (root/name).mkdir(parents=True)
        for f in (DATA/name).iterdir(): (root/name/f.name).symlink_to(f)
    return root

def _folder(p): p.unlink(); p.mkdir()

SHORT = 'First Citizen: Before we proceed any further, hear me speak.\n\n'
FLAG_FAULTS = [   # (tfs arguments, the file, its new content or a function of its path, what the one line says)
    (['generate'], 'tinyshakespeare/input.txt', b'hello there',
     r"--data tinyshakespeare: data file '.*input\.txt' is too short for char-level training: 11 characters, .*give at least 641 characters"),
    (['generate'], 'tinyshakespeare/input.txt', (SHORT * 11)[:640].encode(), r"--data tinyshakespeare: .*input\.txt.* 640 characters.*at least 641"),
    (['generate'], 'tinyshakespeare/input.txt', b'', r"--data tinyshakespeare: data file '.*input\.txt' is not .*empty"),
    (['generate'], 'tinyshakespeare/input.txt', b'ROMEO:\xff\xfe\x81 ' * 200, r"--data tinyshakespeare: data file '.*input\.txt' is not a UTF-8"),
    (['generate'], 'tinyshakespeare/input.txt', _folder, r"--data tinyshakespeare: data file '.*input\.txt' is not a file \(it is a folder\)"),
    (['generate', '--level', 'word'], 'tinyshakespeare/input.txt', (SHORT * 3).encode(),
     r"--data tinyshakespeare: .*input\.txt' is too short for word-level training .*10 paragraphs at least.*validation texts 0"),
    (['generate', '--data', 'imdb_sample', '--level', 'char'], 'imdb_sample/texts.csv', b'label,text,is_valid\nnegative,bad,False\npositive,good,True\n',
     r"--data imdb_sample: data file '.*texts\.csv' is too short for char-level training: 9 characters"),
    (['classify', '--data', 'ag_news'], 'ag_news/classes.txt', b'\xff\xfeWorld\nSports\nBusiness\nSci/Tech\n',
     r"--data ag_news: data file '.*classes\.txt' is not a UTF-8 text file of class names"),
    (['classify', '--data', 'ag_news'], 'ag_news/classes.txt', b'World\n', r"--data ag_news: .*classes\.txt' .*names 1 classes"),
    (['classify', '--data', 'ag_news'], 'ag_news/test.csv', b'"3","Title \xe9t\xe9","Desc"\n', r"--data ag_news: data file '.*test\.csv' is not a UTF-8 CSV"),
    (['classify', '--data', 'ag_news'], 'ag_news/test.csv', b'"3","Title","Desc","more"\n"1","A","B","C"\n',
     r"--data ag_news: .*test\.csv' .*more fields than its 3 columns"),
    (['classify', '--data', 'ag_news'], 'ag_news/test.csv', b'"3","Title"\n"1","A","B"\n', r"--data ag_news: .*test\.csv' .*1 of its 2 texts are empty"),
    (['classify', '--data', 'imdb'], 'aclImdb_csv/train-00.csv.gz', gz(b'label,text\nnegative,caf\xe9\npositive,good\n'),
     r"--data imdb: data file '.*train-00\.csv\.gz' is not a UTF-8 CSV"),
    (['classify', '--data', 'imdb'], 'aclImdb_csv/train-00.csv.gz', gz(b'label,text\nnegative,"never closed\npositive,good\n'),
     r"--data imdb: data file '.*train-00\.csv\.gz' is not .*ParserError"),
    (['classify', '--data', 'imdb'], 'aclImdb_csv/test-04.csv.gz', gz(b'label,text\nnegative,bad,worse\n'),
     r"--data imdb: .*test-04\.csv\.gz' .*more fields than its 2 columns"),
    (['classify'], 'imdb_sample/texts.csv', b'label,text,is_valid\nnegative,bad,False,x\npositive,good,True,y\n',
     r"--data imdb_sample: .*texts\.csv' .*more fields than its 3 columns"),
]

@pytest.mark.parametrize('args,f,content,pattern', FLAG_FAULTS, ids=[f"{' '.join(a)}-{f}-{i}" for i, (a, f, _, _) in enumerate(FLAG_FAULTS)])
def test_a_data_file_is_named_with_its_flag(tmp_path, every_data, args, f, content, pattern):
    "`tfs` itself: exit 2, one line naming --data and the file (and, for a text too short, the length it needs), nothing trained"
    p = every_data/f
    if callable(content): content(p)
    else: _replace(p, content)
    out = tmp_path/'m.pt'
    r = subprocess.run(['tfs', *args, '--quick', '--out', str(out)], capture_output=True, text=True, timeout=300,
                       env=env(TFS_DATA=str(every_data), TFS_OFFLINE='1', TFS_CACHE=str(tmp_path/'cache')))
    line = one_line(r.returncode, r.stderr, pattern)
    assert line.startswith('tfs') and Path(f).name in line
    assert r.stdout == '' and not out.exists() and not list(tmp_path.glob('.m.pt*'))   # no training (it prints), no model

def test_the_shortest_text_makes_one_window_each_side():
    "The minimum the error above asks for is the true one: at seq_len=64 (--quick), 641 characters give a window each side of the cut, 640 none"
    from transformers_scratch.lmdata import char_dls, ShortTextError
    text = (SHORT * 11)[:641]
    dls = char_dls(text, 64, bs=4, valid_pct=0.1, device='cpu')
    assert len(dls.valid.dataset) == 1 and len(dls.train.dataset) >= 1 and len(dls.train) > 0
    with pytest.raises(ShortTextError, match='640 characters.*give at least 641 characters'): char_dls(text[:-1], 64, bs=4, valid_pct=0.1)

# --------------------------------------------------------------------------- what still works, said once, and real bugs
def test_predict_before_save_equals_after_load_and_truncation_is_said_once(d, capsys):
    learn = load_classifier(d/'clf.pt')
    long = 'a superb lovely film ' * 30
    code, out, err = tfs(capsys, 'predict', '--model', d/'clf.pt', long)
    res = json.loads(out.strip().splitlines()[-1])
    assert code == 0 and res['truncated'] and res['tokens'] > 16
    assert len(err.strip().splitlines()) == 1 and re.match(r'tfs: note: the text has \d+ tokens and the model reads the last 16$', err)
    assert res['label'] == learn.predict(long)[0]
    code, out, err = tfs(capsys, 'predict', '--model', d/'clf.pt', 'a good film')
    assert code == 0 and err == '' and json.loads(out)['truncated'] is False

def test_translate_truncation_is_said_once(d, capsys, monkeypatch):
    monkeypatch.setattr(sys, 'stdin', io.StringIO('ein hund ' * 20 + '\n' + 'der park ' * 20 + '\n'))
    code, out, err = tfs(capsys, 'translate', '--model', d/'tr.pt')
    assert code == 0 and len(out.splitlines()) == 2
    assert len(err.strip().splitlines()) == 1 and 'reads the first 12' in err

def test_beam_above_the_target_vocabulary(d, capsys):
    code, out, err = tfs(capsys, 'translate', '--model', d/'tr.pt', '--beam', '50', 'ein hund')
    one_line(code, err, r'--beam must be at most the model.s \d+ target tokens')

def test_a_bug_keeps_its_traceback(d, capsys, monkeypatch):
    "Unexpected errors are not dressed up as user faults"
    import transformers_scratch.classify as C
    def boom(*a): raise KeyError('a bug')
    monkeypatch.setattr(C, 'predict_text', boom)
    with pytest.raises(KeyError): main(['predict', '--model', str(d/'clf.pt'), 'a good film'])

# ------------------------------------------------------------------- real processes: signals, write faults and pipes
def py(code, *args, stdin=None, timeout=120, **kw):
    "Run `code` in a fresh Python (this tree on the path); the CompletedProcess"
    return subprocess.run([sys.executable, '-c', textwrap.dedent(code), *map(str, args)], input=stdin, capture_output=True,
                          text=True, env=env(), timeout=timeout, **kw)

def proc_one_line(r, pattern, want=2):
    return one_line(r.returncode, r.stderr, pattern, want)

def test_ctrl_c_during_training(tmp_path):
    "Ctrl-C in the middle of training: exit 130, one line, no model file and no temporary file"
    r = py("""
        import os, signal, sys, time, fastai.learner
        # a terminal's Ctrl-C: a background job (`pytest &`) inherits SIGINT ignored and would never see it
        signal.signal(signal.SIGINT, signal.default_int_handler)
        def fit(self, *a, **k):
            os.kill(os.getpid(), signal.SIGINT); time.sleep(5)
        fastai.learner.Learner.fit = fit
        from transformers_scratch.cli import main
        main(['generate', '--quick', '--out', sys.argv[1]])
        """, tmp_path/'m.pt')
    proc_one_line(r, 'interrupted', 130)
    assert left(tmp_path) == []

def test_ctrl_c_during_the_save_keeps_the_earlier_model(d, tmp_path):
    "Ctrl-C while the model is being written: the earlier good file at --out is unchanged, no temporary file is left"
    shutil.copy(d/'lm.pt', tmp_path/'m.pt'); before = (tmp_path/'m.pt').read_bytes()
    r = py("""
        import os, sys
        def fsync(fd): raise KeyboardInterrupt   # the new model is in the temporary file, not yet in place
        os.fsync = fsync
        from transformers_scratch.cli import main
        main(['generate', '--model', sys.argv[1], '--n', '3', '--top-k', '1', '--out', sys.argv[2]])
        """, d/'lm.pt', tmp_path/'m.pt')
    proc_one_line(r, 'interrupted', 130)
    assert (tmp_path/'m.pt').read_bytes() == before and left(tmp_path) == ['m.pt']

@pytest.mark.parametrize('via', ['save_checkpoint', 'tfs generate --out'])
def test_a_write_fault_keeps_the_earlier_file(d, tmp_path, via):
    "A full disk (stand-in: RLIMIT_FSIZE): exit 2 and one line naming the file; the earlier file is unchanged, no temp left"
    target = tmp_path/'m.pt'
    target.write_bytes(b'an earlier good model ' * 10); before = target.read_bytes()
    r = py("""
        import resource, signal, sys, torch
        from transformers_scratch.cli import main
        from transformers_scratch.checkpoints import save_checkpoint
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)            # a write past the limit fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        if sys.argv[1] == 'save_checkpoint':
            try: save_checkpoint(sys.argv[3], 'x/1', torch.nn.Linear(100, 100))
            except OSError as e: print(e, file=sys.stderr); sys.exit(2)
        else: main(['generate', '--model', sys.argv[2], '--n', '3', '--out', sys.argv[3]])
        """, via.split()[0], d/'lm.pt', target)
    line = proc_one_line(r, r'could not write .*m\.pt.*File too large.*nothing was changed')
    assert str(target) in line and target.read_bytes() == before and left(tmp_path) == ['m.pt']

def test_concurrent_writers_never_mix(tmp_path):
    "Four processes saving different models to one path, over and over: the file is always one of them, whole"
    code = """
        import sys, torch
        from transformers_scratch.checkpoints import save_checkpoint
        torch.manual_seed(int(sys.argv[2]))
        m = torch.nn.Linear(200, 100 + int(sys.argv[2]))
        for _ in range(15): save_checkpoint(sys.argv[1], 'x/1', m, writer=int(sys.argv[2]))
        """
    ps = [subprocess.Popen([sys.executable, '-c', textwrap.dedent(code), str(tmp_path/'m.pt'), str(i)], env=env(),
                           stderr=subprocess.PIPE) for i in range(4)]
    assert all(p.wait(120) == 0 for p in ps), [p.stderr.read() for p in ps]
    ck = load_checkpoint(tmp_path/'m.pt', 'x/1')
    assert ck['state_dict']['weight'].shape == (100 + ck['writer'], 200)
    torch.manual_seed(ck['writer'])
    assert torch.equal(ck['state_dict']['weight'], torch.nn.Linear(200, 100 + ck['writer']).weight.detach())
    assert left(tmp_path) == ['m.pt']

def test_broken_pipe(d, tmp_path):
    "`tfs translate --model M < many lines | head -1`: no traceback, one line, exit 2"
    (tmp_path/'in.txt').write_text('ein hund im park\n' * 5000)
    with open(tmp_path/'in.txt') as f:
        p = subprocess.Popen([sys.executable, '-c', 'from transformers_scratch.cli import main; main()', 'translate', '--model',
                              str(d/'tr.pt')], stdin=f, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=env())
        p.stdout.readline(); p.stdout.close()                 # what `head -1` does
        err = p.stderr.read().decode(); p.wait(120)
    one_line(p.returncode, err, 'broken pipe')

def test_closed_stdout(d):
    "`tfs predict ... >&-`: the result has nowhere to go: exit 2 and one line, not exit 0 with the result lost"
    r = subprocess.run(f"'{sys.executable}' -c 'from transformers_scratch.cli import main; main()' predict --model "
                       f"'{d/'clf.pt'}' 'a good film' >&-", shell=True, capture_output=True, text=True,
                       env=env(), timeout=120)
    proc_one_line(r, 'standard output is closed')
