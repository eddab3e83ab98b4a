"""The classification helpers work wherever the model is, give the model back in the mode it came in, and the learner
picks its precision per device.

No GPU here, so a stand-in plays the model on another device: its first parameter lives on PyTorch's `meta` device
and it refuses any input that is not there, as a CUDA model refuses a CPU batch. Before the fix, the helpers below fed
the batch as it came, which is how `padding_invariance_gap(learn.model, b)` crashed 12_imdb on a GPU. The look-inside
helpers `block_inputs` and `pooled` belong to the IMDB tutorial (12_imdb, not exported): they are read from its cell."""
import json, pathlib
import pytest, torch, torch.nn as nn
import transformers_scratch.runtime as runtime
from fastai.learner import Learner
from fastai.callback.fp16 import MixedPrecision
from fastai.torch_core import set_seed
from transformers_scratch.runtime import model_device, evaluating
from transformers_scratch.config import ModelConfig, TrainConfig
from transformers_scratch.textdata import text_dls, synth_text_df
from transformers_scratch.classify import classifier_learner, padding_invariance_gap, show_text_results, CLASSIFY_QUICK
from transformers_scratch.runs import run_classify
from transformers_scratch.models import ClassificationTransformer

ROOT = pathlib.Path(__file__).resolve().parents[1]

SMALL = ModelConfig(emb=16, heads=2, depth=1, seq_len=24, dropout=0.1, fast=True, prenorm=False)   # a tiny classifier

def tutorial_helpers():
    "`block_inputs` and `pooled`, defined by 12_imdb's cell that writes them"
    cells = [''.join(c['source']) for c in json.loads((ROOT/'nbs'/'12_imdb.ipynb').read_text(encoding='utf-8'))['cells']]
    ns = {'torch': torch, 'model_device': model_device, 'evaluating': evaluating}
    exec(next(s for s in cells if 'def pooled(' in s), ns)
    return ns['block_inputs'], ns['pooled']

class Elsewhere(nn.Module):
    "Stands for `model` on another device (a GPU): fails unless its input is on `device`, then runs `model` on dummy CPU tokens"
    def __init__(self, model, device='meta'):
        super().__init__()
        self.anchor = nn.Parameter(torch.empty(0, device=device))   # the first parameter: where the model "is"
        self.model, self.seen = model, []
        self.blocks, self.toprobs = model.blocks, model.toprobs       # what the look-inside helpers hook
    def forward(self, x):
        if x.device != self.anchor.device:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found {x.device} and {self.anchor.device}")
        self.seen.append(x.device.type)
        return self.model(torch.full(x.shape, 2, dtype=torch.long))   # data can't come back from `meta`: same shape, CPU

@pytest.fixture(scope='module')
def dls():
    return text_dls(synth_text_df(n=48), seq_len=24, bs=8, device='cpu')

@pytest.fixture
def elsewhere(dls):
    torch.manual_seed(0)
    v = dls.vocab[0]
    return Elsewhere(ClassificationTransformer(ModelConfig(emb=16, heads=2, depth=1, seq_len=24, n_tokens=len(v), n_classes=2,
                                                           pad_idx=v.index('xxpad'))))

def test_model_device(elsewhere):
    assert model_device(elsewhere).type == 'meta'
    assert model_device(nn.Linear(2, 2)).type == 'cpu' and model_device(nn.Identity()).type == 'cpu'

def test_padding_invariance_gap_moves_the_batch(dls, elsewhere):
    xb = dls.valid.one_batch()[0]
    assert xb.device.type == 'cpu'
    with pytest.raises(RuntimeError, match='same device'): elsewhere(xb)   # the crash of issue 8, item 1
    gap = padding_invariance_gap(elsewhere, xb)
    assert isinstance(gap, float) and set(elsewhere.seen) == {'meta'}
    assert len(elsewhere.seen) == len(xb) + 1   # the batch, then each row alone

def test_show_text_results_moves_the_batch(dls, elsewhere):
    learn = Learner(dls, elsewhere)
    res = show_text_results(learn, max_n=3)
    assert len(res) == 3 and set(elsewhere.seen) == {'meta'}
    assert res.probability.between(0.5, 1).all()

def test_look_inside_helpers_move_the_batch(dls, elsewhere):
    block_inputs, pooled = tutorial_helpers()
    xb = dls.valid.one_batch()[0]
    x, pad_mask = block_inputs(elsewhere, xb)
    assert x.shape == (*xb.shape, 16) and pad_mask.shape == xb.shape
    v, y = pooled(elsewhere, dls.valid)
    assert v.shape == (12, 16) and v.dtype == torch.float32 and v.device.type == 'cpu' and y.shape == (12,)
    assert set(elsewhere.seen) == {'meta'}

def test_helpers_agree_with_a_cpu_model(dls):
    "The same real model on the CPU: no padding gap, probabilities that sum to one"
    set_seed(0)
    learn = classifier_learner(dls, SMALL, TrainConfig())
    assert padding_invariance_gap(learn.model, dls.valid.one_batch()[0]) < 1e-5
    assert show_text_results(learn, max_n=2).probability.between(0.5, 1).all()

def test_helpers_keep_the_mode(dls):
    "Each helper that runs the model in eval mode gives it back as it came: training stays training, eval stays eval"
    block_inputs, pooled = tutorial_helpers()
    set_seed(0)
    learn = classifier_learner(dls, SMALL, TrainConfig())
    xb = dls.valid.one_batch()[0]
    helpers = {'show_text_results': lambda: show_text_results(learn, max_n=2),
               'padding_invariance_gap': lambda: padding_invariance_gap(learn.model, xb),
               'block_inputs': lambda: block_inputs(learn.model, xb), 'pooled': lambda: pooled(learn.model, dls.valid)}
    for name, run in helpers.items():
        for training in (True, False):
            learn.model.train(training)
            run()
            assert all(m.training == training for m in learn.model.modules()), (name, training)

@pytest.mark.parametrize('precision', ['fp16', 'bf16'])
def test_learners_take_the_precision_of_the_device(dls, monkeypatch, precision):
    "classifier_learner asks `precision_for` (monkeypatched: a T4 says fp16, an H100 bf16)"
    monkeypatch.setattr(runtime, 'precision_for', lambda device=None, capability=None: precision)
    learn = classifier_learner(dls, SMALL, TrainConfig())
    cbs = [cb for cb in learn.cbs if isinstance(cb, MixedPrecision)]
    assert learn.precision == precision and len(cbs) == 1 and cbs[0].amp_mode.value == precision
    assert classifier_learner(dls, SMALL, TrainConfig(), precision='fp32').precision == 'fp32'

def test_fp32_on_the_cpu(dls):
    learn = classifier_learner(dls, SMALL, TrainConfig())
    assert learn.precision == 'fp32' and not any(isinstance(cb, MixedPrecision) for cb in learn.cbs)
    with pytest.raises(ValueError, match='precision'): classifier_learner(dls, SMALL, TrainConfig(), precision='fp8')

def test_mixed_precision_training_then_predictions(dls, monkeypatch):
    "Train with the bf16 callback (autocast only acts on CUDA, so on the CPU this checks the wiring), then predict"
    monkeypatch.setattr(runtime, 'validate_precision', lambda *a, **kw: None)   # bf16 on a CPU is refused, rightly, by default
    set_seed(0)
    learn = classifier_learner(dls, SMALL, TrainConfig(), precision='bf16')
    with learn.no_bar(), learn.no_logging(): learn.fit_one_cycle(1, 3e-2)
    preds, _ = learn.get_preds()
    assert preds.dtype == torch.float32 and torch.allclose(preds.sum(1), torch.ones(len(preds)), atol=1e-4)
    assert len(show_text_results(learn, max_n=2)) == 2
    assert learn.predict('a good film')[0] in ('positive', 'negative')

def test_run_classify_reports_device_precision_and_timings(tmp_path):
    res = run_classify(synth_text_df(n=48), CLASSIFY_QUICK.replace(epochs=2, emb=16, heads=2, depth=1, seq_len=24), quick=True,
                       out=tmp_path/'m.pkl', cache=tmp_path/'cache')
    assert res['device'] == runtime.default_device().type and res['precision'] == runtime.precision_for()   # fp32 on a CPU, bf16 on an H100
    assert min(res['tokenize_seconds'], res['train_seconds'], res['eval_seconds']) >= 0
    assert list((tmp_path/'cache').glob('tokens-*.npz'))
