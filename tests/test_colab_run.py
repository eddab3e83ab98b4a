"""The learner's run: every lesson as Colab's *Run all* runs it (tools/colab_run.py), two notebooks at a time.

Every code cell in order, `#| slow`/`#| cuda`/`#| exercise` included, in an empty temporary folder, without nbdev,
`TFS_QUICK` and `TFS_CHECKS` unset (so each cell decides from the device, the CPU here, and each check reports as it
does for a learner). Like Colab, a notebook stops at its first exception, exercise cells included: that fails it. Both
editions run: the solutions edition (`nbs/`) and the learner's edition (`handout/`) of every lesson whose code differs
from it beyond what the handout writer strips (`#|` lines, developer cells); for the others the test proves that their
code is the same. Each notebook gets `LIMIT` seconds: a full training run on a CPU takes hours, so a cell that starts
one fails here."""
import json, os, re, sys, time, subprocess, pathlib
from concurrent.futures import ThreadPoolExecutor, as_completed
import pytest
from transformers_scratch.handout import handout_nb, is_internal

ROOT = pathlib.Path(__file__).resolve().parents[1]
NBS = sorted(p for p in (ROOT/'nbs').glob('*.ipynb'))
LONG = ['32_multi30k', '12_imdb', '42_imdb_pretrain', '22_shakespeare', '41_pretrain', '21_lm', '11_classify', '23_imdb_lm']

def _nb(p): return json.loads(p.read_text(encoding='utf-8'))
def _code(nb): return [''.join(c['source']) for c in nb['cells'] if c['cell_type'] == 'code']
def _stripped(nb):
    "The code the learner's edition would run if the writer only dropped `#|` lines and developer cells"
    return _code(handout_nb(nb))
def _same_code(p):
    "Does the learner's edition of `p` run exactly the code of the solutions edition (less nbdev's lines)?"
    nb = _nb(p)
    plain = [''.join(l for l in s.splitlines(keepends=True) if not l.lstrip().startswith('#|')).lstrip('\n') for s in _code(nb)
             if not re.search(r'^\s*#\|\s*dev\b', s, re.M) and 'nbdev.nbdev_export()' not in s]
    return [s for s in plain if s.strip()] == _stripped(nb)

HANDOUT = sorted(ROOT/'handout'/p.name for p in NBS if (ROOT/'handout'/p.name).exists() and not _same_code(p))
def _id(p): return f"{p.parent.name}/{p.name}"
LIMIT = int(os.environ.get('TFS_NB_LIMIT', 1200))     # seconds per notebook, two side by side on 2 cores (the longest, 32_multi30k: 550-600 s on a slow 2-core machine; a full configuration on a CPU takes hours)
WORKERS = int(os.environ.get('TFS_NB_WORKERS', 2))
ONLY = os.environ.get('TFS_NB_ONLY')                   # run only the notebooks whose name contains one of these (comma-separated)
SELECTED = [p for p in NBS + HANDOUT if not ONLY or any(s in _id(p) for s in ONLY.split(','))]

def _default_exp(p):
    for s in _code(_nb(ROOT/'nbs'/p.name)):
        m = re.search(r'^#\|\s*default_exp\s+([\w.]+)', s, re.M)
        if m: return m.group(1).split('.')[-1]

def _measured(p):
    "`tests/measured_<module>.py`: tests of the figures a lesson's solutions edition computed, run in its namespace after its Run all"
    t = ROOT/'tests'/f'measured_{_default_exp(p)}.py'
    return t if p.parent.name == 'nbs' and t.exists() else None

def _tests_for(p):
    "The exercise tests a learner's edition is checked with in its own namespace (after its run), if it has exercises; a lesson's measured tests"
    if p.parent.name == 'nbs': return _measured(p)
    t = ROOT/'tests'/f'test_exercises_{_default_exp(p)}.py'
    return t if _exercise_calls(p) and t.exists() else None

def _run(p):
    env = dict(os.environ, PYTHONUNBUFFERED='1', OMP_WAIT_POLICY='PASSIVE', MPLBACKEND='Agg')
    if WORKERS > 1: env.setdefault('OMP_NUM_THREADS', '1')   # one torch thread per notebook: two share 2 cores without fighting
    env['PYTHONPATH'] = os.pathsep.join([str(ROOT)] + [x for x in env.get('PYTHONPATH', '').split(os.pathsep) if x])
    t0 = time.perf_counter()
    try:
        tests = _tests_for(p)
        r = subprocess.run([sys.executable, str(ROOT/'tools'/'colab_run.py'), str(p), '--json'] + (['--tests', str(tests)] if tests else []), env=env, cwd=ROOT,
                           capture_output=True, text=True, timeout=LIMIT)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b'').decode() if isinstance(e.stdout, bytes) else (e.stdout or '')
        return {'notebook': _id(p), 'ok': False, 'wall': round(time.perf_counter() - t0, 1),
                'error': f"took more than {LIMIT} s (a full configuration on a CPU?); last output: {out[-1500:]}"}
    try: res = json.loads(r.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        res = {'notebook': _id(p), 'ok': False, 'error': f"exit {r.returncode}: {(r.stdout + r.stderr)[-3000:]}"}
    res['notebook'], res['wall'] = _id(p), round(time.perf_counter() - t0, 1)
    if not res['ok'] or res.get('tests', {}).get('exit'): res['output'] = r.stdout[-4000:]
    return res

_results = {}

@pytest.fixture(scope='module')
def results():
    # the longest first, so that the two workers finish together
    order = sorted(SELECTED, key=lambda p: (LONG.index(p.stem) if p.stem in LONG else len(LONG), _id(p)))
    t0 = time.perf_counter()
    with ThreadPoolExecutor(WORKERS) as ex:
        for f in as_completed([ex.submit(_run, p) for p in order]):
            res = f.result(); _results[res['notebook']] = res
            print(f"  {res['notebook']}: {'ok' if res['ok'] else 'FAILED'} in {res.get('wall')} s "
                  f"({res.get('cpu_seconds')} s CPU; {res.get('tally')})", flush=True)
    total = time.perf_counter() - t0
    print(f"\nlearner's run: {len(order)} notebooks in {total:.0f} s with {WORKERS} at a time; "
          + ', '.join(f"{r['notebook']} {r.get('wall', r.get('seconds'))} s" for r in sorted(_results.values(), key=lambda r: -r.get('wall', 0))[:6]))
    return _results

def _exercise_calls(p):
    "The cells that check a learner's function: `x = check_x(my_x)`"
    return [s for s in _code(_nb(p)) if re.search(r'^\s*\w+\s*=\s*check_\w+\(\s*my_\w+', s, re.M)]

@pytest.mark.parametrize('p', SELECTED, ids=_id)
def test_run_all_as_in_colab(results, p):
    res = results[_id(p)]
    assert res['ok'], f"{_id(p)}: {res['error']}\n{res.get('output', '')}"
    # after Run all the stubs are still stubs: each of the learner's checks says "not solved yet", none a mistake
    calls = _exercise_calls(p)
    if is_internal(_nb(p)): return        # the check toolkit's own demos (00_check_toolkit) show every verdict on purpose
    assert res['unsolved'] == len(calls), f"{_id(p)}: {len(calls)} exercise checks, {res['unsolved']} said 'not solved yet'"
    assert res['failed'] == 0, f"{_id(p)}: a check found a mistake in a stub or a solution"
    if calls:   # an exercise lesson ends with its tally: all solved in the solutions edition, none in the learner's
        n = len({re.search(r'check_\w+', s).group(0) for s in calls})
        want = f"{n} of {n}" if p.parent.name == 'nbs' else f"0 of {n}"
        assert res['tally'] and want in res['tally'], f"{_id(p)}: tally {res['tally']!r}, expected '{want} exercises solved'"

@pytest.mark.parametrize('p', [p for p in SELECTED if p.parent.name == 'handout' and _exercise_calls(p)], ids=_id)
def test_checks_in_the_learners_namespace(results, p):
    "After the learner's Run all, the lesson's catalogue of wrong answers goes through the checks the notebook defined"
    assert _tests_for(p), f"{_id(p)}: no tests/test_exercises_{_default_exp(p)}.py"
    res = results[_id(p)]
    assert res['ok'] and 'tests' in res, f"{_id(p)}: {res.get('error')}"
    t = res['tests']
    assert t['exit'] == 0, f"{_id(p)}: the exercise tests failed in the learner's namespace (exit {t['exit']}):\n{res.get('output', '')}"
    assert set(t['called']) <= set(t['rebound']), f"{_id(p)}: checks the notebook calls but its tests never feed: {sorted(set(t['called']) - set(t['rebound']))}"

MEASURED = [p for p in SELECTED if _measured(p)]

@pytest.mark.parametrize('p', MEASURED, ids=_id)
def test_the_lessons_figures_in_its_own_namespace(results, p):
    "A lesson's measured figures (`tests/measured_<module>.py`), tested on what its Run all computed: no second training run"
    res = results[_id(p)]
    assert res['ok'] and 'tests' in res, f"{_id(p)}: {res.get('error')}"
    assert res['tests']['exit'] == 0, f"{_id(p)}: its measured figures failed (exit {res['tests']['exit']}):\n{res.get('output', '')}"

def test_measured_tests_have_a_lesson():
    "Each tests/measured_*.py belongs to a lesson (it is run only there: pytest's own collection skips its name)"
    mods = {_default_exp(p) for p in NBS}
    for t in (ROOT/'tests').glob('measured_*.py'): assert t.stem.removeprefix('measured_') in mods, t.name
    assert not ONLY and len(MEASURED) >= 1 or ONLY

def test_handout_lessons_are_run():
    "Every learner's edition whose code differs is run; the others run exactly the solutions edition's code"
    assert len(HANDOUT) >= 12, [p.name for p in HANDOUT]
    for p in NBS:
        h = ROOT/'handout'/p.name
        if is_internal(_nb(p)): assert not h.exists(), f"{p.name} is library internals: it has no learner's edition"
        else: assert h.exists(), f"no learner's edition of {p.name}"
        if h.exists() and h not in HANDOUT: assert _code(_nb(h)) == _stripped(_nb(p))
