"`tfs handout`: solutions gone, outputs cleared, and the rest of each lesson still imports what it needs."
import json, subprocess, sys, pathlib
from transformers_scratch.core import is_solution
ROOT = pathlib.Path(__file__).resolve().parents[1]

def test_handout(tmp_path):
    r = subprocess.run(['tfs', 'handout', '--src', str(ROOT/'nbs'), '--dest', str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res['notebooks'] == len(list((ROOT/'nbs').glob('*.ipynb')))
    n_solutions = 0
    for p in (ROOT/'nbs').glob('*.ipynb'):
        orig = json.loads(p.read_text()); h = json.loads((tmp_path/p.name).read_text())
        assert len(orig['cells']) == len(h['cells'])
        for o, c in zip(orig['cells'], h['cells']):
            assert c.get('outputs', []) == []
            s = ''.join(o['source'])
            if is_solution(s):
                n_solutions += 1
                hs = ''.join(c['source'])
                assert 'Solution removed' in hs and 'def ' not in hs
                # what was defined is importable from the library, so the lesson goes on
                line = hs.splitlines()[-1]
                assert line.startswith('from transformers_scratch.')
                exec(line, {})
    assert n_solutions >= 12, f"the course promises at least 12 exercises, found {n_solutions} solution cells"
