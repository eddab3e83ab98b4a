"Lesson 52's checks accept the solutions and valid answers in other styles, and reject the stub, garbage and each typical mistake with its own hint."
import torch, torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence
from transformers_scratch.checks.toolkit import assert_check
from transformers_scratch.instruct import format_example, collate, respond, INST, INP, RESP, END, IGNORE
from transformers_scratch.checks.instruct import check_format_example, check_collate, check_respond
from transformers_scratch.generate import generate
from transformers_scratch.runtime import model_device
from conftest import stub

# --- format_example ---------------------------------------------------------------------------------------------------
def fe_fstring(ex, with_response=True):
    inp = f"{INP}{ex['input']}" if ex['input'] else ''
    return f"{INST}{ex['instruction']}{inp}{RESP}" + (f"{ex['response']}{END}" if with_response else '')

def fe_join(ex, with_response=True):
    parts = [INST, ex['instruction']]
    if ex.get('input'): parts += [INP, ex['input']]
    parts.append(RESP)
    if with_response: parts += [ex['response'], END]
    return ''.join(parts)

def fe_no_end(ex, with_response=True): return format_example(ex, with_response).removesuffix(END)
def fe_end_always(ex, with_response=True): return format_example(ex, False) + (ex['response'] if with_response else '') + END
def fe_input_always(ex, with_response=True): return INST + ex['instruction'] + INP + ex['input'] + RESP + (ex['response'] + END if with_response else '')
def fe_response_in_prompt(ex, with_response=True): return format_example(ex, True)
def fe_no_resp_marker(ex, with_response=True): return format_example(ex, with_response).replace(RESP, '')
def fe_newlines(ex, with_response=True): return format_example(ex, with_response).replace(RESP, '\n' + RESP + '\n')
def fe_input_first(ex, with_response=True):
    return (INP + ex['input'] if ex['input'] else '') + INST + ex['instruction'] + RESP + (ex['response'] + END if with_response else '')
def fe_no_input(ex, with_response=True): return INST + ex['instruction'] + RESP + (ex['response'] + END if with_response else '')
def fe_alpaca(ex, with_response=True):      # a plain-text template with no special tokens: not this lesson's
    return f"### Instruction:\n{ex['instruction']}\n\n### Response:\n" + (ex['response'] if with_response else '')
def fe_bytes(ex, with_response=True): return format_example(ex, with_response).encode()
def fe_none(ex, with_response=True): return None
def fe_ignores_flag(ex, with_response=True): return format_example(ex)

def fe_kwonly(ex, *, with_response=True): return format_example(ex, with_response)   # the lesson calls format_example(ex, False)
def fe_mutates(ex, with_response=True):      # ex['input'] rewritten: a second call (the tuned model's evaluation) gets <|input|> twice
    if ex['input']: ex['input'] = INP + ex['input']
    return INST + ex['instruction'] + ex['input'] + RESP + (ex['response'] + END if with_response else '')
def fe_pops(ex, with_response=True):         # the response popped: encode_example's next call raises KeyError
    r = ex.pop('response')
    return format_example({**ex, 'response': r}, with_response)
def fe_trailing_newline(ex, with_response=True): return format_example(ex, with_response) + '\n'
def fe_strips(ex, with_response=True):       # each field stripped: a prompt typed with a space reads differently
    return format_example({k: v.strip() for k, v in ex.items()}, with_response)
def fe_strips_input(ex, with_response=True):
    return format_example({**ex, 'input': ex['input'].strip()}, with_response)
def fe_copy(ex, with_response=True):         # works on a copy of ex: fine
    ex = dict(ex); ex['input'] = INP + ex['input'] if ex['input'] else ''
    return INST + ex['instruction'] + ex['input'] + RESP + (ex.pop('response') + END if with_response else '')

def test_format_example():
    for ok in (fe_fstring, fe_join, fe_copy): assert_check(check_format_example, ok)
    assert_check(check_format_example, format_example, [
        (stub, 'not solved'), (fe_none, 'as a str'), (fe_bytes, 'as a str'),
        (fe_no_end, 'end token is missing'), (fe_end_always, 'end token follows the response only'),
        (fe_input_always, 'no <\\|input\\|> section'), (fe_response_in_prompt, 'leaves the response out'),
        (fe_ignores_flag, 'leaves the response out'),
        (fe_no_resp_marker, '<\\|response\\|> is missing'), (fe_newlines, 'spaces or newlines'),
        (fe_input_first, 'out of order'), (fe_no_input, 'input is missing'), (fe_alpaca, 'differs from the template'),
        (fe_kwonly, 'cannot be called the way'), (fe_mutates, 'changed the example'), (fe_pops, 'changed the example'),
        (fe_trailing_newline, 'starts or ends with a space or newline'),
        (fe_strips, "spaces were stripped"), (fe_strips_input, "spaces were stripped")])

# --- collate ----------------------------------------------------------------------------------------------------------
def co_pad_sequence(pairs, pad_id):          # pad_sequence and a mask built from lengths
    seqs = [torch.tensor(list(p) + list(r)) for p, r in pairs]
    x = pad_sequence([s[:-1] for s in seqs], batch_first=True, padding_value=pad_id)
    y = pad_sequence([s[1:] for s in seqs], batch_first=True, padding_value=IGNORE)
    pos = torch.arange(y.shape[1])[None]
    plen = torch.tensor([len(p) for p, _ in pairs])[:, None]
    return x, y.masked_fill(pos < plen - 1, IGNORE)

def co_full_width(pairs, pad_id):            # x the whole sequence, one column more; that column's labels ignored
    T = max(len(p) + len(r) for p, r in pairs)
    x = torch.full((len(pairs), T), pad_id)
    y = torch.full((len(pairs), T), IGNORE)
    for i, (p, r) in enumerate(pairs):
        s = list(p) + list(r)
        x[i, :len(s)] = torch.tensor(s)
        y[i, len(p) - 1:len(s) - 1] = torch.tensor(list(r))
    return x, y

def co_where(pairs, pad_id):                 # labels from the shifted inputs and torch.where
    T = max(len(p) + len(r) for p, r in pairs)
    full = torch.tensor([list(p) + list(r) + [pad_id] * (T - len(p) - len(r)) for p, r in pairs])
    pos = torch.arange(T - 1)[None]
    lo = torch.tensor([len(p) - 1 for p, _ in pairs])[:, None]
    hi = torch.tensor([len(p) + len(r) - 1 for p, r in pairs])[:, None]
    return full[:, :-1], torch.where((pos >= lo) & (pos < hi), full[:, 1:], torch.full_like(full[:, 1:], IGNORE))

def _lib_then(f):
    def g(pairs, pad_id): return f(*collate(pairs, pad_id), pairs, pad_id)
    return g
co_float = _lib_then(lambda x, y, pairs, pad_id: (x.float(), y.float()))
co_swapped = _lib_then(lambda x, y, pairs, pad_id: (y, x))
co_y_only = _lib_then(lambda x, y, pairs, pad_id: y)
co_x_pad_ignore = _lib_then(lambda x, y, pairs, pad_id: (torch.where(y == IGNORE, torch.where(x == pad_id, IGNORE, x), x), y))
def co_prompt_plus_one(pairs, pad_id):       # the prompt's length counted once too many: the response's first two labels lost
    x, y = collate(pairs, pad_id)
    for i, (p, _) in enumerate(pairs): y[i, len(p) - 1:len(p) + 1] = IGNORE
    return x, y
def co_all(pairs, pad_id):                   # the loss on every token, padding included
    x, _ = collate(pairs, pad_id)
    T = x.shape[1] + 1
    full = torch.tensor([list(p) + list(r) + [pad_id] * (T - len(p) - len(r)) for p, r in pairs])
    return full[:, :-1], full[:, 1:]
def co_response_only_tokens(pairs, pad_id):  # x holds the response alone: the prompt never reaches the model
    return collate([(list(p[-1:]), list(r)) for p, r in pairs], pad_id)
def co_empty(pairs, pad_id): return torch.zeros(len(pairs), 0, dtype=torch.long), torch.zeros(len(pairs), 0, dtype=torch.long)

co_int32 = _lib_then(lambda x, y, pairs, pad_id: (x.int(), y.int()))        # F.cross_entropy refuses int32 labels
co_int16_y = _lib_then(lambda x, y, pairs, pad_id: (x, y.to(torch.int16)))
def co_numpy(pairs, pad_id):                 # numpy, then from_numpy of int64 arrays: fine
    import numpy as np
    T = max(len(p) + len(r) for p, r in pairs) - 1
    x, y = np.full((len(pairs), T), pad_id, dtype=np.int64), np.full((len(pairs), T), IGNORE, dtype=np.int64)
    for i, (p, r) in enumerate(pairs):
        s = list(p) + list(r); x[i, :len(s) - 1] = s[:-1]; y[i, len(p) - 1:len(s) - 1] = s[len(p):]
    return torch.from_numpy(x), torch.from_numpy(y)

def test_collate():
    for ok in (co_pad_sequence, co_full_width, co_where, co_numpy): assert_check(check_collate, ok)
    assert_check(check_collate, collate, [
        (stub, 'not solved'), (co_float, 'integer ids'), (co_swapped, r'return \(x, y\) in this order'),
        (co_int32, r'LongTensor \(torch.int64\), got torch.int32'), (co_int16_y, r'y should .* got torch.int16'), (co_y_only, r'return \(x, y\)'),
        (co_x_pad_ignore, 'negative ids'), (co_prompt_plus_one, "first token is not learned|differ"),
        (co_all, 'prompt too|padding'), (co_response_only_tokens, 'differ|prompt'), (co_empty, 'x should be'),
        (lambda pairs, pad_id: None, r'return \(x, y\)'), (lambda pairs, pad_id: (torch.zeros(3), torch.zeros(3)), 'integer ids|x should be')])

def test_collate_names_each_mistake():
    from transformers_scratch.checks.instruct import _seq_labels
    for how, hint in (('prompt', 'prompt too'), ('noshift', 'not shifted'), ('noshift_full', 'not shifted'), ('double', 'shifted twice'),
                      ('pad', 'padding is not ignored'), ('noend', 'end token is not learned'), ('nofirst', 'first token is not learned'),
                      ('resp', r'<\|response\|> is learned'), ('left', 'padded on the left')):
        assert_check(check_collate, collate, [(lambda pairs, pad_id, how=how: _seq_labels(pairs, pad_id, how), hint)])

# --- respond ----------------------------------------------------------------------------------------------------------
def re_no_cache(model, prompt, end_id, max_new=64):     # the whole sequence at each step (the hint's)
    model.eval()
    ids, out = torch.tensor(prompt, device=model_device(model))[None], []
    with torch.no_grad():
        for _ in range(max_new):
            t = model(ids)[0, -1].argmax().item()
            if t == end_id: break
            out.append(t); ids = torch.cat([ids, ids.new_tensor([[t]])], 1)
    return out

def re_generate(model, prompt, end_id, max_new=64):     # the library's generate, one greedy token at a time, a tensor back
    ids = torch.tensor(prompt)
    for _ in range(max_new):
        nxt = generate(model, ids, 1, greedy=True)[-1:]
        if nxt.item() == end_id: break
        ids = torch.cat([ids, nxt])
    return ids[len(prompt):]

def re_while(model, prompt, end_id, max_new=64):        # a while loop on the last token
    model.train(False)
    seq = list(prompt)
    with torch.inference_mode():
        while len(seq) - len(prompt) < max_new:
            seq.append(int(torch.argmax(model(torch.tensor([seq], device=model_device(model)))[0, -1])))
            if seq[-1] == end_id: return seq[len(prompt):-1]
    return seq[len(prompt):]

def _wrap(f):
    def g(model, prompt, end_id, max_new=64): return f(model, prompt, end_id, max_new)
    return g
re_with_prompt = _wrap(lambda m, p, e, n: list(p) + respond(m, p, e, n))
def re_keeps_end(model, prompt, end_id, max_new=64):
    out = re_no_cache(model, prompt, end_id, max_new)
    return out + [end_id] if len(out) < max_new else out
re_never_stops = _wrap(lambda m, p, e, n: respond(m, p, -1, n))
re_one_more = _wrap(lambda m, p, e, n: respond(m, p, -1, n + 1)[:len(respond(m, p, e, n)) + 1] if len(respond(m, p, e, n)) == n else respond(m, p, e, n))
def re_first_pos(model, prompt, end_id, max_new=64):
    model.eval(); ids, out = list(prompt), []
    with torch.no_grad():
        for _ in range(max_new):
            t = int(model(torch.tensor([ids]))[0, 0].argmax())
            if t == end_id: break
            out.append(t); ids.append(t)
    return out
def re_train_mode(model, prompt, end_id, max_new=64):
    ids, out = list(prompt), []
    with torch.no_grad():
        for _ in range(max_new):
            t = int(model(torch.tensor([ids]))[0, -1].argmax())
            if t == end_id: break
            out.append(t); ids.append(t)
    return out
def re_sample(model, prompt, end_id, max_new=64):
    model.eval(); ids, out = list(prompt), []
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for _ in range(max_new):
            t = int(torch.multinomial(F.softmax(model(torch.tensor([ids]))[0, -1] * 0.3, -1), 1, generator=g))
            if t == end_id: break
            out.append(t); ids.append(t)
    return out
re_text = _wrap(lambda m, p, e, n: ' '.join(map(str, respond(m, p, e, n))))
re_logits = _wrap(lambda m, p, e, n: m.eval()(torch.tensor([p]))[0])

def re_cpu(model, prompt, end_id, max_new=64):         # ids made on the CPU whatever the model's device: fails on a GPU
    model.eval(); ids, out = torch.tensor(prompt)[None], []
    with torch.no_grad():
        for _ in range(max_new):
            t = int(model(ids)[0, -1].argmax())
            if t == end_id: break
            out.append(t); ids = torch.cat([ids, torch.tensor([[t]])], 1)
    return out
def re_first_unchecked(model, prompt, end_id, max_new=64):   # append, then check: the first token is never compared with end_id
    out, t = [], respond(model, prompt, -1, 1)[0]
    while len(out) < max_new:
        out.append(t); t = respond(model, list(prompt) + out, -1, 1)[0]
        if t == end_id: break
    return out
def re_mutates_prompt(model, prompt, end_id, max_new=64):    # prompt.append: the caller's list grows
    n0 = len(prompt)
    while len(prompt) - n0 < max_new:
        t = respond(model, prompt, -1, 1)[0]
        if t == end_id: break
        prompt.append(t)
    return prompt[n0:]
def re_max0(model, prompt, end_id, max_new=64):              # the count checked after appending: max_new=0 still gives a token
    out = respond(model, prompt, end_id, max(max_new, 1))
    return out
re_ignores_max_new = _wrap(lambda m, p, e, n: respond(m, p, e, 64))
re_huge = _wrap(lambda m, p, e, n: list(range(100)))        # more tokens than the model's window: no crash of the check
def re_eval_noparen(model, prompt, end_id, max_new=64):      # model.eval without (): dropout stays on
    model.eval
    return re_train_mode(model, prompt, end_id, max_new)
def re_sample_global(model, prompt, end_id, max_new=64):     # sampling from the global RNG in eval mode
    model.eval(); ids, out = list(prompt), []
    with torch.no_grad():
        for _ in range(max_new):
            t = int(torch.multinomial(F.softmax(model(torch.tensor([ids], device=model_device(model)))[0, -1], -1), 1))
            if t == end_id: break
            out.append(t); ids.append(t)
    return out

def test_respond():
    for ok in (re_no_cache, re_generate, re_while): assert_check(check_respond, ok)
    assert_check(check_respond, respond, [
        (stub, 'not solved'), (re_with_prompt, 'not the prompt'), (re_keeps_end, 'leave the end token out'),
        (re_never_stops, 'ran past the end token'), (re_one_more, 'more than max_new'), (re_first_pos, "first position's logits"),
        (re_train_mode, 'training mode'), (re_sample, 'greedy|training mode|first position'), (re_text, 'list of token ids'),
        (re_logits, 'list of token ids'), (lambda model, prompt, end_id, max_new=64: None, 'list of token ids')])

def re_np_ints(model, prompt, end_id, max_new=64):           # numpy ints: named, with the way to convert them
    import numpy as np
    return [np.int64(t) for t in respond(model, prompt, end_id, max_new)]

def test_respond_device_and_edges():
    assert_check(check_respond, respond, [
        (re_cpu, 'made on the CPU'), (re_first_unchecked, 'first token picked is end_id'), (re_mutates_prompt, 'changed the prompt list'),
        (re_max0, r'max_new=0 gives \[\]'), (re_ignores_max_new, 'more than max_new'), (re_huge, 'more than max_new=10 tokens \\(100\\)'),
        (re_eval_noparen, 'training mode: dropout'), (re_sample_global, 'changes from run to run'),
        (re_np_ints, r'got numpy.int64 items: convert each with int\(t\)')])

def test_respond_verdict_does_not_depend_on_the_rng():
    "The same wrong answer gets the same hint whatever the caller's global RNG: the check seeds its runs"
    import io, contextlib
    from transformers_scratch.checks.toolkit import CheckError
    for f in (re_train_mode, re_sample_global):
        hints = set()
        for s in (0, 1, 2):
            torch.manual_seed(s)
            try:
                with contextlib.redirect_stdout(io.StringIO()): check_respond(f)
            except CheckError as e: hints.add(str(e))
        assert len(hints) == 1, hints

def re_stops_at_zero(model, prompt, end_id, max_new=64):     # stops at id 0 too (the padding id taken for the end): no crash, named
    out = respond(model, prompt, end_id, max_new)
    return out[:out.index(0)] if 0 in out else out
def re_hardcoded_end(model, prompt, end_id, max_new=64):     # the end id hard-coded (0, the padding id) instead of end_id
    return respond(model, prompt, 0, max_new)

def test_respond_stops_only_at_the_end_id():
    "The reference responses hold id 0 among other ids, so an answer that also stops at 0 (or only at 0) is caught and named"
    assert_check(check_respond, respond, [(re_stops_at_zero, 'stops at token 0'), (re_hardcoded_end, 'stops at token 0|ran past the end token')])

def co_pad_zero(pairs, pad_id): return collate(pairs, 0)          # pad_id ignored: 0 hard-coded (the lesson's pad id, not the fixture's)
def co_pad_end(pairs, pad_id):                                     # x padded with the end token: the labels are right, pad_id ignored
    x, y = collate(pairs, pad_id)
    for i, (p, r) in enumerate(pairs): x[i, len(p) + len(r) - 1:] = r[-1]
    return x, y
def co_mutates_pairs(pairs, pad_id):                               # the batch built, then the prompts' first id overwritten in place
    x, y = collate(pairs, pad_id)
    for p, _ in pairs: p[0] = pad_id
    return x, y
def co_list(pairs, pad_id): return list(collate(pairs, pad_id))   # [x, y]: unpacks as the lesson does, fine

def test_collate_pads_with_pad_id_and_leaves_pairs():
    "The padding of x is judged (pad_id=2 in a fixture), and so are the pairs' values after the call"
    assert_check(check_collate, co_list)
    assert_check(check_collate, collate, [(co_pad_zero, 'padded with 0, not pad_id=2'), (co_pad_end, r'padded with \d+, not pad_id'),
                                          (co_mutates_pairs, 'changed the pairs it was given')])
