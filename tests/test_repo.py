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
    assert 'pytest' in cmds[1] and 'pip install' in cmds[1]
    # the notebooks run inside pytest, as a Colab learner runs them (tests/test_colab_run.py), not by nbdev_test,
    # which skips the exercise, slow and GPU cells a learner runs
    assert 'nbdev_test' not in cmds[1] and (ROOT/'tests'/'test_colab_run.py').exists()

def test_ci_runs_the_readme_test_command():
    install, tests = readme_commands()[1].split(' && ', 1)
    ci = (ROOT/'.ci'/'run').read_text()
    assert tests in ci, f"the README's test command {tests!r} is not what .ci/run runs"
    assert '-e ".[dev]"' in install and '-e ".[dev]"' in ci

def test_ci_checks_sync_with_the_tooling_venv():
    ci = (ROOT/'.ci'/'run').read_text()
    assert "nbdev==2.4.14" in ci and "'fastcore<2'" in ci and '"$TOOLS/bin/nbdev_export"' in ci and '"$TOOLS/bin/nbdev_clean"' in ci
    assert 'tfs handout --src nbs --dest handout' in ci and 'git status --porcelain -- handout' in ci
    assert 'handout/' not in (ROOT/'.gitignore').read_text().split()

@pytest.mark.parametrize('p', [p for p in NBS if any('import nbdev' in src(c) for c in cells(p))], ids=lambda p: p.name)
def test_export_cell_does_nothing_in_colab(p, tmp_path, monkeypatch):
    "The export cell writes the library only in a development checkout: in Colab (no nbdev, no settings.ini) it does nothing"
    ex = [src(c) for c in cells(p) if 'import nbdev' in src(c)]
    assert len(ex) == 1 and src(cells(p)[-1]) == ex[0], f"{p.name}: one export cell, the last"
    last = ex[0]
    monkeypatch.chdir(tmp_path)
    with mock.patch.dict(sys.modules, {'nbdev': None}): exec(last, {})            # no nbdev: no error
    fake = types.ModuleType('nbdev'); fake.nbdev_export = mock.Mock()
    with mock.patch.dict(sys.modules, {'nbdev': fake}): exec(last, {})            # nbdev but no checkout: nothing
    fake.nbdev_export.assert_not_called()
    monkeypatch.chdir(ROOT/'nbs')
    with mock.patch.dict(sys.modules, {'nbdev': fake}): exec(last, {})            # in the checkout's nbs/: exports
    fake.nbdev_export.assert_called_once()

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
    for mod in exps: assert (ROOT/'transformers_scratch'/(mod.replace('.', '/') + '.py')).exists(), mod

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

def test_readme_links_both_editions_of_every_lesson():
    readme = (ROOT/'README.md').read_text(encoding='utf-8')
    from transformers_scratch.handout import is_internal
    for p in NBS:
        if p.name == 'index.ipynb': continue
        if is_internal(json.loads(p.read_text(encoding='utf-8'))):   # library internals: no learner's edition, listed apart
            assert f'(nbs/{p.name})' in readme and not (ROOT/'handout'/p.name).exists(), p.name
            continue
        assert f'(nbs/{p.name})' in readme and f'(handout/{p.name})' in readme, p.name
        assert (ROOT/'handout'/p.name).exists(), f"handout/{p.name} missing: run tfs handout and commit handout/"

def test_ruff_is_clean():
    "pyflakes' rules (pyproject.toml) over the library, checks, tests, benchmarks, tools and notebooks: what CI's lint step runs"
    import shutil, subprocess
    ruff = shutil.which('ruff')
    assert ruff, "ruff is a dev requirement: pip install -e '.[dev]'"
    r = subprocess.run([ruff, 'check', '--output-format', 'concise'], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-1000:]
