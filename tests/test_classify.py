"`tfs classify` / `tfs predict` end to end on IMDB_SAMPLE, the save/load round trip, bad input, offline data, padding."
import copy, json, os, subprocess, time
from dataclasses import asdict
import pytest, torch
from transformers_scratch.textdata import text_dls, synth_text_df
from transformers_scratch.classify import (classifier_learner, padding_invariance_gap, load_classifier, save_classifier,
                                           predict_text, CLASSIFY_QUICK, CLASSIFY_FULL)
from transformers_scratch.runs import run_classify
from transformers_scratch.config import ModelConfig, TrainConfig, Recipe
from transformers_scratch.models import ClassificationTransformer
from transformers_scratch.data import imdb_sample_df, DataNotFoundError
from fastai.torch_core import set_seed

SMALL = ModelConfig(emb=16, heads=2, depth=1, seq_len=24, dropout=0.1, fast=True, prenorm=False)   # a tiny classifier
MAJORITY = 107 / 200   # IMDB_SAMPLE's validation split: 107 negative, 93 positive

def tfs(*args, env=None, timeout=600):
    "Run the `tfs` console script; returns the CompletedProcess"
    e = dict(os.environ, **(env or {}))
    return subprocess.run(['tfs', *args], capture_output=True, text=True, env=e, timeout=timeout)

def last_json(out): return json.loads(out.strip().splitlines()[-1])

def assert_one_line_error(r, pattern):
    assert r.returncode != 0, r
    assert 'Traceback' not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert pattern in lines[0], lines[0]

@pytest.fixture(scope='module')
def trained(tmp_path_factory):
    "Train once with `tfs classify --quick` (the one long test: about two minutes on 2 cores)"
    out = tmp_path_factory.mktemp('model')/'imdb_sample.pt'
    start = time.perf_counter()
    r = tfs('classify', '--quick', '--out', str(out))
    return r, out, time.perf_counter() - start

def test_classify_quick_learns(trained):
    r, out, secs = trained
    assert r.returncode == 0, r.stderr[-2000:]
    res = last_json(r.stdout)
    assert res['dataset'] == 'imdb_sample' and res['epochs'] == CLASSIFY_QUICK.train.epochs and res['quick'] is True
    assert (res['train_rows'], res['valid_rows']) == (800, 200)
    assert res['accuracy'] >= MAJORITY + 0.12, f"{res['accuracy']} is not well above the majority class {MAJORITY}"
    assert 0 < res['valid_loss'] < 5 and res['device'] in ('cpu', 'cuda', 'mps')
    assert res['model'] == str(out) and out.is_file()
    ck = torch.load(out, weights_only=True)   # weights + plain data: loads with no pickled object at all
    assert ck['format'] == 'transformers_scratch.classify/2' and ck['classes'] == ['negative', 'positive']
    assert sorted(p.name for p in out.parent.iterdir()) == [out.name]   # no temporary file left beside it
    print(f"tfs classify --quick: {secs:.0f}s wall, {res}")

def test_exported_learner_reproduces_the_accuracy(trained):
    "save_classifier -> load_classifier: the rebuilt learner gets exactly the accuracy measured at the end of training"
    r, out, _ = trained
    res = last_json(r.stdout)
    learn = load_classifier(out)
    valid = imdb_sample_df().query('is_valid')
    dl = learn.dls.test_dl(valid, with_labels=True)
    preds, targs = learn.get_preds(dl=dl)
    acc = (preds.argmax(1) == targs).float().mean().item()
    assert abs(acc - res['accuracy']) < 1e-3, (acc, res['accuracy'])

def test_predict_cli(trained):
    _, out, _ = trained
    good = "A wonderful, moving film. The acting is superb and the story is beautiful. One of the best movies I have seen, 10/10."
    bad = "Awful. The worst movie I have ever seen: boring, stupid, badly acted. A complete waste of time, avoid it. 1/10."
    rg, rb = tfs('predict', '--model', str(out), good), tfs('predict', '--model', str(out), bad)
    assert rg.returncode == 0 and rb.returncode == 0, rg.stderr + rb.stderr
    pg, pb = last_json(rg.stdout), last_json(rb.stdout)
    assert set(pg['probabilities']) == {'negative', 'positive'}
    assert abs(sum(pg['probabilities'].values()) - 1) < 1e-3
    assert pg['label'] == max(pg['probabilities'], key=pg['probabilities'].get)
    assert pg['probabilities']['positive'] > pb['probabilities']['positive'], (pg, pb)

def test_save_load_round_trip_identical_predictions(tmp_path):
    "save_classifier -> load_classifier (weights_only) -> the same predictions on new texts: to the bit on one device, within 1e-3 across"
    df = synth_text_df()
    set_seed(0)
    learn = classifier_learner(text_dls(df, seq_len=24, bs=8), SMALL, TrainConfig(lr=3e-2))
    with learn.no_bar(), learn.no_logging(): learn.fit_one_cycle(2)
    learn.to_fp32()   # compare the weights and the pipeline, not the rounding of bf16/fp16 autocast on a GPU
    texts = list(df.text[-20:]) + ['a superb film ' * 20, 'unseen words: zyzzyva, QUUX!']
    before = learn.get_preds(dl=learn.dls.test_dl(texts))[0]
    save_classifier(learn, tmp_path/'m.pt')
    assert sorted(p.name for p in tmp_path.iterdir()) == ['m.pt']              # no temporary file left beside it
    ck = torch.load(tmp_path/'m.pt', weights_only=True)                        # plain data: no pickled objects at all
    assert ck['classes'] == ['negative', 'positive'] and ck['vocab'] == list(learn.dls.vocab[0]) and ck['crop'] == {'seq_len': 24, 'keep': 'end'}
    assert ck['config'] == asdict(learn.model.config)                          # the model's configuration, as plain data
    loaded = load_classifier(tmp_path/'m.pt')   # always on the CPU
    assert loaded.model.config == learn.model.config
    after = loaded.get_preds(dl=loaded.dls.test_dl(texts))[0]
    if learn.dls.device.type == 'cpu': assert torch.equal(before, after)
    else:
        # trained on a GPU: `before` comes from GPU kernels (other reduction orders, TF32 matmuls where enabled),
        # which differ from the CPU's in the last bits, so equality to the bit only holds within one device
        torch.testing.assert_close(after, before.cpu(), atol=1e-3, rtol=1e-3)
    for t in texts[:3] + texts[-2:]:
        assert loaded.predict(t)[0] == learn.predict(t)[0]
        p = predict_text(tmp_path/'m.pt', t)
        assert p['label'] == learn.predict(t)[0]
    assert predict_text(tmp_path/'m.pt', texts[-2])['truncated'] and not predict_text(tmp_path/'m.pt', texts[0])['truncated']

def test_load_refuses_a_file_whose_parts_disagree(tmp_path):
    "The configuration is read by `load_model`, and the vocabulary, the classes and the crop must fit it: one CheckpointError (a ValueError) each"
    learn = classifier_learner(text_dls(synth_text_df(n=48), seq_len=24, bs=8, device='cpu'), SMALL, TrainConfig())
    ck = torch.load(save_classifier(learn, tmp_path/'m.pt'), weights_only=True)
    for change, pattern in ((lambda c: c['vocab'].pop(), 'vocabulary of .* n_tokens'),
                            (lambda c: c['classes'].append('maybe'), 'class names .* n_classes'),
                            (lambda c: c['config'].update(heads=3), 'config heads: 3 does not divide'),
                            (lambda c: c['config'].update(tie=True), 'unknown keys'),
                            (lambda c: c['config'].update(emb=2**16, seq_len=2**20), 'memory'),
                            (lambda c: c['crop'].update(seq_len=25), r'crop seq_len=25: expected an integer in \[1, 24\]'),
                            (lambda c: c['crop'].update(keep='middle'), r'crop\)$'),
                            (lambda c: c['state_dict'].pop('toprobs.bias'), r'weights: .*toprobs\.bias'),
                            (lambda c: c['classes'].__setitem__(0, 3), r'classes: entry 0 is int')):
        bad = copy.deepcopy(ck); change(bad)
        torch.save(bad, tmp_path/'bad.pt')
        with pytest.raises(ValueError, match=r"model: .*bad\.pt' is not a classifier .*\(damaged: .*" + pattern):
            load_classifier(tmp_path/'bad.pt')

@pytest.mark.parametrize('args,pattern', [
    (['classify', '--data', 'mnist'], 'invalid choice'),
    (['classify', '--epochs', '0'], 'positive'),
    (['classify', '--emb', '10', '--heads', '4'], 'does not divide'),
    (['classify', '--quick', '--heads', '3'], 'divide'),          # 3 does not divide the quick emb=64
    (['classify', '--quick', '--seq-len', str(2**21)], 'tfs classify: error: --seq-len: expected an integer in [1, 1,048,576]'),
    (['classify', '--gpt2', 'gpt2', '--quick', '--pos', 'sinusoidal'], 'not --pos'),
    (['predict', '--model', 'no/such/model.pkl', 'good film'], 'no/such/model.pkl'),
    (['predict', '--model', 'no/such/model.pkl', '   '], 'empty'),
], ids=['dataset', 'epochs', 'heads', 'heads-quick', 'seq-len', 'gpt2-pos', 'missing-model', 'empty-text'])
def test_bad_arguments(args, pattern):
    assert_one_line_error(tfs(*args, timeout=120), pattern)

@pytest.mark.parametrize('args,env,pattern', [
    (['--emb', '10'], {}, 'tfs classify: error: --heads: 4 does not divide emb=10'),                       # refused making the recipe
    (['--emb', '65536', '--seq-len', '65536'], {}, 'tfs classify: error: --emb: emb=65536'),              # refused after the run started
    (['--data', 'imdb', '--depth', '1000', '--emb', '4096'], {}, 'tfs classify: error: --emb: '),         # the full IMDB recipe, too large
    ([], {'TFS_DATA': 'EMPTY', 'TFS_OFFLINE': '1'}, "'imdb_sample'"),                                     # no data, found after the start
    (['--gpt2', 'no/such/folder'], {'TFS_OFFLINE': '1'}, 'no/such/folder'),                               # GPT-2's full recipe, no model
], ids=['heads', 'memory', 'imdb-memory', 'no-data', 'gpt2-missing'])
def test_full_configuration_refusals_are_one_line(args, env, pattern, tmp_path):
    "Without --quick, on a CPU, the note that the full configuration is meant for a GPU waits for training: a refusal is the one line"
    env = {k: str(tmp_path) if v == 'EMPTY' else v for k, v in env.items()}
    r = tfs('classify', *args, '--out', str(tmp_path/'m.pt'), env=env, timeout=120)
    assert_one_line_error(r, pattern)
    assert 'meant for a GPU' not in r.stderr and r.returncode == 2 and not (tmp_path/'m.pt').exists()

def test_recipes_and_the_learner():
    "Each dataset's full recipe; a learner takes (dls, config, train), fills the data's fields, keeps train's lr and wd"
    assert CLASSIFY_FULL['imdb_sample'] is CLASSIFY_QUICK and isinstance(CLASSIFY_FULL['imdb'], Recipe)
    assert CLASSIFY_FULL['ag_news'].train.max_train is None and CLASSIFY_FULL['ag_news'].model == CLASSIFY_QUICK.model
    assert (CLASSIFY_FULL['imdb'].train.keep, CLASSIFY_FULL['imdb'].model.seq_len, CLASSIFY_QUICK.train.max_train) == ('both', 1024, 2000)
    r = CLASSIFY_QUICK.replace(emb=32, epochs=3, pos='sinusoidal')
    assert (r.model.emb, r.model.pos, r.train.epochs, CLASSIFY_QUICK.model.emb, CLASSIFY_QUICK.train.epochs) == (32, 'sinusoidal', 3, 64, 8)
    dls = text_dls(synth_text_df(n=48), seq_len=24, bs=8, device='cpu')
    learn = classifier_learner(dls, SMALL, TrainConfig(lr=5e-3, wd=0.25, compile=True))
    c = learn.model.config
    assert (c.n_tokens, c.n_classes, c.pad_idx, c.emb, c.prenorm) == (len(dls.vocab[0]), 2, 1, 16, False)
    assert (learn.lr, learn.wd) == (5e-3, 0.25) and 'CompileModel' in [type(cb).__name__ for cb in learn.cbs]
    assert SMALL.n_tokens == 256 and SMALL.pad_idx is None                       # the config given is left as it was
    for bad, pat in (((SMALL, dict(lr=1e-3)), 'train: expected a TrainConfig'), ((dict(emb=16), TrainConfig()), 'config: expected a ModelConfig')):
        with pytest.raises(TypeError, match=pat): classifier_learner(dls, *bad)
    with pytest.raises(TypeError, match='recipe: expected a Recipe'): run_classify(synth_text_df(n=48), dict(epochs=1), quick=True)

def test_empty_text_with_a_real_model(trained):
    _, out, _ = trained
    assert_one_line_error(tfs('predict', '--model', str(out), ''), 'empty')

def test_offline_without_data_fails_at_once(tmp_path, monkeypatch):
    "No data and no network: an immediate DataNotFoundError naming the dataset and TFS_DATA, in-process and from the CLI"
    monkeypatch.setenv('TFS_DATA', str(tmp_path)); monkeypatch.setenv('TFS_OFFLINE', '1')
    start = time.perf_counter()
    with pytest.raises(DataNotFoundError, match=r"(?s)'imdb_sample'.*TFS_DATA"): imdb_sample_df()
    assert time.perf_counter() - start < 5
    r = tfs('classify', '--quick', env={'TFS_DATA': str(tmp_path), 'TFS_OFFLINE': '1'}, timeout=120)
    assert_one_line_error(r, "'imdb_sample'")
    assert 'TFS_DATA' in r.stderr and str(tmp_path) in r.stderr

@pytest.fixture(scope='module')
def imdb_dls():
    return text_dls(imdb_sample_df(), seq_len=CLASSIFY_QUICK.model.seq_len, bs=64)

def test_batches_are_cropped(imdb_dls):
    assert max(xb.shape[1] for xb, _ in imdb_dls.train) <= CLASSIFY_QUICK.model.seq_len
    assert max(xb.shape[1] for xb, _ in imdb_dls.valid) == CLASSIFY_QUICK.model.seq_len   # long reviews exist and were cropped

@pytest.mark.parametrize('pos,pool', [('learned', 'mean'), ('sinusoidal', 'mean'), ('learned', 'max')])
def test_padding_invariance_real_batches(imdb_dls, pos, pool):
    "In real IMDB batches (pads at the end; at the front too when long and short reviews meet), logits = review alone"
    torch.manual_seed(0)
    v = imdb_dls.vocab[0]
    m = ClassificationTransformer(ModelConfig(emb=32, heads=4, depth=2, seq_len=CLASSIFY_QUICK.model.seq_len, n_tokens=len(v), n_classes=2,
                                              pos=pos, pool=pool, pad_idx=v.index('xxpad')))
    batches = [xb.cpu() for xb, _ in imdb_dls.valid]
    df = imdb_sample_df()
    mixed = list(df.text[df.is_valid].iloc[:3]) + ['Great film, loved it.', 'Terrible. Avoid.', 'Meh.']
    batches.append(imdb_dls.test_dl(mixed).one_batch()[0].cpu())
    pad = torch.cat([(b == 1).float().mean(0)[[0, -1]][None] for b in batches])   # share of rows padded at each end
    assert pad[:, 0].max() > 0 and pad[:, 1].max() > 0, "the batches should have padding at both ends"
    for b in batches: assert padding_invariance_gap(m, b) < 1e-4
