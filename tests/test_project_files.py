"The files that let someone pick the project up: licence, contributing guide, changelog, the docs workflow, the roofline"
import configparser, importlib.util, pathlib, re, sys
import pytest, torch

ROOT = pathlib.Path(__file__).resolve().parents[1]

def test_manifest_lists_only_files_that_exist():
    for line in (ROOT/'MANIFEST.in').read_text().splitlines():
        if line.startswith('include '):
            for name in line.split()[1:]: assert (ROOT/name).is_file(), f"MANIFEST.in includes {name}, which does not exist"

def test_license_is_the_apache_text_settings_declare():
    cfg = configparser.ConfigParser(delimiters=['=']); cfg.read(ROOT/'settings.ini', encoding='utf-8')
    assert cfg['DEFAULT']['license'] == 'apache2'
    text = (ROOT/'LICENSE').read_text()
    assert 'Apache License' in text and 'Version 2.0, January 2004' in text and 'END OF TERMS AND CONDITIONS' in text
    assert len(text.splitlines()) == 202, "the Apache License 2.0 text, unmodified, has 202 lines"

def test_contributing_gives_the_commands_ci_runs():
    doc, ci = (ROOT/'CONTRIBUTING.md').read_text(), (ROOT/'.ci'/'run').read_text()
    for cmd in ('-e ".[dev]"', "nbdev==2.4.14 execnb==0.1.18 'fastcore<2' 'plum-dispatch<2.10'",
                'tfs handout --src nbs --dest handout', 'ruff check', 'pytest -q tests'):
        assert cmd in doc and cmd in ci, cmd
    for tool in ('bin/nbdev_export', 'bin/nbdev_clean', 'tools/nb2py.py', 'tools/py2nb.py', 'tools/make_readme.py', 'tools/nbexec.py'):
        assert tool in doc, tool

def test_docs_workflow_builds_as_ci_does():
    "fastai's stock action puts nbdev and .[dev] in one environment; ours installs them as CI does"
    docs, ci = (ROOT/'.github'/'workflows'/'deploy.yaml').read_text(), (ROOT/'.github'/'workflows'/'test.yaml').read_text()
    assert 'uses: fastai/workflows' not in docs
    for line in ('pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu', 'pip install -e ".[dev]"',
                 'python -m venv /tmp/tfs-nbdev-tools',
                 "/tmp/tfs-nbdev-tools/bin/pip install nbdev==2.4.14 execnb==0.1.18 'fastcore<2' 'plum-dispatch<2.10'"):
        assert line in docs and line in ci, line
    assert '/tmp/tfs-nbdev-tools/bin/nbdev_docs' in docs and '/tmp/tfs-nbdev-tools/bin/nbdev_install_quarto' in docs

def test_readme_keeps_todays_figures_and_the_changelog_the_history():
    readme = (ROOT/'README.md').read_text(encoding='utf-8')
    assert not re.search(r'before issue \d+|after issue \d+', readme), "history goes to CHANGELOG.md"
    assert '(CHANGELOG.md)' in readme and (ROOT/'CHANGELOG.md').is_file()

@pytest.fixture(scope='module')
def bench():
    spec = importlib.util.spec_from_file_location('bench_generate', ROOT/'benchmarks'/'generate.py')
    m = importlib.util.module_from_spec(spec); sys.modules['bench_generate'] = m; spec.loader.exec_module(m)
    return m

def test_roofline_arithmetic(bench):
    rates = [{'best_gb_per_s': 40.0, 'gb_per_s': {'sum': 40.0, 'matvec': 20.0}},
             {'best_gb_per_s': 50.0, 'gb_per_s': {'sum': 50.0, 'matvec': 25.0}}]
    r = bench.roofline(rates, 500_000_000, {'ours': 40.0, 'hugging_face': 30.0})
    assert r['read_gb_per_s'] == 50.0 and r['limit_tokens_per_s'] == 100.0          # 50 GB/s / 0.5 GB per token
    assert r['fraction_of_limit'] == {'ours': 0.4, 'hugging_face': 0.3}
    assert r['matvec_limit_tokens_per_s'] == 50.0 and r['fraction_of_matvec_limit'] == {'ours': 0.8, 'hugging_face': 0.6}
    tied = torch.nn.Linear(3, 5, bias=False); m = torch.nn.Sequential(tied, torch.nn.Linear(5, 3, bias=False))
    m[1].weight = torch.nn.Parameter(tied.weight.T.contiguous()); m.append(m[0])      # a tied weight counts once
    assert bench.weight_bytes(m) == 2 * 15 * 4

def test_read_rate_measures_both_ways(bench):
    r = bench.read_rate(torch.device('cpu'), mib=4, runs=2)
    assert set(r['gb_per_s']) == {'sum', 'matvec'} and r['best_gb_per_s'] == max(r['gb_per_s'].values()) > 0
    assert bench.cpu_model()

def test_instruct_benchmark_reads_model_settings():
    "benchmarks/instruct.py --model 'depth=4,heads=8': each value as its field's type; an unknown field or a bare name refused by name"
    spec = importlib.util.spec_from_file_location('bench_instruct', ROOT/'benchmarks'/'instruct.py')
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
    assert m.model_settings('depth=4, heads=8,dropout=0.1,fast=false,kv_heads=None,pos=rope') == dict(depth=4, heads=8, dropout=0.1, fast=False, kv_heads=None, pos='rope')
    assert m.model_settings('kv_heads=2') == {'kv_heads': 2}
    for bad in ('width=4', 'depth', 'depth=four', 'fast=maybe'):
        with pytest.raises(ValueError, match='depth|width|fast'): m.model_settings(bad)
