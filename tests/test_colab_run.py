"""The learner's run: every lesson as Colab's *Run all* runs it (tools/colab_run.py), two notebooks at a time.

Every code cell in order, `#| slow`/`#| cuda`/`#| exercise` included, in an empty temporary folder, without nbdev,
`TFS_QUICK` unset (so each cell decides from the device: the CPU here); an exercise cell may only say "not solved yet".
Each notebook gets `LIMIT` seconds: a full training run on a CPU takes hours, so a cell that starts one fails here."""
import json, os, re, sys, time, subprocess, pathlib
from concurrent.futures import ThreadPoolExecutor, as_completed
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
NBS = sorted(p for p in (ROOT/'nbs').glob('*.ipynb'))
LONG = ['32_multi30k', '12_imdb', '42_imdb_pretrain', '22_shakespeare', '41_pretrain', '21_lm', '11_classify', '23_imdb_lm']
# the learner's edition too, where it differs (solutions replaced by imports): the lessons with exercises, but the long ones
HANDOUT = sorted(p for p in (ROOT/'handout').glob('*.ipynb')
                 if p.stem not in LONG and any(''.join(c['source']).startswith('# Solution removed from the handout')
                                               for c in json.loads(p.read_text(encoding='utf-8'))['cells']))
def _id(p): return f"{p.parent.name}/{p.name}"
LIMIT = int(os.environ.get('TFS_NB_LIMIT', 1200))     # seconds per notebook, two side by side on 2 cores (the longest, 32_multi30k: 550-600 s on a slow 2-core machine; a full configuration on a CPU takes hours)
WORKERS = int(os.environ.get('TFS_NB_WORKERS', 2))

def _run(p):
    env = dict(os.environ, PYTHONUNBUFFERED='1', OMP_WAIT_POLICY='PASSIVE', MPLBACKEND='Agg')
    if WORKERS > 1: env.setdefault('OMP_NUM_THREADS', '1')   # one torch thread per notebook: two share 2 cores without fighting
    env['PYTHONPATH'] = os.pathsep.join([str(ROOT)] + [x for x in env.get('PYTHONPATH', '').split(os.pathsep) if x])
    t0 = time.perf_counter()
    try:
        r = subprocess.run([sys.executable, str(ROOT/'tools'/'colab_run.py'), str(p), '--json'], env=env, cwd=ROOT,
                           capture_output=True, text=True, timeout=LIMIT)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b'').decode() if isinstance(e.stdout, bytes) else (e.stdout or '')
        return {'notebook': _id(p), 'ok': False, 'wall': round(time.perf_counter() - t0, 1),
                'error': f"took more than {LIMIT} s (a full configuration on a CPU?); last output: {out[-1500:]}"}
    try: res = json.loads(r.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        res = {'notebook': _id(p), 'ok': False, 'error': f"exit {r.returncode}: {(r.stdout + r.stderr)[-3000:]}"}
    res['notebook'], res['wall'] = _id(p), round(time.perf_counter() - t0, 1)
    if not res['ok']: res['output'] = r.stdout[-4000:]
    return res

_results = {}

@pytest.fixture(scope='module')
def results():
    # the longest first, so that the two workers finish together
    order = sorted(NBS + HANDOUT, key=lambda p: (LONG.index(p.stem) if p.stem in LONG else len(LONG), _id(p)))
    t0 = time.perf_counter()
    with ThreadPoolExecutor(WORKERS) as ex:
        for f in as_completed([ex.submit(_run, p) for p in order]):
            res = f.result(); _results[res['notebook']] = res
            print(f"  {res['notebook']}: {'ok' if res['ok'] else 'FAILED'} in {res.get('wall')} s "
                  f"({res.get('cpu_seconds')} s CPU, {res.get('unsolved')} exercises not solved yet)", flush=True)
    total = time.perf_counter() - t0
    print(f"\nlearner's run: {len(order)} notebooks in {total:.0f} s with {WORKERS} at a time; "
          + ', '.join(f"{r['notebook']} {r.get('wall', r.get('seconds'))} s" for r in sorted(_results.values(), key=lambda r: -r.get('wall', 0))[:6]))
    return _results

@pytest.mark.parametrize('p', NBS + HANDOUT, ids=_id)
def test_run_all_as_in_colab(results, p):
    res = results[_id(p)]
    assert res['ok'], f"{_id(p)}: {res['error']}\n{res.get('output', '')}"
    # after Run all the stubs are still stubs: every exercise cell that calls one must say "not solved yet"
    calls = [c for c in json.loads(p.read_text(encoding='utf-8'))['cells'] if c['cell_type'] == 'code'
             and re.search(r'^#\|\s*exercise', ''.join(c['source']), re.M) and not re.search(r'^def ', ''.join(c['source']), re.M)]
    assert res['unsolved'] == len(calls), f"{_id(p)}: {len(calls)} exercise calls, {res['unsolved']} said 'not solved yet'"

def test_handout_lessons_are_run():
    assert len(HANDOUT) >= 6, [p.name for p in HANDOUT]
