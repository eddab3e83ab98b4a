import os, pathlib
ROOT = pathlib.Path(__file__).resolve().parents[1]
os.environ.setdefault('TFS_DATA', str(ROOT.parent/'shared'/'data'))
os.environ.setdefault('TFS_QUICK', '1')
os.environ.setdefault('MPLBACKEND', 'Agg')
