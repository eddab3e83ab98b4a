#!/usr/bin/env python3
"""Run a lesson's exercise tests against the checks *as the learner's notebook defines them*.
Usage (repo root): python tools/learner_checks.py handout/03_attention.ipynb tests/test_exercises_attention.py

Runs the notebook as Colab's *Run all* does (tools/colab_run.py: empty folder, no nbdev), up to its last exercise check
(`x = check_x(my_x)`), then runs the test file with every `check_*` name it uses re-bound to the function of that name
in the notebook's namespace, under `TFS_CHECKS=raise`. A check that works when imported from the library but crashes in
the learner's notebook (a name the notebook never imports, say) fails here: each wrong answer must end in the check's
own verdict. Prints `learner_checks: <notebook>: rebound N checks: ...` and exits with pytest's code (2 if a check the
notebook calls is not exercised by the test file)."""
import sys, os, re, json, tempfile
from pathlib import Path

CALL = re.compile(r'^\s*\w+\s*=\s*(check_\w+)\(\s*my_\w+', re.M)    # `x = check_x(my_x)`: an exercise's check

def notebook_namespace(path):
    "Run the notebook's code cells up to its last exercise check; return the user namespace and the checks it calls"
    nb = json.loads(Path(path).read_text(encoding='utf-8'))
    cells = [''.join(c['source']) for c in nb['cells'] if c['cell_type'] == 'code']
    call = CALL
    last = max(i for i, s in enumerate(cells) if call.search(s))
    for k in ('TFS_QUICK', 'IN_TEST', 'TFS_CHECKS'): os.environ.pop(k, None)
    sys.modules['nbdev'] = None
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    here = os.getcwd()
    with tempfile.TemporaryDirectory(prefix='learner-') as d:
        os.chdir(d)
        for i, s in enumerate(cells[:last + 1]):
            r = shell.run_cell(s, store_history=True, silent=True)
            if not r.success: sys.exit(f"learner_checks: {path}: code cell {i} raised {r.error_in_exec or r.error_before_exec!r}")
        os.chdir(here)
    return shell.user_ns, sorted({m.group(1) for s in cells for m in call.finditer(s)})

class Rebind:
    "A pytest plugin: the test modules' `check_*` globals become the notebook's, and a `NOTEBOOK = {}` global is filled with its namespace"
    def __init__(self, ns): self.ns, self.rebound = ns, set()
    def pytest_collection_modifyitems(self, session, config, items):
        for mod in {it.module for it in items if getattr(it, 'module', None)}:
            if isinstance(getattr(mod, 'NOTEBOOK', None), dict): mod.NOTEBOOK.update(self.ns)   # what the lesson computed, for tests of its figures
            for k, v in list(vars(mod).items()):
                if k.startswith('check_') and callable(v) and callable(self.ns.get(k)):
                    setattr(mod, k, self.ns[k]); self.rebound.add(k)

def run_tests(ns, tests):
    "Run pytest on file `tests` with its `check_*` globals taken from namespace `ns`; returns (exit code, names re-bound)"
    os.environ['TFS_CHECKS'] = 'raise'
    import pytest
    plugin = Rebind(ns)
    code = pytest.main(['-q', '-p', 'no:cacheprovider', '-W', 'ignore', str(tests)], plugins=[plugin])
    return int(code), sorted(plugin.rebound)

if __name__ == '__main__':
    if len(sys.argv) != 3: sys.exit(__doc__)
    nb, tests = sys.argv[1:]
    ns, called = notebook_namespace(nb)
    code, rebound = run_tests(ns, tests)
    plugin = type('R', (), {'rebound': set(rebound)})
    print(f"learner_checks: {Path(nb).name}: rebound {len(plugin.rebound)} checks: {', '.join(sorted(plugin.rebound))}")
    missing = sorted(set(called) - plugin.rebound)
    if missing:
        print(f"learner_checks: {Path(nb).name}: the notebook calls {', '.join(missing)}, which {tests} never tests")
        code = code or 2
    sys.exit(int(code))
