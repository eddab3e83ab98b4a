"The project's shape: README commands, CI script, notebooks, the Colab install cell, the handout."
import json, re, subprocess, sys, types, pathlib
from unittest import mock
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
NBS = sorted((ROOT/'nbs').glob('*.ipynb'))

def cells(p): return json.loads(p.read_text(encoding='utf-8'))['cells']
def src(c): return ''.join(c['source'])

def readme_commands():
    return re.findall(r'```sh\n(.*?)\n```', (ROOT/'README.md').read_text(encoding='utf-8'), re.S)

def test_readme_has_two_commands():
    cmds = readme_commands()
    assert len(cmds) == 2, cmds
    assert 'tfs classify' in cmds[0] and 'pip install' in cmds[0]
    assert 'nbdev_test' in cmds[1] and 'pytest' in cmds[1] and 'pip install' in cmds[1]

def test_ci_runs_the_readme_test_command():
    install, tests = readme_commands()[1].split(' && ', 1)
    ci = (ROOT/'.ci'/'run').read_text()
    assert tests in ci, f"the README's test command {tests!r} is not what .ci/run runs"
    assert '-e ".[dev]"' in install and '-e ".[dev]"' in ci

def test_readme_is_generated_from_index(tmp_path):
    before = (ROOT/'README.md').read_text(encoding='utf-8')
    subprocess.run([sys.executable, 'tools/make_readme.py'], cwd=ROOT, check=True, capture_output=True)
    assert (ROOT/'README.md').read_text(encoding='utf-8') == before, "README.md is stale: run python tools/make_readme.py"

def test_one_module_per_notebook():
    exps = {}
    for p in NBS:
        for c in cells(p):
            m = re.search(r'^#\|\s*default_exp\s+(\S+)', src(c), re.M)
            if m:
                assert m.group(1) not in exps, f"{p.name} and {exps[m.group(1)]} both export {m.group(1)}"
                exps[m.group(1)] = p.name
    for mod in exps: assert (ROOT/'transformers_scratch'/f'{mod}.py').exists()

def colab_cell(p):
    for c in cells(p):
        if 'google.colab' in src(c): return src(c)

@pytest.mark.parametrize('p', [p for p in NBS if p.name != 'index.ipynb'], ids=lambda p: p.name)
def test_lessons_open_with_badge_and_colab_install(p):
    cs = cells(p)
    assert any('colab-badge.svg' in src(c) and p.name in src(c) for c in cs[:4]), f"{p.name}: no Open in Colab badge for itself"
    code = colab_cell(p)
    assert code is not None, f"{p.name}: no Colab install cell"
    code = '\n'.join(l for l in code.splitlines() if not l.startswith('#|'))
    with mock.patch('subprocess.run') as run:          # elsewhere: does nothing
        mods = dict(sys.modules); mods.pop('google.colab', None)
        with mock.patch.dict(sys.modules, mods, clear=True): exec(code, {})
        run.assert_not_called()
    with mock.patch('subprocess.run') as run, mock.patch.dict(sys.modules, {'google.colab': types.ModuleType('google.colab')}):
        exec(code, {})                                  # in Colab: pip installs the library
        args = run.call_args[0][0]
        assert args[1:4] == ['-m', 'pip', 'install'] and any('transformers_scratch' in a for a in args)

def test_notebooks_have_no_stray_outputs_metadata():
    for p in NBS:
        for c in cells(p):
            assert set(c.get('metadata', {})) <= {'cellView'}, f"{p.name}: run nbdev_clean"
