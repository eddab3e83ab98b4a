#!/usr/bin/env python3
"""Execute notebooks in place so their outputs are saved (skipping #| exercise/slow/cuda cells and nbdev_export).
Usage (repo root): python tools/nbexec.py nbs/03_attention.ipynb [more...]; then run nbdev_clean.
With --no-save it only runs them, as nbdev_test does (for the main environment, where nbdev cannot import)."""
import sys, os, re
from pathlib import Path
from execnb.shell import CaptureShell
from execnb.nbio import read_nb, write_nb
from fastcore.xtras import working_directory

SKIP = {'exercise', 'slow', 'cuda'}
def flags(src): return {m.group(1) for m in re.finditer(r'^#\|\s*(\w+)', src, re.M)}
def skip(cell):
    if cell.cell_type != 'code': return True
    if 'nbdev_export(' in cell.source or 'nbdev.nbdev_export' in cell.source: return True
    return bool(flags(cell.source) & SKIP)

os.environ.setdefault('TFS_QUICK', '1')
save = '--no-save' not in sys.argv
for p in [a for a in sys.argv[1:] if a != '--no-save']:
    p = Path(p).resolve()
    nb = read_nb(p)
    for c in nb.cells:                     # every output is written anew: a cell that prints nothing (`check_x(x);`) keeps none
        if c.cell_type == 'code': c['outputs'] = []
    # execnb keeps no output at all of a cell ending in `;` (the re-checks `check_x(x);`): run those as `_ = check_x(x)`
    quiet = {id(c): c.source for c in nb.cells if c.cell_type == 'code' and c.source.rstrip().endswith(';') and '\n' not in c.source.strip()}
    for c in nb.cells:
        if id(c) in quiet: c.source = '_ = ' + c.source.rstrip()[:-1]
    sh = CaptureShell(p)
    try:
        with working_directory(p.parent): sh.run_all(nb, exc_stop=True, preproc=skip)
    finally:
        for c in nb.cells:
            if id(c) in quiet: c.source = quiet[id(c)]
    if save: write_nb(nb, p)
    print('executed', p.name)
