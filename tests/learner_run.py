"""Run a learner's edition with some of its exercises answered, counting the calls of the answers: does the lesson go on
with the learner's code once it passes? (the tests of lessons 10, 41 and 90 use it)"""
import json, os, subprocess, sys, pathlib
ROOT = pathlib.Path(__file__).resolve().parents[1]

RUN = r'''
import json, re, sys
from IPython.core.interactiveshell import InteractiveShell
nb = json.load(open(sys.argv[1], encoding='utf-8'))
answers = json.load(open(sys.argv[2], encoding='utf-8'))      # {'my_x': its source}
shell = InteractiveShell.instance()
ns, seen = shell.user_ns, {}
ns['CALLS'] = {}                                              # the answers count their calls here
for i, src in enumerate(''.join(c['source']) for c in nb['cells'] if c['cell_type'] == 'code'):
    m = re.search(r'^(?:def|class) (my_\w+)', src, re.M)
    if m and m.group(1) in answers: src = answers[m.group(1)]
    r = shell.run_cell(src, silent=True)
    if not r.success: sys.exit(f"code cell {i} raised {r.error_in_exec!r}: {src[:300]}")
    if re.search(r'=\s*check_\w+\(\s*my_\w+', src): seen['after check'] = dict(ns['CALLS'])
seen['end'] = dict(ns['CALLS'])
seen['returned'] = {n: getattr(ns[n.removeprefix('my_')], '__name__', None) for n in answers}
print(json.dumps(seen))
'''

def run_answered(tmp_path, notebook, answers, timeout=600):
    "Run handout/`notebook` with `answers` ({'my_x': source}) in place of its stubs; returns what was counted"
    (tmp_path/'run.py').write_text(RUN); (tmp_path/'answers.json').write_text(json.dumps(answers))
    env = {k: v for k, v in os.environ.items() if k not in ('TFS_CHECKS', 'TFS_QUICK')}
    env['PYTHONPATH'] = os.pathsep.join([str(ROOT)] + [p for p in env.get('PYTHONPATH', '').split(os.pathsep) if p])
    r = subprocess.run([sys.executable, 'run.py', str(ROOT/'handout'/notebook), 'answers.json'], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-3000:])
    seen = json.loads(r.stdout.strip().splitlines()[-1])
    assert all(v == k for k, v in seen['returned'].items()), f"the check did not return the learner's answer: {seen['returned']}"
    return seen
