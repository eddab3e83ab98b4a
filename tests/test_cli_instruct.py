"""`tfs instruct` and `tfs generate --model` with an instruction-tuned model (lesson 52, issue 34), run in-process.
Cheap on purpose: nothing is trained here. A tiny untrained model saved with `save_instruct` exercises loading, answering
and the standard-input mode (its answers are nonsense, so each is compared with `answer` called directly); `tfs instruct`'s
argument plumbing runs against a stub of `run_instruct`."""
import io, json, sys
import pytest, torch
from faultkit import tfs, one_line, left
import transformers_scratch.instruct as I
import transformers_scratch.runs as runs
from transformers_scratch.config import ModelConfig
from transformers_scratch.models import GenerationTransformer
from transformers_scratch.checkpoints import save_checkpoint

@pytest.fixture(scope='module')
def tiny(tmp_path_factory):
    "A tiny untrained instruction model as `tfs instruct --out` saves it, and what `load_instruct` reads back from it"
    d = tmp_path_factory.mktemp('instruct')
    tok = I.instruct_tokenizer()
    torch.manual_seed(0)
    I.save_instruct(GenerationTransformer(ModelConfig(emb=16, heads=2, depth=1, seq_len=64, n_tokens=len(tok))), tok, d/'tiny.pt')
    model, tok = I.load_instruct(d/'tiny.pt')
    return d/'tiny.pt', model, tok

def said(model, tok, instruction, input='', n=8):
    "What `tfs generate` prints for one instruction: `answer`'s text on one line"
    return ' '.join(I.answer(model, tok, instruction, input, max_new=n).splitlines())

def test_prompt_is_answered_as_an_instruction(capsys, tiny):
    f, model, tok = tiny
    code, out, err = tfs(capsys, 'generate', '--model', f, '--prompt', 'Reverse the word: cat', '--n', '8')
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == said(model, tok, 'Reverse the word: cat') and len(lines) == 2
    res = json.loads(lines[-1])
    assert res['answers'] == 1 and res['model'] == str(f) and {'seconds', 'device'} <= set(res)

def test_input_goes_into_the_template(capsys, tiny):
    f, model, tok = tiny
    code, out, err = tfs(capsys, 'generate', '--model', f, '--prompt', 'Is this review positive or negative?', '--input', 'A fine film.', '--n', '8')
    assert code == 0, err
    assert out.splitlines()[0] == said(model, tok, 'Is this review positive or negative?', 'A fine film.')

def test_standard_input_one_instruction_a_line(capsys, monkeypatch, tiny):
    "One answer a line, a blank line kept blank (the answers stay aligned with their lines), an input after a tab, then the JSON line"
    f, model, tok = tiny
    monkeypatch.setattr(sys, 'stdin', io.StringIO('Spell the word: dog\n\nIs this review positive or negative?\tA fine film.\n'))
    code, out, err = tfs(capsys, 'generate', '--model', f, '--n', '8')
    assert code == 0, err
    lines = out.splitlines()
    assert lines[:3] == [said(model, tok, 'Spell the word: dog'), '', said(model, tok, 'Is this review positive or negative?', 'A fine film.')]
    assert json.loads(lines[3])['answers'] == 2 and len(lines) == 4

@pytest.mark.parametrize('stdin,pattern,printed', [
    ('', 'no instruction on standard input', 0), ('\n  \n', 'no instruction on standard input', 2),
    ('\tA fine film.\n', r'line 1: an input with no instruction', 0),
    ('Spell the word: dog\n' + 'x' * 100 + '\n', r'standard input, line 2: the prompt is \d+ tokens, and the model reads 64', 1),
    ('Spell the word: dog\n' + b'caf\xe9'.decode('utf-8', 'surrogateescape') + '\n', r'line 2: not valid UTF-8 text.*nothing after it was answered', 1)])
def test_standard_input_faults(capsys, monkeypatch, tiny, stdin, pattern, printed):
    monkeypatch.setattr(sys, 'stdin', io.StringIO(stdin))
    code, out, err = tfs(capsys, 'generate', '--model', tiny[0], '--n', '4')
    assert one_line(code, err, pattern).startswith('tfs generate: error:')
    assert len(out.splitlines()) == printed and 'answers' not in out   # the lines before the fault were answered; no JSON line

def test_unknown_characters_are_noted(capsys, tiny):
    code, out, err = tfs(capsys, 'generate', '--model', tiny[0], '--prompt', 'Spell the word: ☃', '--n', '4')
    assert code == 0 and "does not know the characters '☃'" in err

@pytest.mark.parametrize('args,pattern', [
    (['--prompt', ' '], r'--prompt is empty: give an instruction'),
    (['--prompt', 'x' * 100], r'--prompt: the prompt is \d+ tokens, and the model reads 64; shorten it'),
    (['--prompt', 'Spell the word: dog', '--n', '0'], r'--n: an answer needs at least one new token'),
    (['--prompt', 'Spell the word: dog', '--input', ' '], r'--input is empty'),
    (['--input', 'A fine film.'], r'--input goes with --prompt'),
    (['--prompt', 'Spell the word: dog', '--top-k', '5', '--temperature', '0.5'], r'instruction-tuned model, which answers greedily.*drop --top-k, --temperature'),
    (['--prompt', 'Spell the word: dog', '--quick', '--data', 'imdb_sample'], r'drop --data, --out, --quick'),
])
def test_flags_an_answer_cannot_take(capsys, tmp_path, tiny, args, pattern):
    code, out, err = tfs(capsys, 'generate', '--model', tiny[0], *args, '--out', tmp_path/'m.pt') if '--quick' in args else \
        tfs(capsys, 'generate', '--model', tiny[0], *args)
    assert one_line(code, err, pattern).startswith('tfs generate: error:') and out == '' and left(tmp_path) == []

def test_input_needs_an_instruction_model(capsys, tmp_path, tiny):
    "--input is an instruction model's flag: without --model, or with a file of another kind, missing or damaged, one line says so"
    code, out, err = tfs(capsys, 'generate', '--input', 'A fine film.')
    one_line(code, err, r'--input goes with --model, an instruction-tuned model saved by `tfs instruct --out`')
    f, model, tok = tiny
    save_checkpoint(tmp_path/'lm.pt', 'transformers_scratch.lm/2', model, config={})   # another kind of checkpoint
    code, out, err = tfs(capsys, 'generate', '--model', tmp_path/'lm.pt', '--prompt', 'Spell the word: dog', '--input', 'x')
    one_line(code, err, r"model: '.*lm\.pt' is not an instruction-tuned model \(tfs instruct\)")
    code, out, err = tfs(capsys, 'generate', '--model', tmp_path/'none.pt', '--prompt', 'Spell the word: dog', '--input', 'x')
    one_line(code, err, r"model: no such file .*none\.pt.*tfs instruct")

def test_damaged_instruction_model(capsys, tmp_path, tiny):
    "A file of the instruction format whose vocabulary disagrees with its model: one line, from `load_instruct`"
    ck = torch.load(tiny[0], weights_only=True)
    ck['vocab'] = ck['vocab'][:-1]
    torch.save(ck, tmp_path/'bad.pt')
    code, out, err = tfs(capsys, 'generate', '--model', tmp_path/'bad.pt', '--prompt', 'Spell the word: dog')
    one_line(code, err, r"bad\.pt' is not an instruction-tuned model \(tfs instruct\) \(damaged: vocab")

# --------------------------------------------------------------------------------------------------- tfs instruct
@pytest.fixture
def stub(monkeypatch):
    "`run_instruct` replaced by a stub that records its arguments and returns a result shaped like its own: plumbing only, nothing trained"
    calls = []
    def run_instruct(**kw):
        calls.append(kw)
        m = {'spell': {'n': 3, 'exact': 1.0, 'stops': 1.0}, 'translate': {'n': 3, 'exact': 0.0, 'stops': 1.0, 'bleu': 12.5}}
        return dict(device='cpu', precision='fp32', loss_on=kw['loss_on'], lora=kw['lora'], seed=kw['seed'], tuned=m, base=m,
                    tune_loss=float('nan'), path=str(kw['out']), model=object(), tokenizer=object())
    monkeypatch.setattr(runs, 'run_instruct', run_instruct)
    return calls

def test_instruct_plumbing(capsys, tmp_path, stub):
    code, out, err = tfs(capsys, 'instruct', '--quick', '--out', tmp_path/'m.pt', '--seed', '3', '--lora', '4', '--loss-on', 'all', '--no-base')
    assert code == 0, err
    kw = stub[0]
    assert kw['recipe'] is I.INSTRUCT_QUICK and kw['out'] == str(tmp_path/'m.pt') and kw['seed'] == 3
    assert kw['lora'] == (4, 8.0) and kw['loss_on'] == 'all' and kw['base'] is False
    res = json.loads(out.splitlines()[-1])
    assert res['tuned']['translate']['bleu'] == 12.5 and res['tune_loss'] is None and res['quick'] is True   # NaN: null, noted
    assert 'model' not in res and 'tokenizer' not in res and 'tune_loss' in err
    code, out, err = tfs(capsys, 'instruct', '--quick', '--out', tmp_path/'m.pt', '--lora', '2', '--lora-alpha', '1.5')
    assert code == 0 and stub[1]['lora'] == (2, 1.5) and stub[1]['base'] is True and stub[1]['loss_on'] == 'response'

def test_full_configuration_on_a_cpu_is_noted(capsys, tmp_path, monkeypatch, stub):
    import transformers_scratch.runtime as R
    monkeypatch.setattr(R, 'default_device', lambda: torch.device('cpu'))
    code, out, err = tfs(capsys, 'instruct', '--out', tmp_path/'m.pt')
    assert code == 0 and stub[0]['recipe'] is I.INSTRUCT_FULL and 'meant for a GPU' in err

@pytest.mark.parametrize('args,pattern', [
    (['--lora-alpha', '8'], r'--lora-alpha scales LoRA.*give --lora R too'),
    (['--lora', '0'], r'--lora must be a positive integer'),
    (['--lora', '100000'], r'--lora must be at most the model.s width emb=\d+'),
    (['--lora', '4', '--lora-alpha', '-1'], r'--lora-alpha must be a positive number, got -1'),
    (['--lora', '4', '--lora-alpha', 'inf'], r'--lora-alpha must be a positive number, got inf'),
    (['--lora', '4', '--lora-alpha', 'nan'], r'--lora-alpha must be a positive number, got nan'),
    (['--out', ''], r'--out is empty'),
    (['--seed', '-1'], r'--seed'),
    (['--loss-on', 'prompt'], r'invalid choice'),
])
def test_instruct_bad_arguments(capsys, tmp_path, monkeypatch, stub, args, pattern):
    monkeypatch.chdir(tmp_path)
    code, out, err = tfs(capsys, 'instruct', '--quick', *args)
    one_line(code, err, pattern)
    assert out == '' and stub == [] and left(tmp_path) == []

@pytest.mark.parametrize('kind', ['folder', 'under-a-file'])
def test_instruct_out_checked_before_training(capsys, tmp_path, stub, kind):
    (tmp_path/'file').write_text('x')
    out = tmp_path if kind == 'folder' else tmp_path/'file'/'m.pt'
    code, _, err = tfs(capsys, 'instruct', '--quick', '--out', out)
    assert one_line(code, err, 'is a folder' if kind == 'folder' else 'is a file, not a folder').startswith('tfs instruct: error: --out')
    assert stub == [] and left(tmp_path) == ['file']
