#!/usr/bin/env python3
"""Run a notebook as Colab's *Run all* does, and report how each cell ended.
Usage (repo root): python tools/colab_run.py nbs/03_attention.ipynb [--json] [--tests tests/test_exercises_attention.py]

Colab ignores nbdev's `#|` flags, starts in an empty folder and has no nbdev: so every code cell runs, in order,
`#| slow`, `#| cuda` and `#| exercise` included, in an IPython shell whose working folder is a new empty temporary
folder and where `import nbdev` fails. `TFS_QUICK`, `IN_TEST` and `TFS_CHECKS` are removed from the environment, so the
cells decide from the device (the CPU here) and the checks report as they do for a learner; `TFS_DATA` is kept.

Like Colab's *Run all*, it stops at the first cell that raises, whatever the cell: an unsolved exercise must not
raise (its check prints "not solved yet" and the lesson goes on with the library's version). The checks' status lines
are counted: `✓` passed, `○` not solved yet, `✗` a mistake. Prints one line per status line and a last line (with
--json) `{"notebook", "ok", "cells", "passed", "unsolved", "failed", "tally", "seconds", "cpu_seconds", "error"}`.

With `--tests FILE` (a lesson's exercise tests), once the notebook has run to its end the test file runs in the same
process with its `check_*` names re-bound to the checks as the notebook defined them (tools/learner_checks.py), under
`TFS_CHECKS=raise`: every wrong answer of the catalogue must end in the check's own verdict in the learner's namespace
too. The result then has `"tests": {"exit": pytest's code, "rebound": [...], "called": [...]}`."""
import sys, os, re, json, time, resource, tempfile
from pathlib import Path

STATUS = re.compile(r'^([✓○✗]) (check_\w+): ', re.M)
TALLY = re.compile(r'^lesson \w+: \d+ of \d+ exercises solved.*$', re.M)

class _Tee:
    "A stdout that also keeps what was written, to count the checks' status lines"
    def __init__(self, out): self.out, self.text = out, []
    def write(self, s): self.text.append(s); return self.out.write(s)
    def flush(self): self.out.flush()
    def __getattr__(self, k): return getattr(self.out, k)

def run(path, quiet=False, tests=None):
    "Run every code cell of the notebook at `path` as Colab does (then `tests` in its namespace); returns the result dict"
    path, here = Path(path).resolve(), os.getcwd()
    nb = json.loads(path.read_text(encoding='utf-8'))
    for k in ('TFS_QUICK', 'IN_TEST', 'TFS_CHECKS'): os.environ.pop(k, None)
    sys.modules['nbdev'] = None                      # Colab has no nbdev: `import nbdev` raises ImportError
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    res = {'notebook': path.name, 'ok': True, 'cells': 0, 'passed': 0, 'unsolved': 0, 'failed': 0, 'tally': None,
           'seconds': 0., 'error': None}
    tee = sys.stdout = _Tee(sys.stdout)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix='colab-') as d:
        os.chdir(d)
        for i, c in enumerate(nb['cells']):
            if c['cell_type'] != 'code': continue
            r = shell.run_cell(''.join(c['source']), store_history=True, silent=False)
            res['cells'] += 1
            err = r.error_before_exec or r.error_in_exec
            if err is None: continue
            res['ok'] = False
            res['error'] = f"cell {i}: {type(err).__name__}: {' '.join(str(err).split())[:500]}"
            break
        os.chdir(here)
    sys.stdout = tee.out
    text = ''.join(tee.text)
    for mark, key in (('✓', 'passed'), ('○', 'unsolved'), ('✗', 'failed')):
        res[key] = sum(m.group(1) == mark for m in STATUS.finditer(text))
    tallies = TALLY.findall(text)
    res['tally'] = tallies[-1] if tallies else None
    if tests and res['ok']:
        sys.path.insert(0, str(Path(__file__).parent))
        from learner_checks import run_tests, CALL
        code, rebound = run_tests(shell.user_ns, Path(tests).resolve())
        called = sorted({m.group(1) for c in nb['cells'] if c['cell_type'] == 'code' for m in CALL.finditer(''.join(c['source']))})
        res['tests'] = {'exit': code, 'rebound': rebound, 'called': called}
    res['seconds'] = round(time.perf_counter() - t0, 1)
    ru = [resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    res['cpu_seconds'] = round(sum(r.ru_utime + r.ru_stime for r in ru), 1)    # the process's own, imports included
    return res

if __name__ == '__main__':
    argv = sys.argv[1:]
    tests = argv[argv.index('--tests') + 1] if '--tests' in argv else None
    args = [a for a in argv if not a.startswith('--') and a != tests]
    if len(args) != 1: sys.exit(__doc__)
    res = run(args[0], tests=tests)
    if '--json' in sys.argv: print('\n' + json.dumps(res), flush=True)
    else: print(res)
    sys.exit(0 if res['ok'] else 1)
