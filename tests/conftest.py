import os, pathlib
ROOT = pathlib.Path(__file__).resolve().parents[1]
os.environ.setdefault('TFS_DATA', str(ROOT.parent/'shared'/'data'))
os.environ.setdefault('TFS_QUICK', '1')
os.environ.setdefault('MPLBACKEND', 'Agg')

import pytest

@pytest.fixture(scope='module')
def one_thread():
    "Run a module's tests on one torch thread: exercise checks use tiny tensors, where a second thread only adds sync cost"
    import torch
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)

def pytest_collection_modifyitems(session, config, items):
    "The learner's run (test_colab_run.py) last: its notebooks run in the background from the start of the session"
    items.sort(key=lambda it: it.nodeid.startswith('tests/test_colab_run.py') or 'test_colab_run.py::' in it.nodeid)

def pytest_collection_finish(session):
    "Start the notebooks as soon as they are collected: they run beside the other tests, which leave a core idle"
    runs = [it for it in session.items if it.nodeid.split('::')[0].endswith('test_colab_run.py') and hasattr(it, 'callspec')]
    if runs: runs[0].module.start({it.callspec.id for it in runs})

def pytest_sessionfinish(session):
    "A session stopped early (-x, Ctrl-C) does not wait for notebooks that have not started"
    import sys
    m = sys.modules.get('test_colab_run') or sys.modules.get('tests.test_colab_run')
    for f in getattr(m, '_futures', []): f.cancel()
