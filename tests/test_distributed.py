"Data-parallel training in 2 CPU processes (gloo, `torchrun`): both learners end with the same weights after reading different shards"
import json, os, subprocess, sys, pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]

SCRIPT = r'''
import json, os, sys, torch, torch.distributed as dist
from fastai.data.core import DataLoaders
from fastai.data.load import DataLoader
from fastai.distributed import DistributedDL
from fastai.torch_core import set_seed
from transformers_scratch.lmdata import char_dls
from transformers_scratch.lm import lm_learner
from transformers_scratch.classify import classifier_learner
from transformers_scratch.config import ModelConfig, TrainConfig
from transformers_scratch.training import data_parallel, is_main_process

dist.init_process_group('gloo')       # as a launcher that leaves RANK unset (accelerate's CPU one) would have it:
rank = dist.get_rank(); del os.environ['RANK']   # fastai alone would make both processes rank 0, with the same shard
seen = []
get_idxs = DistributedDL.get_idxs
def recording(self):                  # the indices of the training shard each process reads
    idxs = get_idxs(self)
    if self.dl.shuffle: seen[-1].extend(idxs)
    return idxs
DistributedDL.get_idxs = recording

def fit(learn, epochs):
    seen.append([])
    with data_parallel(learn), learn.no_bar(), learn.no_logging(): learn.fit(epochs, 1e-2)
    assert learn.model.__class__.__name__ != 'DistributedDataParallel'
    return torch.cat([p.detach().flatten() for p in learn.model.parameters()]).tolist()

set_seed(0)
dls = char_dls('the cat sat on the mat. ' * 40, seq_len=8, bs=4, n_batches=6, device='cpu')
lm = fit(lm_learner(dls, ModelConfig(emb=16, heads=2, depth=1, seq_len=8, fast=True), TrainConfig(wd=0.1)), 2)
set_seed(0)
x = torch.randint(2, 20, (64, 12)); x[::3, 8:] = 1                   # 1 is the padding token
ds = list(zip(x, (x == 5).any(1).long()))
cdls = DataLoaders(DataLoader(ds[:48], bs=8, shuffle=True, drop_last=True), DataLoader(ds[48:], bs=8), device='cpu')
cdls.vocab, cdls.c = [['xxunk', 'xxpad'] + [f'w{i}' for i in range(2, 20)], ['no', 'yes']], 2
cl = fit(classifier_learner(cdls, ModelConfig(emb=16, heads=2, depth=1, seq_len=12, dropout=0.1, fast=True, prenorm=False), TrainConfig()), 2)
json.dump({'rank': rank, 'main': is_main_process(), 'seen': seen, 'lm': lm, 'classify': cl}, open(f"{sys.argv[1]}/rank{rank}.json", 'w'))
'''

def test_two_process_data_parallel_fit(tmp_path):
    (tmp_path/'dp.py').write_text(SCRIPT)
    env = {**os.environ, 'OMP_NUM_THREADS': '1', 'PYTHONPATH': str(ROOT), 'TFS_OFFLINE': '1', 'CUDA_VISIBLE_DEVICES': ''}   # CPU processes, GPU or not
    r = subprocess.run([sys.executable, '-m', 'torch.distributed.run', '--standalone', '--nproc_per_node', '2',
                        str(tmp_path/'dp.py'), str(tmp_path)], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    r0, r1 = (json.loads((tmp_path/f'rank{i}.json').read_text()) for i in (0, 1))
    assert (r0['rank'], r1['rank'], r0['main'], r1['main']) == (0, 1, True, False)
    for k in ('lm', 'classify'):                                       # DDP kept the copies identical...
        assert max(abs(a - b) for a, b in zip(r0[k], r1[k])) < 1e-6, k
    (lm0, cl0), (lm1, cl1) = r0['seen'], r1['seen']
    assert len(lm0) == len(lm1) == 2 * 6 * 4 // 2 and lm0 != lm1       # ...while each read half of every epoch
    assert len(cl0) == len(cl1) == 2 * 48 // 2
    for e in range(2):                                                 # a shuffled epoch, split in two disjoint halves
        a, b = cl0[e * 24:(e + 1) * 24], cl1[e * 24:(e + 1) * 24]
        assert not set(a) & set(b) and sorted(a + b) == list(range(48))
