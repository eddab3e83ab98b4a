"Lesson 51's library: the instruction data's contract (fields, tasks, counts, seeds), right answers, held-out items and the dataset tasks' own splits, cleaning and cutting, errors that name the parameter"
import re
from collections import Counter
import pytest
from transformers_scratch.data import imdb_sample_df, ag_news_df
from transformers_scratch.instructdata import (TASKS, GENERATED, FROM_DATASETS, PHRASINGS, LABELS, CHARS, instruction_data, words,
                                               held_out, dataset_pairs, clean_text, truncate)

N_TRAIN, N_VALID = 7000, 700

@pytest.fixture(scope='module')
def data(): return instruction_data(seed=0, n_train=N_TRAIN, n_valid=N_VALID)

def _word(e): return re.findall(r"'([a-z]{2,})'", e['instruction'])[0]
def _letter(e): return re.findall(r"'([a-z])'", e['instruction'])[0]
def _pair(e): return tuple(map(int, re.findall(r'\d+', e['instruction'])))

def test_fields_tasks_and_counts(data):
    train, valid = data
    assert len(train) == N_TRAIN and len(valid) == N_VALID
    for e in train + valid:
        assert list(e) == ['task', 'instruction', 'input', 'response'] and all(isinstance(v, str) for v in e.values())
        assert e['task'] in TASKS and e['instruction'] and e['response']
        assert (e['input'] == '') == (e['task'] in GENERATED)
    assert Counter(e['task'] for e in train) == {t: N_TRAIN // 7 for t in TASKS}
    assert [e['task'] for e in valid] == [t for t in TASKS for _ in range(N_VALID // 7)]     # grouped by task, in order
    assert len({e['task'] for e in train[:50]}) > 3                                            # the training list is mixed

def test_uneven_totals_and_one_task():
    train, valid = instruction_data(n_train=10, n_valid=4, tasks=['add', 'spell', 'reverse'])
    assert Counter(e['task'] for e in train) == {'add': 4, 'spell': 3, 'reverse': 3}
    assert Counter(e['task'] for e in valid) == {'add': 2, 'spell': 1, 'reverse': 1}
    assert instruction_data(n_train=5, n_valid=3, tasks='count') == instruction_data(n_train=5, n_valid=3, tasks=['count'])
    assert instruction_data(n_train=0, n_valid=0, tasks='add') == ([], [])

def test_shares_of_the_training_examples():
    train, valid = instruction_data(n_train=100, n_valid=6, tasks={'spell': 3, 'add': 1, 'topic': 1})
    assert Counter(e['task'] for e in train) == {'spell': 60, 'add': 20, 'topic': 20}
    assert Counter(e['task'] for e in valid) == {'spell': 2, 'add': 2, 'topic': 2}                # validation stays even
    assert Counter(e['task'] for e in instruction_data(n_train=10, n_valid=0, tasks={'spell': 2, 'add': 1})[0]) == {'spell': 7, 'add': 3}
    assert instruction_data(n_train=9, n_valid=3, tasks={'add': 1, 'spell': 1, 'reverse': 1}) == instruction_data(n_train=9, n_valid=3, tasks=['add', 'spell', 'reverse'])
    for n in range(0, 40):
        assert len(instruction_data(n_train=n, n_valid=0, tasks={'spell': 0.3, 'count': 2, 'add': 1.7})[0]) == n

def test_deterministic_per_seed_and_independent_of_the_other_tasks(data):
    train, valid = data
    assert instruction_data(seed=0, n_train=N_TRAIN, n_valid=N_VALID) == data
    t1, v1 = instruction_data(seed=1, n_train=N_TRAIN, n_valid=N_VALID)
    assert t1 != train and v1 != valid
    alone = instruction_data(seed=0, n_train=2 * (N_TRAIN // 7), n_valid=2 * (N_VALID // 7), tasks=['translate', 'count'])
    assert alone[1] == [e for e in valid if e['task'] == 'translate'] + [e for e in valid if e['task'] == 'count']
    assert sorted(map(str, alone[0])) == sorted(str(e) for e in train if e['task'] in ('translate', 'count'))
    few = instruction_data(seed=0, n_train=70, n_valid=14)                    # fewer examples: the first ones of more
    for t in TASKS:
        assert [e for e in few[1] if e['task'] == t] == [e for e in valid if e['task'] == t][:2]
        assert not Counter(str(e) for e in few[0] if e['task'] == t) - Counter(str(e) for e in train if e['task'] == t)

def test_generated_answers_are_right(data):
    train, valid = data
    for e in train + valid:
        t, r = e['task'], e['response']
        if t == 'spell': assert r == '-'.join(_word(e))
        elif t == 'reverse': assert r == _word(e)[::-1]
        elif t == 'count': assert r == str(_word(e).count(_letter(e)))
        elif t == 'add': a, b = _pair(e); assert 10 <= a <= 99 and 10 <= b <= 99 and r == str(a + b)

def test_edge_cases_are_present(data):
    train, _ = data
    counts = Counter(e['response'] for e in train if e['task'] == 'count')
    assert 0.15 < counts['0'] / sum(counts.values()) < 0.35                  # letters the word lacks
    assert counts['2'] > 0 and counts['3'] > 0                                # repeated letters
    sums = [int(e['response']) for e in train if e['task'] == 'add']
    assert 0.55 < sum(s >= 100 for s in sums) / len(sums) < 0.66              # three-digit sums: P(a + b >= 100) = 0.61
    assert {_pair(e) for e in train if e['task'] == 'add'} & {_pair(e)[::-1] for e in train if e['task'] == 'add'}   # both orders
    spelt = [e for e in train if e['task'] == 'spell' and len(set(_word(e))) < len(_word(e))]
    assert spelt and all(e['response'].split('-') == list(_word(e)) for e in spelt)

def test_every_phrasing_is_used(data):
    train, _ = data
    for t in TASKS:
        used = {e['instruction'] for e in train if e['task'] == t}
        for p in PHRASINGS[t]:
            pat = re.escape(p).replace(r'\{word\}', '[a-z]+').replace(r'\{letter\}', '[a-z]').replace(r'\{a\}', r'\d+').replace(r'\{b\}', r'\d+')
            assert any(re.fullmatch(pat, u) for u in used), (t, p)

def test_held_out_items_never_train(data):
    train, valid = data
    tw, vw = set(words('train')), set(words('valid'))
    assert tw and vw and not tw & vw and 0.08 < len(vw) / len(tw | vw) < 0.12
    assert all(held_out((a, b)) == held_out((b, a)) for a in range(10, 100) for b in range(10, 100))
    seen_words = {_word(e) for e in train if e['task'] in ('spell', 'count', 'reverse')}
    seen_pairs = {tuple(sorted(_pair(e))) for e in train if e['task'] == 'add'}
    seen_inputs = {(e['task'], e['input']) for e in train if e['input']}
    for e in valid:
        if e['task'] in ('spell', 'count', 'reverse'): assert _word(e) in vw and _word(e) not in seen_words
        elif e['task'] == 'add': assert held_out(_pair(e)) and tuple(sorted(_pair(e))) not in seen_pairs
        else: assert (e['task'], e['input']) not in seen_inputs
    for t in FROM_DATASETS:                                                   # the whole splits, not only the examples drawn
        assert not {i for i, _ in dataset_pairs(t, 'train', 120)} & {i for i, _ in dataset_pairs(t, 'valid', 120)}
    for t in ('spell', 'add'):                                                # no item twice among the held-out examples
        items = [_word(e) if t == 'spell' else _pair(e) for e in valid if e['task'] == t]
        assert len(set(items)) == len(items)

def test_held_out_split_does_not_depend_on_the_seed():
    for seed in (0, 1, 7):
        _, valid = instruction_data(seed=seed, n_train=0, n_valid=40, tasks=['reverse', 'add'])
        assert all(held_out(_word(e) if e['task'] == 'reverse' else _pair(e)) for e in valid)

@pytest.mark.parametrize('max_input', [40, 120])
def test_dataset_tasks_keep_their_own_split_and_are_cut(max_input):
    df = imdb_sample_df()
    for split, valid in (('train', False), ('valid', True)):
        cut = {truncate(clean_text(t), max_input) for t in df.text[df.is_valid == valid]}
        got = dataset_pairs('sentiment', split, max_input)
        assert len(got) == (df.is_valid == valid).sum() and all(i in cut for i, _ in got)
    ag = ag_news_df()
    assert {i for i, _ in dataset_pairs('topic', 'valid', max_input)} <= {truncate(clean_text(t), max_input) for t in ag.text[ag.is_valid]}
    for t in FROM_DATASETS:
        for split in ('train', 'valid'):
            pairs = dataset_pairs(t, split, max_input)
            assert pairs and all(0 < len(i) <= max_input and i == i.strip() for i, _ in pairs)
            if t in LABELS: assert {r for _, r in pairs} == set(LABELS[t])
            else: assert all(len(r) <= max_input for _, r in pairs)          # whole sentences, too long ones left out
    _, valid = instruction_data(n_train=0, n_valid=30, tasks=FROM_DATASETS, max_input=max_input)
    assert all(len(e['input']) <= max_input for e in valid)

def test_every_character_is_in_chars(data):
    train, valid = data
    assert len(CHARS) == len(set(CHARS)) == 102 and '\n' not in CHARS
    assert set(''.join(v for e in train + valid for v in e.values())) <= set(CHARS)
    for t in FROM_DATASETS:
        assert set(''.join(i + r for split in ('train', 'valid') for i, r in dataset_pairs(t, split, 120))) <= set(CHARS)

def test_cleaning():
    assert clean_text("Bad.<br /><br />Really\x85 bad \x96 it\x92s ‘meh’ — “no”") == "Bad. Really... bad - it's 'meh' - \"no\""
    assert clean_text("Amélie, naïve, señor, ½, ✓, 日本") == "Amelie, naive, senor, , ,"
    assert clean_text("Ein Junge, groß, läuft über Öl.\tÄh") == "Ein Junge, groß, läuft über Öl. Äh"
    assert clean_text("#36;10 #39;s quot;hiquot; #151; AT amp;T &lt;a href=\"u\"&gt;Reuters&lt;/a&gt;") == "$10 's \"hi\" - AT &T Reuters"
    assert clean_text("salt; a < b and c > d") == "salt; a < b and c > d"       # no entity, no tag
    assert clean_text("  \n ") == ''

def test_truncate():
    s = "Twelve chars and then more words follow."
    for n in range(1, len(s) + 3):
        t = truncate(s, n)
        assert len(t) <= n and s.startswith(t) and t == t.strip() and (t == s or s[len(t)] == ' ' or ' ' not in s[:n + 1])
    assert truncate(s, 15) == "Twelve chars" and truncate(s, 16) == "Twelve chars and" and truncate("Supercalifragilistic", 5) == "Super"

@pytest.mark.parametrize('kwargs, match', [
    (dict(tasks=['spel']), "tasks: unknown task 'spel'"),
    (dict(tasks=[]), 'tasks: expected some of'),
    (dict(tasks=['add', 'add']), 'tasks: each task once'),
    (dict(tasks={'spell': 0}), "tasks: a share is a number > 0, got 0 for 'spell'"),
    (dict(tasks={'spell': '2'}), "tasks: a share is a number > 0, got '2'"),
    (dict(tasks={'spell': True}), 'tasks: a share is a number > 0'),
    (dict(tasks={'spel': 1}), "tasks: unknown task 'spel'"),
    (dict(tasks={}), 'tasks: expected some of'),
    (dict(n_train=-1), 'n_train: expected a whole number'),
    (dict(n_train=2.5), 'n_train: expected a whole number'),
    (dict(n_valid=True), 'n_valid: expected a whole number'),
    (dict(n_valid=2000, tasks=['sentiment']), "n_valid: 2,000 held-out examples of task 'sentiment' asked .* it has 200"),
    (dict(n_valid=1201, tasks=['spell', 'reverse']), r"n_valid: 601 held-out examples of task 'spell' asked \(1,201 shared by 2 tasks\), but it has 598"),
    (dict(max_input=10), 'max_input: expected a whole number of characters ≥ 20'),
    (dict(max_input='120'), 'max_input'),
    (dict(seed=None), 'seed: expected a whole number'),
])
def test_bad_arguments_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match): instruction_data(**{'n_train': 10, 'n_valid': 2, **kwargs})
    with pytest.raises(ValueError, match='split:'): words('test')
    with pytest.raises(ValueError, match='task:'): dataset_pairs('spell', 'train')
