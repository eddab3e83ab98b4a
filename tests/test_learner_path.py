"""The learner's path (issue 23): checks report in a notebook and return the function the lesson goes on with (the
learner's-namespace runs of each lesson's checks are in test_colab_run.py, after each Run all); stubs ask instead of answer; no exercise is
defined twice; every lesson a lesson cites exists and holds what is cited; no link leads nowhere in Colab."""
import ast, contextlib, importlib, io, json, re, pathlib
import pytest
from transformers_scratch.checks.toolkit import CheckError
from conftest import stub

ROOT = pathlib.Path(__file__).resolve().parents[1]
NBS = sorted((ROOT/'nbs').glob('[0-9]*.ipynb'))
CALL = re.compile(r'^\s*\w+\s*=\s*(check_\w+)\(\s*my_\w+', re.M)

def _nb(p): return json.loads(p.read_text(encoding='utf-8'))
def _code(nb): return [''.join(c['source']) for c in nb['cells'] if c['cell_type'] == 'code']
def _default_exp(nb):
    for s in _code(nb):
        m = re.search(r'^#\|\s*default_exp\s+([\w.]+)', s, re.M)
        if m: return m.group(1)

EXERCISE_NBS = [p for p in NBS if any(CALL.search(s) for s in _code(_nb(p)))]
CHECK_MODULES = sorted(f.stem for f in (ROOT/'transformers_scratch'/'checks').glob('*.py') if f.stem != '__init__')

def _checks():
    out = []
    for m in CHECK_MODULES:
        mod = importlib.import_module(f'transformers_scratch.checks.{m}')
        out += [(m, k) for k, v in vars(mod).items() if k.startswith('check_') and callable(v) and getattr(v, '__module__', '') == mod.__name__]
    return out

def test_every_lesson_with_exercises_is_tested_in_its_own_namespace():
    assert len(EXERCISE_NBS) >= 14, [p.name for p in EXERCISE_NBS]
    for p in EXERCISE_NBS:
        mod = _default_exp(_nb(p)).split('.')[-1]
        assert (ROOT/'tests'/f'test_exercises_{mod}.py').exists(), f"{p.name}: no tests/test_exercises_{mod}.py"

@pytest.mark.parametrize('m,name', _checks(), ids=lambda x: str(x))
def test_a_check_reports_and_returns_the_lesson_function(m, name, monkeypatch):
    "In a notebook (no TFS_CHECKS) a stub gives one line, `○ ... not solved yet`, and the library's version comes back"
    monkeypatch.delenv('TFS_CHECKS', raising=False)
    check = getattr(importlib.import_module(f'transformers_scratch.checks.{m}'), name)
    sol = getattr(check, 'solution', None)
    assert isinstance(sol, str), f"{name}: @checker(solution='module.name') names the library's version"
    lib = getattr(importlib.import_module(f"transformers_scratch.{sol.rsplit('.', 1)[0]}"), sol.rsplit('.', 1)[1])
    out = io.StringIO()
    with contextlib.redirect_stdout(out): got = check(stub)
    lines = out.getvalue().strip().splitlines()
    assert got is lib and len(lines) == 1 and lines[0].startswith(f"○ {name}: not solved yet"), (got, lines)
    monkeypatch.setenv('TFS_CHECKS', 'raise')
    with pytest.raises(CheckError, match='not solved yet'): check(stub)

def test_a_check_returns_the_learners_function_once_it_passes(monkeypatch):
    from transformers_scratch.checks.start import check_double
    monkeypatch.delenv('TFS_CHECKS', raising=False)
    def mine(x): return x * 2
    out = io.StringIO()
    with contextlib.redirect_stdout(out): assert check_double(mine) is mine
    assert out.getvalue().startswith('✓ check_double: passed — your mine is used from here on')
    def wrong(x): return x + 2
    with contextlib.redirect_stdout(out): assert check_double(wrong).__module__ == 'transformers_scratch.checks.start'
    assert '✗ check_double: you added 2' in out.getvalue()

def test_a_crash_in_the_checks_own_code_is_not_the_learners(monkeypatch):
    from transformers_scratch.checks.toolkit import checker
    monkeypatch.delenv('TFS_CHECKS', raising=False)
    @checker
    def check_buggy(fn):
        fn(1)
        return undefined_name   # noqa: F821 — the check's own bug
    out = io.StringIO()                      # in a notebook the check's own crash is one line, never a stop of Run all
    with contextlib.redirect_stdout(out): check_buggy(lambda x: x)
    assert out.getvalue().count('\n') == 1 and "✗ check_buggy: the check could not read" in out.getvalue()
    monkeypatch.setenv('TFS_CHECKS', 'raise')    # in the tests it keeps its traceback: the course's bug shows
    with pytest.raises(NameError): check_buggy(lambda x: x)
    monkeypatch.delenv('TFS_CHECKS')
    def learner(x): return undefined_in_learner   # noqa: F821
    out = io.StringIO()
    with contextlib.redirect_stdout(out): check_buggy(learner)
    assert "✗ check_buggy: your code raised NameError" in out.getvalue()

@pytest.mark.parametrize('p', NBS, ids=lambda p: p.stem)
def test_no_exercise_is_defined_twice(p):
    names = [m.group(1) for s in _code(_nb(p)) for m in re.finditer(r'^def (my_\w+)', s, re.M)]
    assert len(names) == len(set(names)), f"{p.name} defines {sorted(n for n in set(names) if names.count(n) > 1)} twice"

def _solutions(nb):
    "name -> source of the solution cells (`# @title Solution`)"
    out = {}
    for s in _code(nb):
        if re.search(r'^#\s*@title Solution', s, re.M):
            try: body = ast.parse('\n'.join(l for l in s.splitlines() if not l.lstrip().startswith('#|'))).body
            except SyntaxError: continue
            src = '\n'.join(l for l in s.splitlines() if not l.lstrip().startswith('#|')).splitlines()
            for n in body:
                if not isinstance(n, (ast.FunctionDef, ast.ClassDef)): continue
                stmts = [b for b in n.body if not (isinstance(b, ast.Expr) and isinstance(getattr(b, 'value', None), ast.Constant))]
                if stmts: out[n.name] = '\n'.join(src[stmts[0].lineno - 1:n.end_lineno])   # the body, without signature and docstring
    return out

LEAK = 18   # characters of a solution's code (spaces removed) that a stub may not repeat

def _longest_common(a, b):
    "The longest common substring of `a` and `b`"
    best, prev = '', [0] * (len(b) + 1)
    for i in range(1, len(a) + 1):
        cur = [0] * (len(b) + 1)
        for j in range(1, len(b) + 1):
            if a[i - 1] == b[j - 1]:
                cur[j] = prev[j - 1] + 1
                if cur[j] > len(best): best = a[i - cur[j]:i]
        prev = cur
    return best

@pytest.mark.parametrize('p', EXERCISE_NBS, ids=lambda p: p.stem)
def test_stubs_ask_and_do_not_answer(p):
    "No line of a solution's code appears in its stub (docstring or TODO), and every exercise has a folded hint under it"
    nb = _nb(p)
    sols, cells = _solutions(nb), nb['cells']
    norm = lambda s: re.sub(r'\s+', '', s)
    for i, c in enumerate(cells):
        s = ''.join(c['source'])
        m = re.search(r'^def (my_(\w+))\(', s, re.M)
        if c['cell_type'] != 'code' or not m: continue
        assert 'raise TODO(' in s, f"{p.name}: {m.group(1)} is not a stub"
        nxt = next(''.join(d['source']) for d in cells[i + 1:] if d['cell_type'] == 'code')
        assert nxt.lstrip().startswith('# @title Hint'), f"{p.name}: no folded hint cell under {m.group(1)}"
        body = sols.get(m.group(2), '')
        stub = norm(s.split(')', 1)[1] if s.lstrip().startswith('def ') else s)       # docstring and TODO, not the signature
        for line in body.splitlines():
            code = norm(line.split('#')[0])
            common = _longest_common(code, stub)
            assert len(common) < LEAK or not re.search(r'[(@=\[]', common), \
                f"{p.name}: the stub {m.group(1)} gives away the solution: {common!r} (from {line.strip()!r})"

def _markdown_and_comments(nb):
    for c in nb['cells']:
        s = ''.join(c['source'])
        yield s if c['cell_type'] == 'markdown' else '\n'.join(re.findall(r'#(.*)$', s, re.M))

LESSONS = {re.match(r'(\d\d[a-z]?)_', p.name).group(1): p for p in NBS}

def _defined(p):
    "Names the notebook `p` defines at top level (its exported module's too)"
    names = set()
    for s in _code(_nb(p)):
        try: body = ast.parse('\n'.join(l for l in s.splitlines() if not l.lstrip().startswith(('#|', '%', '!')))).body
        except SyntaxError: continue
        for n in ast.walk(ast.Module(body=body, type_ignores=[])):   # functions, classes, methods, their arguments, names assigned
            if isinstance(n, (ast.FunctionDef, ast.ClassDef)): names.add(n.name)
            if isinstance(n, ast.FunctionDef): names.update(a.arg for a in n.args.args + n.args.kwonlyargs)
            elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store): names.add(n.id)
            elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store): names.add(n.attr)
    return names

@pytest.mark.parametrize('p', NBS + sorted((ROOT/'nbs'/'checks').glob('*.ipynb')), ids=lambda p: p.stem)
def test_cited_lessons_exist_and_hold_what_is_cited(p):
    bad = []
    for text in _markdown_and_comments(_nb(p)):
        for m in re.finditer(r'\blessons? (\d\d[a-z]?)\b', text):
            if m.group(1) not in LESSONS: bad.append(f"cites lesson {m.group(1)}, which does not exist")
        for pat in (r'`(\w+)[^`]*`\s*\((?:from |in )?lesson (\d\d[a-z]?)\)', r"lesson (\d\d[a-z]?)'s `(\w+)"):
            for m in re.finditer(pat, text):
                name, num = (m.group(1), m.group(2)) if pat.startswith('`') else (m.group(2), m.group(1))
                if num in LESSONS and name not in _defined(LESSONS[num]):
                    bad.append(f"cites `{name}` in lesson {num} ({LESSONS[num].name}), which does not define it")
    assert not bad, f"{p.name}: {sorted(set(bad))}"

@pytest.mark.parametrize('p', [q for q in NBS + sorted((ROOT/'handout').glob('[0-9]*.ipynb'))], ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_no_relative_notebook_links(p):
    "Colab opens one notebook: a link to a relative `.ipynb` path leads nowhere there"
    bad = [m.group(0) for c in _nb(p)['cells'] if c['cell_type'] == 'markdown'
           for m in re.finditer(r'\]\((?!https?://)[^)]*\.ipynb[^)]*\)', ''.join(c['source']))]
    assert not bad, f"{p.name}: {bad}"
