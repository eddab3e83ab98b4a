"Lesson 31's check accepts the tokenizer and rejects the stub, each typical mistake with its own hint, and junk answers."
import ast, inspect, json, pathlib, re
import pytest
from transformers_scratch.checks.toolkit import assert_check
from transformers_scratch.translate import tokenize
from transformers_scratch.checks.translate import check_tokenize
from conftest import stub

ROOT = pathlib.Path(__file__).resolve().parents[1]
PIECE = r"\w+|[^\w\s]"


def glue(chunks):
    out = []
    for ps in chunks: out += ps[:1] + ['##' + p for p in ps[1:]]
    return out

def plain_split(text): return text.split()
def no_marks(text): return re.findall(PIECE, text)
def marks_first_too(text): return ['##' + p for w in text.split() for p in re.findall(PIECE, w)]
def marks_punctuation(text): return [p if re.fullmatch(r"\w+", p) else '##' + p for w in text.split() for p in re.findall(PIECE, w)]
def drops_punctuation(text): return glue(re.findall(r"\w+", w) for w in text.split())
def runs_of_marks(text): return glue(re.findall(r"\w+|[^\w\s]+", w) for w in text.split())
def lowercased(text): return tokenize(text.lower())
def ascii_letters(text): return glue(re.findall(r"[A-Za-z0-9_]+|[^A-Za-z0-9_\s]", w) for w in text.split())
def split_on_space(text): return glue(re.findall(PIECE, w) for w in text.split(' '))
def mark_at_end(text): return [t[2:] + '##' if t.startswith('##') else t for t in tokenize(text)]
def as_tuple(text): return tuple(tokenize(text))
def ids_not_tokens(text): return list(range(len(tokenize(text))))
def first_sentence_only(text): return ['A', 'man', "##'", '##s', 'T', '##-', '##shirt', '##,', 'blue', '##.']
def returns_none(text): return None
def raises(text): raise ValueError("boom")
def drops_empty_guard(text): return glue(re.findall(PIECE, w) for w in text.split()) if text else None

def test_check_tokenize():
    assert_check(check_tokenize, tokenize, [
        (stub, 'not solved'),
        (plain_split, 'still glued'),
        (no_marks, 'no piece starts with ##'),
        (marks_first_too, 'first piece'),
        (marks_punctuation, 'marked the punctuation'),
        (drops_punctuation, 'punctuation is gone'),
        (runs_of_marks, 'one token per mark'),
        (lowercased, 'lowercased'),
        (ascii_letters, r'ä or é'),
        (split_on_space, 'empty or whitespace'),
        (mark_at_end, 'at the start of the glued piece'),
        (as_tuple, 'list of str, got tuple'),
        (ids_not_tokens, 'holds a int'),
        (first_sentence_only, 'wrong tokens for'),
        (drops_empty_guard, r"tokenize\(''\) should return a list"),
    ])

@pytest.mark.parametrize('junk, pat', [(None, 'your code raised TypeError'), ([1, 2], 'your code raised TypeError'),
                                       (raises, 'your code raised ValueError'), (returns_none, 'got NoneType')])
def test_junk_answers_end_in_a_verdict(junk, pat):
    assert_check(check_tokenize, tokenize, [(junk, pat)])

def test_lesson_solution_is_the_library_function():
    "Lesson 31 shows the library's tokenize as its solution: the same code"
    cells = [''.join(c['source']) for c in json.loads((ROOT/'nbs'/'31_translate.ipynb').read_text(encoding='utf-8'))['cells']]
    sol = next(s for s in cells if '# @title Solution: tokenize' in s)
    fn = next(n for n in ast.parse(sol).body if isinstance(n, ast.FunctionDef))
    assert ast.dump(fn) == ast.dump(ast.parse(inspect.getsource(tokenize)).body[0])


# --- issue 31: valid answers in other styles pass; new plausible mistakes are named ------------------------------------
def tok_finditer(text):                  # the whole text at once: a piece is glued when no space comes right before it
    out = []
    for m in re.finditer(r"\w+|[^\w\s]", text):
        glued = m.start() > 0 and not text[m.start() - 1].isspace()
        out.append('##' + m.group() if glued else m.group())
    return out
def tok_nonword(text):                   # \W inside a chunk (a chunk holds no space)
    return glue(re.findall(r"\w+|\W", w) for w in text.split())
def tok_chars(text):                     # character by character, no regular expression
    out = []
    for w in text.split():
        pieces, cur = [], ''
        for ch in w:
            if ch.isalnum() or ch == '_': cur += ch
            else:
                if cur: pieces.append(cur); cur = ''
                pieces.append(ch)
        if cur: pieces.append(cur)
        out += [p if i == 0 else '##' + p for i, p in enumerate(pieces)]
    return out
def tok_split_capture(text):             # re.split with a capturing group, empty strings dropped
    return glue([p for p in re.split(r"([^\w\s])", w) if p] for w in text.split())

def test_check_tokenize_valid_styles():
    for fn in (tok_finditer, tok_nonword, tok_chars, tok_split_capture):
        assert_check(check_tokenize, fn)

def tok_letters_only(text): return glue(re.findall(r"[^\W\d_]+|[^\w\s]|[\d_]", w) for w in text.split())
def tok_keep_apostrophe(text): return glue(re.findall(r"\w+(?:['-]\w+)*|[^\w\s]", w) for w in text.split())
def tok_whole_text(text): return glue([re.findall(PIECE, text)]) if text.split() else []
def tok_words_marked_only(text):
    return [t if not (t.startswith('##') and not re.fullmatch(r"\w+", t[2:])) else t[2:] for t in glue(re.findall(PIECE, w) for w in text.split())]
def tok_strip_marks(text): return glue(re.findall(r"\w+|[.,!?]", w) for w in text.split())     # only some marks kept

def test_check_tokenize_new_mistakes():
    assert_check(check_tokenize, tokenize, [
        (tok_letters_only, 'digits and underscores'), (tok_keep_apostrophe, 'apostrophe or a hyphen'),
        (tok_whole_text, 'first piece of the whole text'), (tok_words_marked_only, 'punctuation mark glued'),
        (tok_strip_marks, "token \\d+ is")])

# --- issue 31, second audit: ## decided from a token's first occurrence, not from its own place --------------------
def tok_first_index(text):               # the audit's answer: text.index finds the FIRST occurrence of each token
    out = []
    for p in re.findall(PIECE, text):
        j = text.index(p); out.append('##' + p if j > 0 and not text[j - 1].isspace() else p)
    return out
def tok_memo(text):                      # a token's mark remembered from the first time it was seen
    seen, out = {}, []
    for w in text.split():
        for i, p in enumerate(re.findall(PIECE, w)):
            seen.setdefault(p, i > 0); out.append('##' + p if seen[p] else p)
    return out
def tok_free_anywhere(text):             # glued unless the token occurs somewhere after a space
    padded = ' ' + text
    return ['##' + p if i > 0 and (' ' + p) not in padded else p
            for w in text.split() for i, p in enumerate(re.findall(PIECE, w))]
def tok_find_from(text):                 # valid: str.find from the end of the previous piece
    out, pos = [], 0
    for p in re.findall(PIECE, text):
        j = text.find(p, pos); pos = j + len(p)
        out.append('##' + p if j > 0 and not text[j - 1].isspace() else p)
    return out

def test_check_tokenize_repeated_tokens():
    assert_check(check_tokenize, tok_find_from)
    assert_check(check_tokenize, tokenize, [
        (tok_first_index, 'where it first occurs'), (tok_memo, 'where it first occurs|token \\d+ is'),
        (tok_free_anywhere, 'occurs more than once|where it first occurs')])

# the audit's round: marks beyond ASCII, a newline between two words
def _tok_by(text, punct=r"[^\w\s]", chunks=str.split):
    out = []
    for w in chunks(text):
        ps = re.findall(rf"\w+|{punct}", w)
        out += ps[:1] + ['##' + p for p in ps[1:]]
    return out
def tok_string_punctuation(text):                   # marks from string.punctuation: «, –, €, ’ and … are lost
    import string
    return _tok_by(text, punct='[' + re.escape(string.punctuation) + ']')
def tok_spaces_and_tabs(text): return _tok_by(text, chunks=lambda s: re.split(r'[ \t]+', s))   # a newline glues two words
def tok_by_offsets(text):                            # valid: each match's ## from the character before it in the text
    return [('##' if m.start() and not text[m.start() - 1].isspace() else '') + m.group()
            for m in re.finditer(r"\w+|[^\w\s]", text)]

def test_check_tokenize_audit():
    assert_check(check_tokenize, tok_by_offsets, [(tok_string_punctuation, 'beyond ASCII'),
                                                   (tok_spaces_and_tabs, 'newline between two words')])
