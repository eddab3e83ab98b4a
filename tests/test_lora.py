"Lesson 50's library: LoRA's known properties (equal at the start, merge equality, frozen base, small trainable share), the counts on `meta`, and the adapter's save/load round trip with its base checked."
import copy, dataclasses
import pytest, torch, torch.nn as nn
from transformers_scratch.config import ModelConfig
from transformers_scratch.models import GenerationTransformer
from transformers_scratch.checkpoints import CheckpointError
from transformers_scratch.lora import (LoRALinear, add_lora, merge_lora, lora_counts, save_adapter, load_adapter,
                                       base_fingerprint, lm_loss, lm_steps, reviews_as, adapt_compare, linear_names,
                                       gpt2_lora_compare, GPT2_LORA_QUICK)
from transformers_scratch.checks.toolkit import _DeviceMix

C = ModelConfig(emb=32, heads=4, depth=2, seq_len=16, n_tokens=40)
def _model(seed=0, c=C): torch.manual_seed(seed); return GenerationTransformer(c).eval()
def _trained(m):
    for mod in m.modules():
        if isinstance(mod, LoRALinear): nn.init.normal_(mod.B, std=0.1)
    return m
IDS = torch.randint(0, 40, (3, 16), generator=torch.Generator().manual_seed(1))

@pytest.mark.parametrize('targets', [('toqueries', 'tovalues'), ('toqueries', 'tokeys', 'tovalues', 'unifyheads', 'ff.0', 'ff.2', 'toprobs')])
def test_adapted_model_starts_equal_to_its_base(targets):
    base = _model()
    ref = base(IDS)
    m = add_lora(copy.deepcopy(base), targets, r=4, alpha=8)
    assert torch.equal(m.eval()(IDS), ref)              # exactly: B is zero
    assert torch.equal(m.train()(IDS), base.train()(IDS))

def test_only_the_adapters_train_and_the_base_gets_no_gradient():
    m = add_lora(_model(), ['toqueries', 'tovalues'], r=4, alpha=8)
    names = [n for n, p in m.named_parameters() if p.requires_grad]
    assert names and all(n.endswith(('.A', '.B')) for n in names)
    _trained(m)
    m(IDS).sum().backward()
    assert all(p.grad is None for n, p in m.named_parameters() if not p.requires_grad)
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for n, p in m.named_parameters() if p.requires_grad)

def test_merged_and_unmerged_logits_agree():
    for c in (C, dataclasses.replace(C, mlp='swiglu', norm='rms', pos='rope', bias=False, kv_heads=2)):
        targets = ('toqueries', 'tovalues', 'tokeys', 'unifyheads') + (('gate', 'up', 'down') if c.mlp == 'swiglu' else ('ff.0', 'ff.2'))
        m = _trained(add_lora(_model(c=c), targets, r=4, alpha=8))
        before = m(IDS)
        merged = merge_lora(copy.deepcopy(m)).eval()
        assert not any(isinstance(x, LoRALinear) for x in merged.modules())
        assert all(type(x) is nn.Linear for n, x in merged.named_modules() if n.endswith(targets))
        assert (merged(IDS) - before).abs().max() < 1e-5

def test_merge_of_a_lone_layer():
    lin = nn.Linear(6, 5)
    w = _trained(nn.Sequential(LoRALinear(lin, 2, 4)))[0]
    x = torch.randn(3, 6)
    assert torch.allclose(merge_lora(copy.deepcopy(w))(x), w(x), atol=1e-6)

def test_trainable_share_is_small_for_the_usual_targets():
    gpt2 = ModelConfig(emb=768, heads=12, depth=12, seq_len=1024, n_tokens=50257, act='gelu_tanh', qkv_bias=True, tied=True)
    d = lora_counts(lambda: GenerationTransformer(gpt2), ('toqueries', 'tovalues'), r=8)
    assert d['trainable'] == 12 * 2 * 8 * (768 + 768) and d['fraction'] <= 0.02
    assert 124e6 < d['total'] < 125e6                    # GPT-2 small, tied weights counted once
    d = lora_counts(lambda: GenerationTransformer(gpt2), ('toqueries', 'tokeys', 'tovalues', 'unifyheads', 'ff.0', 'ff.2'), r=16)
    assert d['trainable'] == 12 * 16 * (4 * 2 * 768 + 2 * (768 + 3072)) and d['fraction'] < 0.022   # 2.65 M: LLMs from scratch's 2.67 M less the head's
    assert d['adamw_state'] == 2 * d['trainable']
    assert lora_counts(lambda: GenerationTransformer(gpt2), ('toqueries', 'tokeys', 'tovalues', 'unifyheads', 'ff.0', 'ff.2'), r=8)['fraction'] <= 0.02

def test_counting_on_meta_allocates_nothing():
    big = ModelConfig(emb=2048, heads=16, depth=24, seq_len=2048, n_tokens=50000)   # about 1.3 B parameters: would need 5 GB
    d = lora_counts(lambda: GenerationTransformer(big), ('toqueries', 'tovalues'), r=8)
    assert d['total'] > 1e9 and d['trainable'] == 24 * 2 * 8 * 4096

def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match='r:'): LoRALinear(nn.Linear(3, 3), r=0)
    with pytest.raises(ValueError, match='alpha:'): LoRALinear(nn.Linear(3, 3), r=2, alpha=-1)
    with pytest.raises(ValueError, match='dropout:'): LoRALinear(nn.Linear(3, 3), r=2, dropout=1.5)
    with pytest.raises(TypeError, match='base:'): LoRALinear(nn.Conv1d(3, 3, 1))

def test_a_target_that_matches_nothing_is_named_with_the_linears_there_are():
    "A typo in targets would adapt nothing and train nothing: one line naming it and the model's Linears, the model left as it was"
    m = _model()
    with pytest.raises(ValueError) as e: add_lora(m, ['toqueries', 'toquery'])
    msg = str(e.value)
    assert msg.startswith("targets: no nn.Linear is named 'toquery'") and '\n' not in msg
    assert 'trunk.blocks.*.attention.toqueries' in msg and 'trunk.blocks.*.ff.0' in msg and 'toprobs' in msg
    assert all(p.requires_grad for p in m.parameters()) and not any(isinstance(x, LoRALinear) for x in m.modules())   # refused before any change
    with pytest.raises(ValueError, match="'trunk.blocks.0.attention' is a SelfAttention"): add_lora(_model(), 'attention')
    for bad in ([], '', [None]):
        with pytest.raises(ValueError, match='targets: expected one or more names'): add_lora(_model(), bad)
    with pytest.raises(TypeError, match='model:'): add_lora(lambda x: x, ['toqueries'])
    assert linear_names(_model(), most=2) == ['toprobs', 'trunk.blocks.*.attention.tokeys', '… (5 more)']

def test_adapter_round_trip(tmp_path):
    m = _trained(add_lora(_model(), ['toqueries', 'tovalues'], r=4, alpha=8, dropout=0.1)).eval()
    ref = m(IDS)
    p = save_adapter(m, tmp_path/'a'/'adapter.pt')
    assert p.stat().st_size < 40_000                     # the adapter only: the model's weights are 4× more
    fresh = _model()                                     # the same base, rebuilt
    assert base_fingerprint(fresh) == base_fingerprint(m)
    back = load_adapter(fresh, p).eval()
    assert torch.equal(back(IDS), ref)
    assert [n for n, x in back.named_modules() if isinstance(x, LoRALinear)] == [n for n, x in m.named_modules() if isinstance(x, LoRALinear)]
    assert {x.dropout.p for x in back.modules() if isinstance(x, LoRALinear)} == {0.1}
    again = load_adapter(back, p)                        # onto an already adapted model of the same shape: the weights are replaced
    assert torch.equal(again(IDS), ref)

def test_adapter_refuses_another_base_in_one_line(tmp_path):
    p = save_adapter(_trained(add_lora(_model(), ['toqueries'], r=2, alpha=4)), tmp_path/'adapter.pt')
    with pytest.raises(CheckpointError) as e: load_adapter(_model(seed=1), p)
    assert 'sha256' in str(e.value) and str(p) in str(e.value) and '\n' not in str(e.value)
    with pytest.raises(CheckpointError, match='another configuration'): load_adapter(_model(c=dataclasses.replace(C, depth=3)), p)
    (tmp_path/'junk.pt').write_bytes(b'not a checkpoint')
    with pytest.raises(CheckpointError): load_adapter(_model(), tmp_path/'junk.pt')
    with pytest.raises(FileNotFoundError): load_adapter(_model(), tmp_path/'none.pt')
    with pytest.raises(ValueError, match='no LoRALinear'): save_adapter(_model(), tmp_path/'b.pt')

def test_lm_steps_trains_only_what_requires_grad():
    ids = torch.randint(0, 40, (2000,), generator=torch.Generator().manual_seed(0))
    m = add_lora(_model(), ['toqueries', 'tovalues'], r=2, alpha=4)
    frozen = {k: v.clone() for k, v in m.state_dict().items() if not k.endswith(('.A', '.B'))}
    before = lm_loss(m, ids, 16)
    lm_steps(m, ids, 16, steps=30, bs=8, lr=1e-2)
    assert all(torch.equal(v, m.state_dict()[k]) for k, v in frozen.items())
    assert lm_loss(m, ids, 16) < before

def test_reviews_as_keeps_to_the_vocabulary():
    import pandas as pd
    df = pd.DataFrame(dict(text=['Great film!<br /><br />10/10', 'bad'], is_valid=[True, False]))
    t = reviews_as('abdefgilmnrtG !', df)
    assert t == 'bad\n\nGreat film!' + ' ' * 7 and set(t) <= set('abdefgilmnrtG !\n')

def test_counts_for_the_course_pretrained_models_from_their_config_mappings():
    from transformers_scratch.gpt2 import gpt2_config, config_from_gpt2
    from transformers_scratch.llama import config_from_llama
    smol = dict(model_type='llama', hidden_size=576, num_attention_heads=9, num_key_value_heads=3, num_hidden_layers=30, intermediate_size=1536,
                vocab_size=49152, max_position_embeddings=8192, rms_norm_eps=1e-5, rope_theta=100000., tie_word_embeddings=True)
    for c, targets, total in ((config_from_gpt2(gpt2_config('gpt2')), ('ff.0', 'ff.2'), 124_439_808),
                              (config_from_llama(smol, seq_len=2048), ('gate', 'up', 'down'), 134_515_008)):
        qv = lora_counts(lambda: GenerationTransformer(c), ('toqueries', 'tovalues'), r=8)
        every = lora_counts(lambda: GenerationTransformer(c), ('toqueries', 'tokeys', 'tovalues', 'unifyheads') + targets, r=8)
        assert qv['total'] == total and qv['fraction'] < every['fraction'] <= 0.02

class _OnMeta(_DeviceMix):
    "Stands for a GPU: any op that mixes a `meta` tensor with a CPU one raises, as CUDA does; a value read off `meta` is 0 (it holds none)"
    def __init__(self): super().__init__('meta')
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.Tensor.item and args[0].device.type == 'meta': return 0.
        return super().__torch_function__(func, types, args, kwargs)

def test_lm_helpers_work_on_the_models_device():
    "The text's ids come as the lesson makes them, on the CPU; the model is elsewhere (meta, standing for a GPU): windows, losses and training meet it there"
    ids = torch.randint(0, 40, (600,), generator=torch.Generator().manual_seed(0))
    m = _model().to('meta')
    with _OnMeta():
        assert lm_loss(m, ids, 16) == 0.
        assert lm_steps(m, ids, 16, steps=2, bs=4) is m and all(p.device.type == 'meta' for p in m.parameters())
        rows = adapt_compare(m, ids, 2, ranks=(2,), bs=4)
    assert [r['method'] for r in rows] == ['unadapted', 'full fine-tuning', 'LoRA r=2']

@pytest.mark.parametrize('precision', ['bf16', 'fp16'])
def test_lm_steps_trains_in_the_precision_of_the_device(monkeypatch, precision):
    "lm_steps asks `precision_for` (monkeypatched: an H100 says bf16, a T4 fp16); autocast then runs on the CPU, the weights stay float32"
    import transformers_scratch.lora as lora
    monkeypatch.setattr(lora, 'precision_for', lambda device=None, capability=None: precision)
    seen = []
    orig = torch.autocast
    monkeypatch.setattr(torch, 'autocast', lambda *a, **kw: seen.append(kw.get('dtype')) or orig(*a, **kw))
    ids = torch.randint(0, 40, (600,), generator=torch.Generator().manual_seed(0))
    m = lm_steps(_model(), ids, 16, steps=3, bs=4)
    assert seen == [{'bf16': torch.bfloat16, 'fp16': torch.float16}[precision]] * 3
    assert all(p.dtype == torch.float32 and torch.isfinite(p).all() for p in m.parameters())
    with pytest.raises(ValueError, match='precision'): lm_steps(_model(), ids, 16, steps=1, precision='bf16')   # refused on a CPU, not faked

def test_lm_helpers_name_bad_input():
    with pytest.raises(TypeError, match='ids:'): lm_loss(_model(), [1, 2, 3], 16)
    with pytest.raises(ValueError, match='ids: 10 tokens are too few'): lm_steps(_model(), torch.arange(10), 16, 1)
    with pytest.raises(ValueError, match='nothing to train'): lm_steps(_model().requires_grad_(False), torch.arange(100) % 40, 16, 1)

def test_lora_on_the_gpt2_classifier_quick(monkeypatch):
    "Lesson 25's classifier path, full vs LoRA, on a smaller tiny random GPT-2: LoRA trains the adapters and the head only; data and model meet on the run's device"
    import transformers_scratch.runtime as runtime
    seen, orig = [], runtime.set_precision
    def spy(learn, precision='auto'):
        seen.append((learn.dls.device, {p.device for p in learn.model.parameters()}, [n for n, p in learn.model.named_parameters() if p.requires_grad]))
        return orig(learn, precision)
    monkeypatch.setattr(runtime, 'set_precision', spy)
    from fastai.learner import Learner
    import fastai.callback.schedule  # noqa: F401 (Learner.fit_one_cycle)
    fit, frozen = Learner.fit_one_cycle, []
    def fit_spy(learn, *a, **kw):   # the frozen trunk stays frozen, and unchanged, through fastai's training
        before = {n: p.detach().clone() for n, p in learn.model.named_parameters() if not p.requires_grad}
        out = fit(learn, *a, **kw)
        frozen.append((len(before), [n for n, p in learn.model.named_parameters() if n in before and (p.requires_grad or not torch.equal(p, before[n]))]))
        return out
    monkeypatch.setattr(Learner, 'fit_one_cycle', fit_spy)
    res = gpt2_lora_compare(quick=True, recipe=GPT2_LORA_QUICK.replace(depth=1, epochs=1, seq_len=32), ranks=(2,))
    assert [r['method'] for r in res['rows']] == ['full fine-tuning', 'LoRA r=2']
    full, r2 = res['rows']
    assert full['trainable_pct'] == 100 and 0 < r2['trainable_pct'] < 25
    assert all(d.type == res['device'] and {q.type for q in ps} == {d.type} for d, ps, _ in seen)   # the batches go where the model is
    assert all(n.endswith(('.A', '.B')) or n.startswith('head.') for n in seen[1][2]) and 'head.weight' in seen[1][2]
    assert frozen[0] == (0, []) and frozen[1][0] > 0 and frozen[1][1] == []
    assert all(0 <= r['accuracy'] <= 1 and r['seconds'] >= 0 for r in res['rows'])
    assert res['device'] == runtime.default_device().type and res['precision'] == runtime.precision_for()   # the run's device, its precision
    assert res['quick'] and res['dataset'] == 'imdb_sample'
    from transformers_scratch.gpt2 import gpt2_config, config_from_gpt2
    from transformers_scratch.lora import GPT2_LORA_FULL
    assert GPT2_LORA_FULL.model == dataclasses.replace(config_from_gpt2(gpt2_config('gpt2')), seq_len=256)   # GPT-2 small's shape
    with pytest.raises(ValueError, match='precision'): gpt2_lora_compare(quick=True, precision='bf16')
    with pytest.raises(ValueError, match='r:'): gpt2_lora_compare(quick=True, ranks=(0,))
    with pytest.raises(ValueError, match='data:'): gpt2_lora_compare(data='sst2')
