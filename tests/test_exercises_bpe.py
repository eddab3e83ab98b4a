"Lesson 19's checks accept the solutions and valid answers in other styles, and reject the stub and each typical mistake with its own hint."
import itertools, re
from collections import Counter, defaultdict
import pytest, regex
from transformers_scratch.checks.toolkit import assert_check
from transformers_scratch.bpe import (pair_counts, merge_pair, pretokenize, train_bpe, train_bpe_fast, bpe_encode, bpe_decode,
                                      encode_special, vocab_of, BPETokenizer, GPT2_SPLIT)
from transformers_scratch.checks.bpe import (check_pair_counts, check_merge, check_split, check_train, check_encode, check_decode,
                                             check_encode_special, TRAIN_TEXT)
from conftest import stub

# --- pair counts ------------------------------------------------------------------------------------------------------
def pc_loop(ids):
    d = {}
    for i in range(len(ids) - 1): d[(ids[i], ids[i + 1])] = d.get((ids[i], ids[i + 1]), 0) + 1
    return d
def pc_defaultdict(ids):
    d = defaultdict(int)
    for p in zip(ids, ids[1:]): d[p] += 1
    return d
def pc_minbpe(ids, counts=None):                 # minbpe's get_stats
    counts = {} if counts is None else counts
    for p in zip(ids, ids[1:]): counts[p] = counts.get(p, 0) + 1
    return counts
def pc_pairwise(ids): return Counter(itertools.pairwise(ids))

def pc_two_at_a_time(ids): return Counter(zip(ids[0::2], ids[1::2]))
def pc_once(ids): return dict.fromkeys(zip(ids, ids[1:]), 1)
def pc_last_lost(ids): return Counter((ids[i], ids[i + 1]) for i in range(len(ids) - 2))
def pc_wrap(ids): return Counter(zip(ids, ids[1:] + ids[:1]))
def pc_backwards(ids): return Counter(zip(ids[1:], ids))
def pc_list(ids): return list(zip(ids, ids[1:]))
def pc_most_common(ids): return Counter(zip(ids, ids[1:])).most_common()
def pc_singles(ids): return Counter(ids)
def pc_strings(ids): return Counter(f"{a},{b}" for a, b in zip(ids, ids[1:]))
def pc_pop(ids):
    out = Counter(zip(ids, ids[1:]))
    if ids: ids.pop()
    return out
def pc_set_len(ids): return {p: len(set(ids)) for p in zip(ids, ids[1:])}

def test_pair_counts():
    for ok in (pc_loop, pc_defaultdict, pc_minbpe, pc_pairwise): assert_check(check_pair_counts, ok)
    assert_check(check_pair_counts, pair_counts, [
        (stub, 'not solved'), (pc_two_at_a_time, 'two at a time'), (pc_once, 'counted once'), (pc_last_lost, 'last pair is missing'),
        (pc_wrap, 'wrap around'), (pc_backwards, 'backwards'), (pc_list, 'return a dict'), (pc_most_common, 'return a dict'),
        (pc_singles, 'pairs of ids as tuples'), (pc_strings, 'pairs of ids as tuples'), (pc_pop, 'changed the ids'),
        (pc_set_len, 'counted')])

# --- merge ------------------------------------------------------------------------------------------------------------
def m_index(ids, pair, new):
    out, i = [], 0
    while i < len(ids):
        if ids[i:i + 2] == list(pair): out.append(new); i += 2
        else: out.append(ids[i]); i += 1
    return out
def m_skip_flag(ids, pair, new):
    out, skip = [], False
    for i, x in enumerate(ids):
        if skip: skip = False; continue
        if i + 1 < len(ids) and (x, ids[i + 1]) == pair: out.append(new); skip = True
        else: out.append(x)
    return out
def m_tuple(ids, pair, new): return tuple(merge_pair(list(ids), pair, new))
def m_copy_then_del(ids, pair, new):
    ids, i = list(ids), 0
    while i < len(ids) - 1:
        if ids[i] == pair[0] and ids[i + 1] == pair[1]: ids[i:i + 2] = [new]
        i += 1
    return ids

def m_last_lost(ids, pair, new):
    out, i = [], 0
    while i < len(ids) - 1:
        if (ids[i], ids[i + 1]) == pair: out.append(new); i += 2
        else: out.append(ids[i]); i += 1
    return out
def m_overlap(ids, pair, new): return [new if (a, b) == pair else a for a, b in zip(ids, ids[1:])] + ids[-1:]
def m_first(ids, pair, new):
    for i in range(len(ids) - 1):
        if (ids[i], ids[i + 1]) == pair: return ids[:i] + [new] + ids[i + 2:]
    return list(ids)
def m_backwards(ids, pair, new): return merge_pair(ids, pair[::-1], new)
def m_in_place(ids, pair, new):
    i = 0
    while i < len(ids) - 1:
        if (ids[i], ids[i + 1]) == pair: ids[i:i + 2] = [new]
        i += 1
    return ids
def m_none(ids, pair, new): ids[:] = merge_pair(list(ids), pair, new)
def m_str_replace(ids, pair, new):           # works on the text of the ids: '1 2' also matches inside '11 2'
    s = ' ' + ' '.join(map(str, ids)) + ' '
    s = s.replace(f"{pair[0]} {pair[1]} ", f"{new} ")
    return [int(x) for x in s.split()]
def m_right_to_left(ids, pair, new): return merge_pair(ids[::-1], pair[::-1], new)[::-1]
def m_strings(ids, pair, new): return [str(x) for x in merge_pair(ids, pair, new)]

def test_merge():
    for ok in (m_index, m_skip_flag, m_tuple, m_copy_then_del): assert_check(check_merge, ok)
    assert_check(check_merge, merge_pair, [
        (stub, 'not solved'), (m_last_lost, 'last id is lost'), (m_overlap, 'overlaps'), (m_first, 'only the first'),
        (m_backwards, 'backwards'), (m_in_place, 'changed the ids'), (m_none, 'changed the ids|returned None'),
        (m_right_to_left, 'from the right'), (m_strings, 'should hold ints')])

# --- split ------------------------------------------------------------------------------------------------------------
def s_compiled(text): return regex.compile(GPT2_SPLIT).findall(text)
def s_finditer(text): return [m.group() for m in regex.finditer(r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""", text)]
def s_tiktoken_style(text):                    # tiktoken's gpt2 pattern, with the possessive-free spelling
    return tuple(regex.findall(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""", text))
def s_verbose(text):
    pat = regex.compile(r"""
        '(?:s|t|re|ve|m|ll|d)      # contractions
      | \x20?\p{L}+ | \x20?\p{N}+  # letters, numbers
      | \x20?[^\s\p{L}\p{N}]+      # the rest
      | \s+(?!\S) | \s+""", regex.VERBOSE)
    return pat.findall(text)

def s_str_split(text): return text.split()
def s_w(text): return regex.findall(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\w+| ?[^\s\w]+|\s+(?!\S)|\s+""", text)
def s_ascii(text): return re.findall(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[a-zA-Z]+| ?[0-9]+| ?[^\sa-zA-Z0-9]+|\s+(?!\S)|\s+""", text)
def s_no_lookahead(text): return regex.findall(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+""", text)
def s_no_space(text): return regex.findall(r"""'s|'t|'re|'ve|'m|'ll|'d|\p{L}+|\p{N}+|[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""", text)
def s_ignorecase(text): return regex.findall(r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""", text)
def s_gpt4_digits(text): return regex.findall(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}{1,3}| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""", text)
def s_no_contractions(text): return regex.findall(r""" ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""", text)
def s_finditer_raw(text): return list(regex.finditer(GPT2_SPLIT, text))
def s_whitespace_first(text): return regex.findall(r"""\s+(?!\S)|\s+|'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+""", text)
def s_cl100k(text):                             # GPT-4's whole pattern
    return regex.findall(r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""", text)
def s_bytes(text): return [c.encode() for c in regex.findall(GPT2_SPLIT, text)]

def test_split():
    for ok in (s_compiled, s_finditer, s_tiktoken_style, s_verbose): assert_check(check_split, ok)
    assert_check(check_split, pretokenize, [
        (stub, 'not solved'), (s_str_split, 'join back'), (s_w, r'\\w joins'), (s_ascii, 'beyond ASCII'), (s_no_lookahead, r'\(\?!\\S\)'),
        (s_no_space, "' \\?'"), (s_ignorecase, 'lower case only'), (s_gpt4_digits, 'digits whole'), (s_no_contractions, 'contractions'),
        (s_finditer_raw, 'finditer'), (s_whitespace_first, 'space before it'), (s_cl100k, 'lower case only|chunk'), (s_bytes, 'should be strings')])

# --- train ------------------------------------------------------------------------------------------------------------
def _words(text): return [(list(c.encode('utf-8')), n) for c, n in Counter(pretokenize(text)).items()]
def _trainer(words, vocab_size, pick=lambda c: max(c, key=c.get), count=lambda w: zip(w, w[1:]), merge=merge_pair):
    "The training loop over (ids, count) `words`, with the pair `pick`ed from the counts, pairs `count`ed and chunks `merge`d as given"
    merges = {}
    for new in range(256, vocab_size):
        counts = Counter()
        for w, n in words:
            for p in count(w): counts[p] += n
        if not counts: break
        pair = pick(counts)
        words = [(merge(w, pair, new), n) for w, n in words]
        merges[pair] = new
    return merges

def t_minbpe_ties(text, vocab_size):           # minbpe's max(stats, key=stats.get): a tie goes to the pair counted first
    return _trainer(_words(text), vocab_size)
def t_largest_tie(text, vocab_size):           # ties to the largest pair, counted with Counter.update
    words, merges = _words(text), {}
    for new in range(256, vocab_size):
        counts = Counter()
        for w, n in words: counts.update({p: k * n for p, k in Counter(zip(w, w[1:])).items()})
        if not counts: break
        pair = max(counts, key=lambda p: (counts[p], p))
        words = [(merge_pair(w, pair, new), n) for w, n in words]
        merges[pair] = new
    return merges
def t_fast(text, vocab_size): return train_bpe_fast(text, vocab_size)
def t_repeat_chunks(text, vocab_size):         # every chunk kept, repeats and all (slow but right)
    words, merges = [list(c.encode()) for c in pretokenize(text)], {}
    for new in range(256, vocab_size):
        counts = Counter(p for w in words for p in zip(w, w[1:]))
        if not counts: break
        pair = counts.most_common(1)[0][0]
        words = [merge_pair(w, pair, new) for w in words]
        merges[pair] = new
    return merges

def _unweighted(text, vocab_size):
    words, merges = [list(c.encode()) for c in set(pretokenize(text))], {}
    for new in range(256, vocab_size):
        counts = Counter(p for w in words for p in zip(w, w[1:]))
        if not counts: break
        pair = max(counts, key=lambda p: (counts[p], -p[0], -p[1]))
        words = [merge_pair(w, pair, new) for w in words]
        merges[pair] = new
    return merges
def _raw(text, vocab_size):
    ids, merges = list(text.encode()), {}
    for new in range(256, vocab_size):
        counts = Counter(zip(ids, ids[1:]))
        if not counts: break
        pair = max(counts, key=counts.get)
        ids = merge_pair(ids, pair, new)
        merges[pair] = new
    return merges
def _least(text, vocab_size): return _trainer(_words(text), vocab_size, pick=lambda c: min(c, key=c.get))
def t_from_255(text, vocab_size): return {p: i - 1 for p, i in train_bpe(text, vocab_size).items()}
def t_from_0(text, vocab_size): return {p: i - 256 for p, i in train_bpe(text, vocab_size).items()}
def t_one_more(text, vocab_size): return train_bpe(text, vocab_size + 1)
def t_one_less(text, vocab_size): return train_bpe(text, vocab_size - 1)
def t_list(text, vocab_size): return list(train_bpe(text, vocab_size).items())
def t_pairs_only(text, vocab_size): return list(train_bpe(text, vocab_size))
def t_vocab(text, vocab_size): return vocab_of(train_bpe(text, vocab_size))
def t_no_stop(text, vocab_size):                # keeps going when no pair is left, merging a made-up pair
    m = train_bpe(text, vocab_size)
    for i in range(256 + len(m), vocab_size): m[(0, i % 256)] = i
    return m
def t_first_seen(text, vocab_size):             # takes the first pair of the first chunk, not the most frequent
    words, merges = _words(text), {}
    for new in range(256, vocab_size):
        pair = next((p for w, _ in words for p in zip(w, w[1:])), None)
        if pair is None: break
        words = [(merge_pair(w, pair, new), n) for w, n in words]
        merges[pair] = new
    return merges

def test_train():
    for ok in (t_minbpe_ties, t_largest_tie, t_fast, t_repeat_chunks): assert_check(check_train, ok)
    assert_check(check_train, train_bpe, [
        (stub, 'not solved'), (_unweighted, 'each distinct chunk counts once'), (_raw, 'inside a chunk|raw text'),
        (_least, 'least frequent'), (t_from_255, 'start at 256'), (t_from_0, 'start at 256'), (t_one_more, 'one too many'),
        (t_one_less, 'one too few'), (t_list, 'return a dict'), (t_pairs_only, 'return a dict'), (t_vocab, 'pairs of ids'),
        (t_no_stop, 'no pair was left|never occurs'), (t_first_seen, 'occurs .* times|least frequent')])

# --- encode -----------------------------------------------------------------------------------------------------------
def e_in_rank_order(text, merges):              # every merge in rank order over each chunk: the same ids
    out = []
    for c in pretokenize(text):
        ids = list(c.encode())
        for p, i in sorted(merges.items(), key=lambda kv: kv[1]): ids = merge_pair(ids, p, i)
        out += ids
    return out
def e_heap(text, merges):                       # tiktoken-style: ranks of adjacent pairs, lowest merged first
    out = []
    for c in pretokenize(text):
        ids = list(c.encode())
        while True:
            ranked = [(merges[p], k) for k, p in enumerate(zip(ids, ids[1:])) if p in merges]
            if not ranked: break
            r, k = min(ranked)
            pair = (ids[k], ids[k + 1])
            ids = merge_pair(ids, pair, r)
        out += ids
    return out
def e_tokenizer(text, merges):
    v = vocab_of(merges)
    return BPETokenizer([(v[a], v[b]) for (a, b), _ in sorted(merges.items(), key=lambda kv: kv[1])]).encode_ordinary(text)
def e_tuple(text, merges): return tuple(bpe_encode(text, merges))

def e_greedy(text, merges):
    out = []
    for c in pretokenize(text):
        ids = list(c.encode())
        while True:
            k = next((k for k in range(len(ids) - 1) if (ids[k], ids[k + 1]) in merges), None)
            if k is None: break
            ids = ids[:k] + [merges[(ids[k], ids[k + 1])]] + ids[k + 2:]
        out += ids
    return out
def e_frequency(text, merges):
    out = []
    for c in pretokenize(text):
        ids = list(c.encode())
        while True:
            st = {p: n for p, n in Counter(zip(ids, ids[1:])).items() if p in merges}
            if not st: break
            p = max(st, key=st.get)
            ids = merge_pair(ids, p, merges[p])
        out += ids
    return out
def e_frequency_text(text, merges):             # by frequency over the whole text, chunk by chunk
    chunks = [list(c.encode()) for c in pretokenize(text)]
    while True:
        st = Counter(p for w in chunks for p in zip(w, w[1:]) if p in merges)
        if not st: break
        p = st.most_common(1)[0][0]
        chunks = [merge_pair(w, p, merges[p]) for w in chunks]
    return [i for w in chunks for i in w]
def e_highest(text, merges):
    out = []
    for c in pretokenize(text):
        ids = list(c.encode())
        while len(ids) > 1:
            p = max(zip(ids, ids[1:]), key=lambda q: merges.get(q, -1))
            if p not in merges: break
            ids = merge_pair(ids, p, merges[p])
        out += ids
    return out
def e_dict_order(text, merges):
    out = []
    for c in pretokenize(text):
        ids = list(c.encode())
        for p, i in merges.items(): ids = merge_pair(ids, p, i)
        out += ids
    return out
def e_whole(text, merges):
    ids = list(text.encode())
    while len(ids) > 1:
        p = min(zip(ids, ids[1:]), key=lambda q: merges.get(q, float('inf')))
        if p not in merges: break
        ids = merge_pair(ids, p, merges[p])
    return ids
def e_one_pass(text, merges):                   # stops after the first merge of each chunk
    out = []
    for c in pretokenize(text):
        ids = list(c.encode())
        ps = [p for p in zip(ids, ids[1:]) if p in merges]
        if ps: p = min(ps, key=merges.get); ids = merge_pair(ids, p, merges[p])
        out += ids
    return out
def e_pop(text, merges):
    out = bpe_encode(text, merges)
    if merges: merges.pop(next(iter(merges)))
    return out
def e_latin1(text, merges):
    out = []
    for c in pretokenize(text):
        ids = [b for b in c.encode('latin-1', errors='replace')]
        while len(ids) > 1:
            p = min(zip(ids, ids[1:]), key=lambda q: merges.get(q, float('inf')))
            if p not in merges: break
            ids = merge_pair(ids, p, merges[p])
        out += ids
    return out

def test_encode():
    for ok in (e_in_rank_order, e_heap, e_tokenizer, e_tuple): assert_check(check_encode, ok)
    assert_check(check_encode, bpe_encode, [
        (stub, 'not solved'), (e_greedy, 'leftmost'), (e_frequency, 'most frequent'), (e_frequency_text, 'most frequent|expected'),
        (e_highest, 'learned last'), (e_dict_order, "dict's order"), (e_whole, 'encoded the text whole'), (e_one_pass, 'should encode to|expected'),
        (e_pop, 'changed the merges'), (e_latin1, 'expected|decode to')])

# --- decode -----------------------------------------------------------------------------------------------------------
def d_bytearray(ids, vocab):
    buf = bytearray()
    for i in ids: buf += vocab[i]
    return buf.decode('utf-8', errors='replace')
def d_codecs(ids, vocab):
    import codecs
    dec = codecs.getincrementaldecoder('utf-8')(errors='replace')
    return ''.join(dec.decode(vocab[i]) for i in ids) + dec.decode(b'', final=True)
def d_str(ids, vocab): return str(b''.join(map(vocab.__getitem__, ids)), 'utf-8', 'replace')
def d_tuple_ids(ids, vocab): return bpe_decode(tuple(ids), vocab)

def d_per_token(ids, vocab): return ''.join(vocab[i].decode('utf-8', errors='replace') for i in ids)
def d_strict(ids, vocab): return b''.join(vocab[i] for i in ids).decode('utf-8')
def d_ignore(ids, vocab): return b''.join(vocab[i] for i in ids).decode('utf-8', errors='ignore')
def d_latin1(ids, vocab): return b''.join(vocab[i] for i in ids).decode('latin-1')
def d_bytes(ids, vocab): return b''.join(vocab[i] for i in ids)
def d_chr(ids, vocab): return ''.join(chr(b) for i in ids for b in vocab[i])
def d_list(ids, vocab): return [vocab[i].decode('utf-8', errors='replace') for i in ids]
def d_backslash(ids, vocab): return b''.join(vocab[i] for i in ids).decode('utf-8', errors='backslashreplace')
def d_pop(ids, vocab):
    out = bpe_decode(ids, vocab)
    vocab.pop(max(vocab))
    return out

def test_decode():
    for ok in (d_bytearray, d_codecs, d_str, d_tuple_ids): assert_check(check_decode, ok)
    assert_check(check_decode, bpe_decode, [
        (stub, 'not solved'), (d_per_token, 'glue the bytes'), (d_strict, "errors='replace'"), (d_ignore, 'vanished'),
        (d_latin1, 'Latin-1'), (d_bytes, 'returned bytes'), (d_chr, 'Latin-1'), (d_list, 'return the text'),
        (d_backslash, 'decode to'), (d_pop, 'changed the vocab')])

# --- special tokens ---------------------------------------------------------------------------------------------------
def sp_loop(text, merges, special):             # finds the earliest special by hand
    out, i = [], 0
    while True:
        hits = [(text.find(s, i), -len(s), s) for s in special if text.find(s, i) >= 0]
        if not hits: return out + (bpe_encode(text[i:], merges) if text[i:] else [])
        k, _, s = min(hits)
        out += bpe_encode(text[i:k], merges) if k > i else []
        out.append(special[s]); i = k + len(s)
def sp_finditer(text, merges, special):
    if not special: return bpe_encode(text, merges)
    out, last = [], 0
    for m in re.finditer('|'.join(map(re.escape, special)), text):
        out += bpe_encode(text[last:m.start()], merges); out.append(special[m.group()]); last = m.end()
    return out + bpe_encode(text[last:], merges)
def sp_str_split(text, merges, special):        # one special after another with str.split
    parts = [text]
    for s in special:
        parts = [q for p in parts for q in ([p] if p in special else list(itertools.chain.from_iterable((x, s) for x in p.split(s)))[:-1])]
    return [i for p in parts for i in ([special[p]] if p in special else bpe_encode(p, merges))]
def sp_tokenizer(text, merges, special):
    v = vocab_of(merges)
    tok = BPETokenizer([(v[a], v[b]) for (a, b), _ in sorted(merges.items(), key=lambda kv: kv[1])], special)
    return tok.encode(text)

def sp_ignored(text, merges, special): return bpe_encode(text, merges)
def sp_unescaped(text, merges, special):
    if not special: return bpe_encode(text, merges)
    return [i for p in regex.split('|'.join(special), text) for i in bpe_encode(p, merges)]
def sp_dropped(text, merges, special):
    if not special: return bpe_encode(text, merges)
    return [i for p in regex.split('|'.join(map(regex.escape, special)), text) for i in bpe_encode(p, merges)]
def sp_glued(text, merges, special):            # finds the specials but encodes the text around them as one
    if not special: return bpe_encode(text, merges)
    parts = regex.split('(' + '|'.join(map(regex.escape, special)) + ')', text)
    rest = bpe_encode(''.join(parts[0::2]), merges)
    return rest + [special[p] for p in parts[1::2]]
def sp_one_only(text, merges, special):          # only the first special of the dict
    s = next(iter(special), None)
    if s is None: return bpe_encode(text, merges)
    parts = text.split(s)
    out = []
    for k, p in enumerate(parts):
        if k: out.append(special[s])
        out += bpe_encode(p, merges)
    return out
def sp_fixed_id(text, merges, special):         # a hard-coded id for <|endoftext|>
    return [300 if i in special.values() else i for i in encode_special(text, merges, special)]

def test_encode_special():
    for ok in (sp_loop, sp_finditer, sp_str_split, sp_tokenizer): assert_check(check_encode_special, ok)
    assert_check(check_encode_special, encode_special, [
        (stub, 'not solved'), (sp_ignored, 'spelled out as text'), (sp_unescaped, 'escape'), (sp_dropped, 'vanished'),
        (sp_glued, 'expected'), (sp_one_only, 'spelled out|expected'), (sp_fixed_id, 'expected')])

# --- the library: known answers, round trips, the fast trainer ---------------------------------------------------------
def test_known_answers_and_round_trips():
    assert bpe_encode("aaabdaaabac", train_bpe("aaabdaaabac", 259)) == [258, 100, 258, 97, 99]
    m = train_bpe_fast(TRAIN_TEXT * 5, 400)
    v = vocab_of(m)
    for t in ["", "café naïve 😀👍🏽 🇫🇷 日本語 Ελληνικά", "  \n\t\r\n  x  ", "don't DON'T 1234567", "\x00\x7f\uffff\U0010ffff"]:
        assert bpe_decode(bpe_encode(t, m), v) == t

@pytest.mark.parametrize('n', [256, 257, 300, 420])
def test_fast_trainer_learns_the_same_merges(n):
    text = TRAIN_TEXT * 2 + "aaaa bbbb aaaa ab ab ba 😀😀😀 x"
    assert list(train_bpe_fast(text, n).items()) == list(train_bpe(text, n).items())

# --- more mistakes, of kinds the checks were not written against --------------------------------------------------------
def s_re_module(text): return re.findall(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""", text)
def t_never_merged(text, vocab_size):           # counts the same chunks every step: the same pair wins each time
    return _trainer(_words(text), vocab_size, merge=lambda w, pair, new: w)
def t_text_split(text, vocab_size):             # str.split() instead of GPT-2's chunks: spaces are lost
    return _trainer([(list(c.encode()), n) for c, n in Counter(text.split()).items()], vocab_size)
def d_bytes_of_ids(ids, vocab): return bytes(ids).decode('utf-8', errors='replace')
def e_single_pass_left(text, merges):           # one left-to-right sweep, merging whatever has a merge
    out = []
    for c in pretokenize(text):
        ids, res, i = list(c.encode()), [], 0
        while i < len(ids):
            if i + 1 < len(ids) and (ids[i], ids[i + 1]) in merges: res.append(merges[(ids[i], ids[i + 1])]); i += 2
            else: res.append(ids[i]); i += 1
        out += res
    return out
def m_hard_coded_256(ids, pair, new): return merge_pair(ids, pair, 256)
def pc_skip_repeats(ids): return Counter(p for p in zip(ids, ids[1:]) if p[0] != p[1])
def sp_hardcoded_eot(text, merges, special):
    parts = text.split('<|endoftext|>')
    out = []
    for k, p in enumerate(parts):
        if k: out.append(special.get('<|endoftext|>', 0))
        out += bpe_encode(p, merges)
    return out

def test_fresh_mistakes():
    assert_check(check_split, pretokenize, [(s_re_module, r"re has no \\p")])
    assert_check(check_train, train_bpe, [(t_never_merged, 'same pair win'), (t_text_split, 'occurs|never occurs|raw text')])
    assert_check(check_decode, bpe_decode, [(d_bytes_of_ids, 'look each id up')])
    assert_check(check_encode, bpe_encode, [(e_single_pass_left, 'leftmost|expected|should encode')])
    assert_check(check_merge, merge_pair, [(m_hard_coded_256, 'merging')])
    assert_check(check_pair_counts, pair_counts, [(pc_skip_repeats, 'counted')])
    assert_check(check_encode_special, encode_special, [(sp_hardcoded_eot, 'spelled out|expected')])

def t_vocab_size_merges(text, vocab_size): return train_bpe_fast(text, vocab_size + 256)   # vocab_size merges, bytes forgotten
def t_joined_chunks(text, vocab_size):          # all chunks' bytes in one list: pairs across the chunks' boundaries
    ids, merges = [b for c in pretokenize(text) for b in c.encode()], {}
    for new in range(256, vocab_size):
        counts = Counter(zip(ids, ids[1:]))
        if not counts: break
        pair = max(counts, key=counts.get)
        ids = merge_pair(ids, pair, new)
        merges[pair] = new
    return merges

def test_train_counts_merges_and_chunks():
    assert_check(check_train, train_bpe, [(t_vocab_size_merges, 'the 256 bytes are ids too'), (t_joined_chunks, 'inside a chunk|raw text|within')])

# --- an independent audit's catalogue: overlaps, order, returns of other types ---------------------------------------------
def pc_str_count(ids):                          # str.count's way: overlapping pairs counted once
    s = ','.join(map(str, ids)) + ','
    return {p: s.count(f"{p[0]},{p[1]},") for p in zip(ids, ids[1:])}
def pc_sorted(ids): return dict(sorted(Counter(zip(ids, ids[1:])).items(), key=lambda kv: -kv[1]))
def m_step_one(ids, pair, new):                 # moves on by one id after a merge
    out = []
    for i, x in enumerate(ids):
        out.append(new if i + 1 < len(ids) and (x, ids[i + 1]) == pair else x)
    return out
def m_shared(ids, pair, new):                   # every overlapping match merged, the ids after them dropped
    hits = [i for i in range(len(ids) - 1) if (ids[i], ids[i + 1]) == pair]
    return [new if i in hits else x for i, x in enumerate(ids) if i in hits or i - 1 not in hits]
def m_from_right(ids, pair, new):
    out, i = [], len(ids) - 1
    while i >= 0:
        if i >= 1 and (ids[i - 1], ids[i]) == pair: out.append(new); i -= 2
        else: out.append(ids[i]); i -= 1
    return out[::-1]
def _split_with(pattern): return lambda text: regex.findall(pattern, text)
s_numbers_with_symbols = _split_with(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?[^\s\p{L}]+|\s+(?!\S)|\s+""")
s_numbers_lost = _split_with(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
s_letters_and_numbers = _split_with(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[\p{L}\p{N}]+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
s_backslash_d = _split_with(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\d+| ?[^\s\p{L}\d]+|\s+(?!\S)|\s+""")
s_two_contractions = _split_with(r"""'s|'t| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
def s_split_kept(text):                         # regex.split with a capture group, the empty strings dropped: the same chunks
    return [c for c in regex.split(f"({GPT2_SPLIT})", text) if c]
def t_str_count(text, vocab_size):              # pairs counted as str.count counts: (z, z) twice in 'zzzzz', not four times
    def count(w): return [p for p in set(zip(w, w[1:])) for _ in range(len(w) - len(merge_pair(w, p, -1)))]
    return _trainer(_words(text), vocab_size, pick=lambda c: max(c, key=lambda p: (c[p], -p[0], -p[1])), count=count)
def t_once_per_chunk(text, vocab_size): return _trainer(_words(text), vocab_size, count=lambda w: set(zip(w, w[1:])))
def _encoder(rank, start=lambda chunk: list(chunk.encode()), chunks=pretokenize):
    "Encoders that merge by `rank(pair, merges)` (lowest first; None: no merge) from `start(chunk)`"
    def enc(text, merges):
        out = []
        for c in chunks(text):
            ids = start(c)
            while len(ids) > 1:
                p = min(zip(ids, ids[1:]), key=lambda q: rank(q, merges))
                if p not in merges: break
                ids = merge_pair(ids, p, merges[p])
            out += ids
        return out
    return enc
e_default_zero = _encoder(lambda p, m: m.get(p, 0))                             # pairs without a merge rank first
e_by_place = _encoder(lambda p, m: list(m).index(p) if p in m else float('inf'))  # the rank: where the merge stands in the dict
e_code_points = _encoder(lambda p, m: m.get(p, float('inf')), start=lambda c: [ord(x) for x in c])
e_words = _encoder(lambda p, m: m.get(p, float('inf')), chunks=str.split)
def e_longest_match(text, merges):              # WordPiece's way: the longest token of the vocabulary from the left
    inv = {b: i for i, b in vocab_of(merges).items()}
    out = []
    for c in pretokenize(text):
        b, i = c.encode(), 0
        while i < len(b):
            j = next(j for j in range(len(b), i, -1) if b[i:j] in inv)
            out.append(inv[b[i:j]]); i = j
    return out
def d_squeezed(ids, vocab): return re.sub('\ufffd+', '\ufffd', bpe_decode(ids, vocab))
def d_surrogates(ids, vocab): return b''.join(vocab[i] for i in ids).decode('utf-8', errors='surrogateescape')
def sp_found_after(text, merges, special):      # encodes the whole text, then replaces each special's ids by its id
    ids = bpe_encode(text, merges)
    for s, sid in special.items():
        seq, out, i = bpe_encode(s, merges), [], 0
        while i < len(ids):
            if ids[i:i + len(seq)] == seq: out.append(sid); i += len(seq)
            else: out.append(ids[i]); i += 1
        ids = out
    return ids
def sp_in_chunks(text, merges, special):        # looks for the specials among GPT-2's chunks: '<|endoftext|>' is three of them
    return [i for c in pretokenize(text) for i in ([special[c]] if c in special else bpe_encode(c, merges))]
def sp_between_spaces(text, merges, special):   # finds a special only between spaces
    return [i for k, w in enumerate(text.split(' ')) for i in ((bpe_encode(' ', merges) if k else []) + [special[w]] if w in special
                                                              else bpe_encode((' ' if k else '') + w, merges))]
def sp_re(text, merges, special):               # Python's re, the specials unsorted
    if not special: return bpe_encode(text, merges)
    parts = re.split('(' + '|'.join(map(re.escape, special)) + ')', text)
    return [i for k, p in enumerate(parts) for i in ([special[p]] if k % 2 else bpe_encode(p, merges))]

def test_audit_valid_answers():
    assert_check(check_pair_counts, pc_sorted)
    assert_check(check_split, s_split_kept)
    assert_check(check_encode_special, sp_re)

def test_audit_overlaps_and_order():
    assert_check(check_pair_counts, pair_counts, [(pc_str_count, 'overlapping pairs were counted once')])
    assert_check(check_merge, merge_pair, [(m_step_one, 'overlaps'), (m_shared, 'two merges'), (m_from_right, 'from the right')])
    assert_check(check_split, pretokenize, [
        (s_numbers_with_symbols, 'numbers are chunks of their own'), (s_numbers_lost, r'digits .* in no chunk'),
        (s_letters_and_numbers, 'two branches'), (s_backslash_d, 'decimal digits only'), (s_two_contractions, "'ll")])
    assert_check(check_train, train_bpe, [(t_str_count, 'overlapping pairs count once'), (t_once_per_chunk, 'least frequent|occurs')])
    assert_check(check_encode, bpe_encode, [
        (e_default_zero, 'no merge was applied'), (e_by_place, 'place in the dict'), (e_code_points, 'code point'),
        (e_words, 'decode to'), (e_longest_match, 'left to right')])
    assert_check(check_decode, bpe_decode, [(d_squeezed, "one '�' each"), (d_surrogates, 'decode to')])
    assert_check(check_encode_special, encode_special, [
        (sp_found_after, 'after encoding'), (sp_in_chunks, 'spelled out'), (sp_between_spaces, 'spelled out')])

def _as(kind, fn):
    "`fn`'s answer returned as a numpy array, a tensor, None or a tuple"
    import numpy as np, torch
    conv = {'numpy': np.array, 'tensor': torch.tensor, 'none': lambda o: None, 'tuple': tuple}[kind]
    def f(*a): return conv(fn(*a))
    f.__name__ = f"{getattr(fn, '__name__', 'answer')}_{kind}"
    return f

@pytest.mark.parametrize('kind', ['numpy', 'tensor', 'none'])
def test_audit_other_return_types(kind):
    for check, sol, pat in [(check_merge, merge_pair, 'plain Python list|returned None|should be a list'),
                            (check_encode, bpe_encode, 'plain Python list|should be a list'),
                            (check_encode_special, encode_special, 'plain Python list|should be a list'),
                            (check_split, pretokenize, 'list of strings|should be strings'),
                            (check_decode, bpe_decode, 'return the text')]:
        if kind == 'tensor' and check in (check_split, check_decode): continue   # text makes no tensor
        assert_check(check, sol, [(_as(kind, sol), pat)])
    assert_check(check_pair_counts, pair_counts, [(_as('tuple', pair_counts), 'return a dict')])
    assert_check(check_train, train_bpe, [(_as('none', train_bpe), 'should be a dict')])
