#!/usr/bin/env python3
"""Inverse of py2nb: dump an .ipynb to percent format (outputs dropped). Usage: nb2py.py NB.ipynb [OUT.py]"""
import json, sys
nb = json.load(open(sys.argv[1], encoding='utf-8'))
parts = []
for c in nb['cells']:
    src = ''.join(c['source'])
    if c['cell_type'] == 'markdown':
        parts.append('# %% [markdown]\n' + '\n'.join(('# ' + l) if l else '#' for l in src.split('\n')))
    else: parts.append('# %%\n' + src)
text = '\n\n'.join(parts) + '\n'
if len(sys.argv) > 2: open(sys.argv[2], 'w', encoding='utf-8').write(text)
else: sys.stdout.write(text)
