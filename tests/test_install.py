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
