#!/usr/bin/env python3
"""Run a notebook as Colab's *Run all* does, and report how each cell ended.
Usage (repo root): python tools/colab_run.py nbs/03_attention.ipynb [--json]

Colab ignores nbdev's `#|` flags, starts in an empty folder and has no nbdev: so every code cell runs, in order,
`#| slow`, `#| cuda` and `#| exercise` included, in an IPython shell whose working folder is a new empty temporary
folder and where `import nbdev` fails. `TFS_QUICK` and `IN_TEST` are removed from the environment, so the cells decide
from the device (the CPU here) as they do in Colab; `TFS_DATA` is kept.

A cell flagged `#| exercise` may fail only with the course's "not solved yet" errors (`TODO`, `CheckError`): after
*Run all* the learner's stubs are still stubs. Any other exception, in any cell, is a failure. Stops at the first
failure. Prints one line per cell, and with --json a last line `{"notebook", "ok", "cells", "unsolved", "seconds", "cpu_seconds", "error"}`."""
import sys, os, re, json, time, resource, tempfile
from pathlib import Path

UNSOLVED = ('TODO', 'CheckError')   # the course's "not solved yet" errors (transformers_scratch.core)

def flags(src): return {m.group(1) for m in re.finditer(r'^#\|\s*(\w+)', src, re.M)}

def run(path, quiet=False):
    "Run every code cell of the notebook at `path` as Colab does; returns the result dict"
    path = Path(path).resolve()
    nb = json.loads(path.read_text(encoding='utf-8'))
    for k in ('TFS_QUICK', 'IN_TEST'): os.environ.pop(k, None)
    sys.modules['nbdev'] = None                      # Colab has no nbdev: `import nbdev` raises ImportError
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    res = {'notebook': path.name, 'ok': True, 'cells': 0, 'unsolved': 0, 'seconds': 0., 'error': None}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix='colab-') as d:
        os.chdir(d)
        for i, c in enumerate(nb['cells']):
            if c['cell_type'] != 'code': continue
            src = ''.join(c['source'])
            r = shell.run_cell(src, store_history=True, silent=False)
            res['cells'] += 1
            err = r.error_before_exec or r.error_in_exec
            if err is None: continue
            name = type(err).__name__
            if 'exercise' in flags(src) and name in UNSOLVED:
                res['unsolved'] += 1
                if not quiet: print(f"[cell {i}] exercise not solved yet ({name}): {str(err).splitlines()[0][:150]}", flush=True)
                continue
            res['ok'] = False
            res['error'] = f"cell {i}: {name}: {' '.join(str(err).split())[:500]}"
            break
        os.chdir('/')
    res['seconds'] = round(time.perf_counter() - t0, 1)
    ru = [resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    res['cpu_seconds'] = round(sum(r.ru_utime + r.ru_stime for r in ru), 1)    # the process's own, imports included
    return res

if __name__ == '__main__':
    args = [a for a in sys.argv[1:] if not a.startswith('--')]
    if len(args) != 1: sys.exit(__doc__)
    res = run(args[0])
    if '--json' in sys.argv: print('\n' + json.dumps(res), flush=True)
    else: print(res)
    sys.exit(0 if res['ok'] else 1)
