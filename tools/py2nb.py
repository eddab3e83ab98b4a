#!/usr/bin/env python3
"""Convert a percent-format source (cells split by '# %%' / '# %% [markdown]') into an .ipynb.

Usage: py2nb.py SRC.py DEST.ipynb
Markdown cells: write lines as '# text' or plain text inside the cell; leading '# ' is stripped.
Code cells containing '@title' get Colab's cellView=form metadata (collapsed solution cells).
"""
import json, sys, re

def parse(text):
    cells, cur, kind = [], [], None
    for line in text.splitlines():
        m = re.match(r'^# %%( \[markdown\])?\s*$', line)
        if m:
            if kind is not None: cells.append((kind, cur))
            kind, cur = ('markdown' if m.group(1) else 'code'), []
            continue
        if kind is None:
            if line.strip(): raise SystemExit(f'text before first cell marker: {line!r}')
            continue
        cur.append(line)
    if kind is not None: cells.append((kind, cur))
    out = []
    for kind, lines in cells:
        while lines and not lines[-1].strip(): lines.pop()
        while lines and not lines[0].strip(): lines.pop(0)
        if kind == 'markdown':
            lines = [l[2:] if l.startswith('# ') else ('' if l == '#' else l) for l in lines]
        src = '\n'.join(lines)
        if kind == 'markdown':
            out.append({'cell_type': 'markdown', 'metadata': {}, 'source': src})
        else:
            md = {'cellView': 'form'} if '@title' in src else {}
            out.append({'cell_type': 'code', 'execution_count': None, 'metadata': md, 'outputs': [], 'source': src})
    return out

def to_nb(cells, name=''):
    import hashlib
    for i, c in enumerate(cells):
        c['id'] = hashlib.md5(f'{name}:{i}:{c["source"][:40]}'.encode()).hexdigest()[:8]
        s = c['source'].split('\n')
        c['source'] = [l + '\n' for l in s[:-1]] + [s[-1]] if s != [''] else []
    return {'cells': cells, 'metadata': {'kernelspec': {'display_name': 'python3', 'language': 'python', 'name': 'python3'}},
            'nbformat': 4, 'nbformat_minor': 5}

if __name__ == '__main__':
    src, dest = sys.argv[1], sys.argv[2]
    import os
    nb = to_nb(parse(open(src, encoding='utf-8').read()), os.path.basename(dest))
    with open(dest, 'w', encoding='utf-8') as f: json.dump(nb, f, indent=1, ensure_ascii=False); f.write('\n')
    print(f'{dest}: {len(nb["cells"])} cells')
