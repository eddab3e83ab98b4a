"Lesson 52's library (its runner `run_instruct` lives in `runs`): the template, tokenizer, collator, generation, saving, run_instruct end to end (the quick figures: tests/measured_instruct.py)."
import pytest, torch
from transformers_scratch.config import ModelConfig
from transformers_scratch.models import GenerationTransformer
from transformers_scratch.checkpoints import CheckpointError
from transformers_scratch.runs import run_instruct
from transformers_scratch.instruct import (format_example, instruct_tokenizer, encode_example, collate, collate_all,
                                           respond, respond_batch, answer, save_instruct, load_instruct, ModelChat, lora_targets,
                                           INSTRUCT_QUICK, INSTRUCT_FULL, SPECIAL, IGNORE)

pytestmark = pytest.mark.usefixtures('one_thread')

def test_tokenizer_keeps_special_tokens_whole():
    tok = instruct_tokenizer()
    ids = tok.encode(format_example({'instruction': "Spell 'Öl'.", 'input': 'x<|end', 'response': 'Ö-l'}))
    assert tok.decode(ids) == "<|instruction|>Spell 'Öl'.<|input|>x<|end<|response|>Ö-l<|end|>"
    assert [i for i in ids if i < len(SPECIAL)] == [1, 2, 3, 4] and ids[-1] == tok.end_id
    assert tok.encode('日') == [tok.stoi['?']]
    assert len(tok) == INSTRUCT_QUICK['tune'].model.n_tokens == INSTRUCT_FULL['tune'].model.n_tokens

def test_collate_labels_the_response_and_end_only():
    tok = instruct_tokenizer()
    pairs = [encode_example(tok, {'instruction': 'Add 1 and 2.', 'input': '', 'response': '3'}),
             encode_example(tok, {'instruction': 'Spell it.', 'input': 'ab', 'response': 'a-b'})]
    x, y = collate(pairs, tok.pad_id)
    assert x.shape == y.shape == (2, max(len(p) + len(r) for p, r in pairs) - 1)
    for i, (p, r) in enumerate(pairs):
        assert y[i][y[i] != IGNORE].tolist() == r and x[i, len(p) - 1] == tok.stoi['<|response|>']
        assert (x[i, len(p) + len(r) - 1:] == tok.pad_id).all()
    xa, ya = collate_all(pairs, tok.pad_id)
    assert torch.equal(xa, x) and (ya != IGNORE).sum() == sum(len(p) + len(r) - 1 for p, r in pairs)

def test_respond_batch_agrees_with_respond_and_stops():
    torch.manual_seed(0)
    tok = instruct_tokenizer()
    m = GenerationTransformer(ModelConfig(emb=32, heads=2, depth=1, seq_len=48, n_tokens=len(tok))).eval()
    ps = [tok.encode(format_example({'instruction': w, 'input': '', 'response': ''}, False)) for w in ('Hi', 'Spell cat.', 'Add 22 and 35.')]
    got = respond_batch(m, ps, tok.end_id, 10, bs=2)
    assert [r for r, _ in got] == [respond(m, p, tok.end_id, 10) for p in ps]
    g = respond(m, ps[1], -1, 10)      # the end token first met in the continuation stops it there, and says so
    k = next(i for i in range(1, 10) if g[i] not in g[:i])
    assert respond_batch(m, ps[1:2], g[k], 10)[0] == (g[:k], True)
    long = list(range(5, 40)) * 2      # a prompt longer than the window: its end is read
    assert respond(m, long, tok.end_id, 5) == respond(m, long[-48:], tok.end_id, 5)

def test_save_load_and_answer(tmp_path):
    torch.manual_seed(0)
    tok = instruct_tokenizer()
    m = GenerationTransformer(ModelConfig(emb=32, heads=2, depth=1, seq_len=64, n_tokens=len(tok))).eval()
    p = save_instruct(m, tok, tmp_path/'m.pt')
    m2, tok2 = load_instruct(p)
    assert tok2.itos == tok.itos and torch.equal(m2(torch.tensor([[1, 7, 9]])), m(torch.tensor([[1, 7, 9]])))
    assert answer(m2, tok2, 'Reverse the word stone.', max_new=5) == tok.decode(respond(m, tok.encode(
        format_example({'instruction': 'Reverse the word stone.', 'input': '', 'response': ''}, False)), tok.end_id, 5))
    with pytest.raises(ValueError, match='instruction'): answer(m2, tok2, '  ')
    with pytest.raises(ValueError, match='instruction'): answer(m2, tok2, 'x' * 70)
    with pytest.raises(FileNotFoundError, match='tfs instruct'): load_instruct(tmp_path/'none.pt')
    (tmp_path/'bad.pt').write_bytes(b'junk')
    with pytest.raises(CheckpointError): load_instruct(tmp_path/'bad.pt')

def test_run_instruct_refuses_bad_arguments():
    with pytest.raises(TypeError, match='recipe'): run_instruct(INSTRUCT_QUICK['tune'])
    with pytest.raises(ValueError, match='lora'): run_instruct(INSTRUCT_QUICK, lora=8)
    with pytest.raises(ValueError, match='loss_on'):
        from transformers_scratch.instruct import tune
        tune(None, None, INSTRUCT_QUICK['tune'].train, [], loss_on='prompt')

class _Codec:   # a stand-in for a hub tokenizer: characters, with <|im_start|> and <|im_end|> as ids 1 and 2
    eos_id = 0
    def encode(self, s):
        out, i = [], 0
        while i < len(s):
            for k, m in ((1, '<|im_start|>'), (2, '<|im_end|>')):
                if s.startswith(m, i): out.append(k); i += len(m); break
            else: out.append(ord(s[i])); i += 1
        return out
    def decode(self, ids): return ''.join({1: '<|im_start|>', 2: '<|im_end|>'}.get(i, chr(i)) for i in ids)

def test_model_chat_writes_the_template_with_the_models_markers():
    tok = ModelChat(_Codec())
    assert (tok.end_id, tok.pad_id) == (2, 0)
    p, r = encode_example(tok, {'instruction': 'Hi', 'input': 'x', 'response': 'ok'})
    assert tok.decode(p) == '<|im_start|>user\nHi\n\nx<|im_end|>\n<|im_start|>assistant\n' and r == [ord('o'), ord('k'), 2]
    c = ModelConfig(emb=16, heads=2, mlp='swiglu', norm='rms', bias=False, n_tokens=10)
    assert lora_targets(c)[-3:] == ('gate', 'up', 'down') and lora_targets(ModelConfig())[-2:] == ('ff.0', 'ff.2')


def test_run_instruct_end_to_end_saves_what_it_tuned(tmp_path):
    """The whole path of `run_instruct` at a few steps, LoRA merged: base and tuned measured per task, the saved model the tuned one.
    (The quick configuration's figures are tested on lesson 52's own run: tests/measured_instruct.py, through test_colab_run.)"""
    tiny = {k: r.replace(emb=32, heads=2, depth=1, seq_len=128, n_batches=3, bs=8, max_train=70, max_valid=14) for k, r in INSTRUCT_QUICK.items()}
    r = run_instruct(tiny, out=tmp_path/'m.pt', seed=0, device='cpu', verbose=False, lora=(2, 4))
    assert set(r['base']) == set(r['tuned']) == {'spell', 'count', 'reverse', 'add', 'sentiment', 'topic', 'translate'}
    assert all(0 <= v['exact'] <= 1 and 0 <= v['stops'] <= 1 for v in r['tuned'].values()) and 'bleu' in r['tuned']['translate']
    m, tok = load_instruct(r['path'])
    assert m.config == tiny['tune'].model and tok.itos == r['tokenizer'].itos
    x = torch.randint(0, len(tok), (2, 16))
    assert torch.equal(m(x), r['model'].cpu()(x)) and not any('lora' in n for n, _ in m.named_parameters())

def test_run_instruct_tunes_on_the_tasks_asked_for():
    "`tasks=` (a dict of shares, lesson 51's `instruction_data`) picks what is tuned and measured; no base model with base=False"
    tiny = {k: r.replace(emb=32, heads=2, depth=1, seq_len=128, n_batches=2, bs=8, max_train=30, max_valid=4) for k, r in INSTRUCT_QUICK.items()}
    r = run_instruct(tiny, seed=0, device='cpu', verbose=False, base=False, tasks={'add': 2, 'spell': 1})
    assert r['tasks'] == ['spell', 'add'] and set(r['tuned']) == {'add', 'spell'} and 'base' not in r
    assert r['tuned']['add']['n'] == r['tuned']['spell']['n'] == 2                     # validation stays even
    with pytest.raises(ValueError, match="tasks: unknown task 'spel'"): run_instruct(tiny, device='cpu', verbose=False, tasks=['spel'])
