"Issue 16: the model modules hold models only; each lesson's checks live in `transformers_scratch.checks.<lesson>`."
import importlib, inspect, re, subprocess, sys
import pytest

VALIDATORS = set()   # argument validators are named validate_* (issue 16): check_ means an exercise check
LESSONS = 'selfattention attention masks positions block bpe generate lmdata lm gpt2 seq2seq mlm interpret lora instructdata instruct'.split()

@pytest.mark.parametrize('mod', LESSONS)
def test_model_modules_work_without_their_checks(mod):
    "A model module imports no checks (checks import models, never the reverse) and forwards no `check_*` names"
    import subprocess, sys
    code = (f"import sys; sys.modules['transformers_scratch.checks'] = None; import transformers_scratch.{mod} as m; "
            f"assert not [n for n in dir(m) if n.startswith('check_')], dir(m)")
    r = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    assert [n for n in importlib.import_module(f'transformers_scratch.checks.{mod}').__all__ if n.startswith('check_')]

@pytest.mark.parametrize('mod', LESSONS)
def test_model_modules_define_no_checks(mod):
    m = importlib.import_module(f'transformers_scratch.{mod}')
    src = inspect.getsource(m)
    defs = set(re.findall(r'^def (check_\w+)', src, re.M)) - VALIDATORS
    assert not defs and '@checker' not in src, f"{mod}.py defines an exercise check: {defs}"
    for bad in ('Runs(', 'on_device(', 'diagnose(', 'call_checked(', 'expect('):
        assert bad not in src, f"{mod}.py uses grading code: {bad}"
    assert not any(n.startswith('check_') and n not in VALIDATORS for n in getattr(m, '__all__', []))

def test_model_modules_import_no_grading_code():
    code = ("import sys, transformers_scratch.attention, transformers_scratch.block, transformers_scratch.seq2seq, "
            "transformers_scratch.mlm, transformers_scratch.generate, transformers_scratch.gpt2, "
            "transformers_scratch.hub, transformers_scratch.llama, transformers_scratch.modern, transformers_scratch.config, "
            "transformers_scratch.checkpoints\n"
            "print(sorted(k for k in sys.modules if k.startswith('transformers_scratch.checks')))")
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == '[]', out

def test_unknown_names_still_raise():
    import transformers_scratch.attention as a
    with pytest.raises(AttributeError): a.no_such_name
    with pytest.raises(AttributeError): a.check_no_such_check

ROOT = __import__('pathlib').Path(__file__).resolve().parents[1]
NBS = {'selfattention': '01_selfattention', 'attention': '03_attention', 'masks': '02_masks', 'positions': '04_positions',
       'block': '05_block', 'bpe': '19_bpe', 'generate': '20_generate', 'lmdata': '20a_lmdata', 'lm': '21_lm', 'gpt2': '24_gpt2', 'seq2seq': '30_seq2seq',
       'mlm': '40_mlm', 'interpret': '29_inside', 'lora': '50_lora', 'instructdata': '51_instructdata', 'instruct': '52_instruct'}

@pytest.mark.parametrize('mod', LESSONS)
def test_check_cells_folded_above_their_exercise(mod):
    "One layout everywhere: prose -> folded check definition -> `#| exercise` stub and call -> solution -> check on it"
    import json
    cells = [c for c in json.loads((ROOT/'nbs'/f'{NBS[mod]}.ipynb').read_text(encoding='utf-8'))['cells'] if c['cell_type'] == 'code']
    src = [''.join(c['source']) for c in cells]
    defs = [i for i, s in enumerate(src) if re.match(rf'#\|\s*export checks\.{mod}\b', s)]
    assert defs, f"{NBS[mod]}: no cell exports to checks.{mod}"
    for i in defs:
        s, names = src[i], re.findall(r'^def (check_\w+)', src[i], re.M)
        assert cells[i]['metadata'].get('cellView') == 'form' and '#| code-fold: true' in s, f"{names}: not folded"
        assert re.search(r'^# @title check_', s, re.M), f"{names}: no `# @title check_...` for Colab's form view"
        for n in names:
            uses = [j for j, t in enumerate(src) if j != i and re.search(rf'\b{n}\(', t)]
            assert uses and min(uses) > i, f"{NBS[mod]}: {n} is called before the cell that defines it"
    for i, s in enumerate(src):   # no check defined anywhere else, so the model module holds none
        if re.match(r'#\|\s*export\s*$', s.split('\n')[0]): assert '@checker' not in s, f"{NBS[mod]}: a check in an `#| export` cell"
