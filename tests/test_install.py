"""Installing the library on Colab replaces none of Colab's packages.

The test environment holds Colab's versions (the dev extras pin them, as Colab's pip freeze of August 2026 has them;
torch is the CPU wheel CI uses). `pip install --dry-run --report` of the library itself (not editable, no extras) must
then want to install nothing but the library."""
import json, subprocess, sys, pathlib, configparser, shlex
from importlib.metadata import version, PackageNotFoundError
from packaging.requirements import Requirement
ROOT = pathlib.Path(__file__).resolve().parents[1]

COLAB = {'fastai': '2.8.8', 'fastcore': '2.2.12', 'fasttransform': '0.0.2', 'fastprogress': '1.1.6', 'pandas': '2.2.3',
         'plotly': '5.24.1', 'matplotlib': '3.10.0', 'numpy': '2.1.3', 'accelerate': '1.14.0', 'sentencepiece': '0.2.2',
         'transformers': '5.15.0', 'tiktoken': '0.14.0'}

def settings():
    c = configparser.ConfigParser(delimiters=['=']); c.read(ROOT/'settings.ini', encoding='utf-8')
    return c['DEFAULT']

def test_environment_is_colabs():
    "What the tests prove holds for Colab only if they run on Colab's versions"
    have = {}
    for name in COLAB:
        try: have[name] = version(name)
        except PackageNotFoundError: have[name] = None
    assert have == COLAB, "the test environment should hold Colab's versions: pip install -e '.[dev]'"

def test_dev_extras_pin_colabs_versions():
    pins = {Requirement(r).name: str(Requirement(r).specifier) for r in shlex.split(settings()['dev_requirements'])}
    for name, v in COLAB.items(): assert pins.get(name) == f'=={v}', (name, pins.get(name))

def test_requirements_fit_colab():
    reqs = {Requirement(r).name: Requirement(r) for r in shlex.split(settings()['requirements'])}
    for name, v in COLAB.items():
        if name in reqs: assert reqs[name].specifier.contains(v), f"{reqs[name]} excludes Colab's {name} {v}"
    assert 'fasttransform' in reqs and reqs['fastai'].specifier.contains('2.8.0') and not reqs['fastai'].specifier.contains('2.7.19')
    assert settings()['min_python'] == '3.10'          # fastai 2.8's floor

def test_dry_run_install_replaces_nothing(tmp_path):
    report = tmp_path/'report.json'
    r = subprocess.run([sys.executable, '-m', 'pip', 'install', '--dry-run', '--quiet', '--no-build-isolation',
                        '--report', str(report), str(ROOT)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    wanted = {i['metadata']['name'].lower().replace('_', '-'): i['metadata']['version'] for i in json.loads(report.read_text())['install']}
    wanted.pop('transformers-scratch', None)
    replaced = {}
    for name, v in wanted.items():
        try: replaced[name] = f"{version(name)} -> {v}"
        except PackageNotFoundError: pass
    assert not replaced, f"pip would replace packages already installed: {replaced}"

def test_dry_run_install_with_gpt2_extra_replaces_nothing(tmp_path):
    "Lesson 24's install cell installs `transformers_scratch[gpt2]`: on Colab that too must replace nothing"
    report = tmp_path/'report.json'
    r = subprocess.run([sys.executable, '-m', 'pip', 'install', '--dry-run', '--quiet', '--no-build-isolation',
                        '--report', str(report), f"{ROOT}[gpt2]"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    wanted = {i['metadata']['name'].lower().replace('_', '-') for i in json.loads(report.read_text())['install']} - {'transformers-scratch'}
    replaced = []
    for name in wanted:
        try: version(name); replaced.append(name)
        except PackageNotFoundError: pass
    assert not replaced, f"pip would replace packages already installed: {replaced}"

def _closure(reqs):
    "Distributions `reqs` install, with what they require in turn (as installed here), by normalised name"
    import re
    from importlib.metadata import requires
    norm = lambda n: re.sub(r'[-_.]+', '-', n).lower()
    seen, todo = set(), [Requirement(r).name for r in reqs]
    while todo:
        n = norm(todo.pop())
        if n in seen: continue
        seen.add(n)
        try: rs = requires(n) or []
        except PackageNotFoundError: continue
        todo += [Requirement(r).name for r in rs if 'extra ==' not in r]
    return seen

def test_install_covers_what_every_lesson_imports():
    "`pip install -e .` (and `.[gpt2]` for lesson 24) installs every package a lesson imports: nothing fails outside Colab"
    import ast, re
    from importlib.metadata import packages_distributions
    dists = packages_distributions()
    norm = lambda n: re.sub(r'[-_.]+', '-', n).lower()
    base = _closure(shlex.split(settings()['requirements']))
    gpt2 = base | _closure(shlex.split(settings()['gpt2_requirements']))
    missing = []
    for nb in sorted((ROOT/'nbs').glob('*.ipynb')):
        mods = set()
        for c in json.loads(nb.read_text(encoding='utf-8'))['cells']:
            if c['cell_type'] != 'code': continue
            src = '\n'.join(l for l in ''.join(c['source']).splitlines() if not l.lstrip().startswith(('%', '!')))
            try: tree = ast.parse(src)
            except SyntaxError: continue
            for n in ast.walk(tree):
                if isinstance(n, ast.Import): mods.update(a.name.split('.')[0] for a in n.names)
                elif isinstance(n, ast.ImportFrom) and n.level == 0 and n.module: mods.add(n.module.split('.')[0])
        allowed = gpt2 if 'transformers_scratch[gpt2]' in nb.read_text(encoding='utf-8') else base   # its Colab cell installs the extra
        for m in sorted(mods - set(sys.stdlib_module_names) - {'transformers_scratch', 'google', 'nbdev', 'torchvision'}):
            ds = {norm(d) for d in dists.get(m, [])}
            if not ds & allowed: missing.append(f"{nb.name} imports {m} ({', '.join(ds) or 'not installed'})")
    assert not missing, missing
