"Lesson 90's check accepts the solution and other valid styles, and rejects the stub and the typical wrong answers with the right hint."
import ast, io, json, re
import pytest
from transformers_scratch.checks.toolkit import assert_check
from transformers_scratch.cli import tfs_result
from transformers_scratch.checks.cli import check_tfs_result
from conftest import stub

# --- valid answers, in other styles ---------------------------------------------------------------------------------
def reversed_loop(stdout):
    for line in reversed(stdout.split('\n')):
        if line.strip():
            try: d = json.loads(line)
            except ValueError: return None
            return d if type(d) is dict else None
    return None
def rsplit(stdout):
    s = stdout.rstrip()
    if not s: return None
    last = s.rsplit('\n', 1)[-1].strip()
    if not (last.startswith('{') and last.endswith('}')): return None
    try: return json.loads(last)
    except json.JSONDecodeError: return None
def regex(stdout):
    lines = re.findall(r'^.*\S.*$', stdout, re.M)
    try: res = json.loads(lines[-1]) if lines else None
    except ValueError: res = None
    return res if isinstance(res, dict) else None
def decoder(stdout):
    last = None
    for line in io.StringIO(stdout):
        if line.strip(): last = line
    if last is None: return None
    try: obj, _ = json.JSONDecoder().raw_decode(last.strip())
    except ValueError: return None
    return obj if isinstance(obj, dict) and json.dumps(obj) else None

@pytest.mark.parametrize('fn', [tfs_result, reversed_loop, rsplit, regex, decoder])
def test_valid_answers_pass(fn): assert_check(check_tfs_result, fn)

# --- wrong answers --------------------------------------------------------------------------------------------------
def first_line(stdout): return json.loads(stdout.splitlines()[0])
def first_json(stdout):
    for line in stdout.splitlines():
        if line.startswith('{'): return json.loads(line)
def no_strip(stdout):
    try: return json.loads(stdout.split('\n')[-1])
    except ValueError: return None
def no_strip_crash(stdout): return json.loads(stdout.splitlines()[-1])
def literal_eval(stdout):
    lines = stdout.strip().splitlines()
    return ast.literal_eval(lines[-1]) if lines else None
def python_eval(stdout):
    lines = stdout.strip().splitlines()
    return eval(lines[-1]) if lines else None
def literal_eval_guarded(stdout):              # null/true made Python first: a Python repr then passes as results
    lines = stdout.strip().splitlines()
    if not lines: return None
    try: res = ast.literal_eval(lines[-1].replace('null', 'None').replace('true', 'True').replace('false', 'False'))
    except (ValueError, SyntaxError): return None
    return res if isinstance(res, dict) else None
def the_text(stdout):
    lines = stdout.strip().splitlines()
    return lines[-1] if lines and lines[-1].startswith('{') else None
def empty_dict(stdout):
    try: return json.loads(stdout.strip().splitlines()[-1])
    except (ValueError, IndexError): return {}
def crash_on_empty(stdout):
    try: return json.loads(stdout.strip().splitlines()[-1])
    except ValueError: return None
def search_back(stdout):
    for line in reversed(stdout.splitlines()):
        try: return json.loads(line)
        except ValueError: continue
def any_json(stdout):                          # a number on the last line passes as results
    lines = stdout.strip().splitlines()
    try: return json.loads(lines[-1]) if lines else None
    except ValueError: return None
def greedy_regex(stdout):
    m = re.search(r'\{.*\}', stdout)
    return json.loads(m.group(0)) if m else None
def whole_output(stdout): return json.loads(stdout) if stdout.strip() else None
def keys_only(stdout):
    res = tfs_result(stdout)
    return None if res is None else list(res)

def unguarded(stdout):                       # no try: a last line of text crashes
    lines = stdout.strip().splitlines()
    res = json.loads(lines[-1]) if lines else None
    return res if isinstance(res, dict) else None
def brace_check(stdout):                     # a Python repr starts with { too
    lines = stdout.strip().splitlines()
    return json.loads(lines[-1]) if lines and lines[-1].startswith('{') else None

WRONGS = [(stub, 'not solved'), (first_line, r'JSONDecodeError.*last line that is not blank'), (first_json, 'take the last line'),
          (no_strip, 'last line that is not blank'), (no_strip_crash, 'JSONDecodeError.*blank lines can follow'),
          (literal_eval, r'JSON is not Python.*json\.loads'), (python_eval, 'JSON is not Python'),
          (literal_eval_guarded, "Python's repr of a dict"), (the_text, "line's text"), (empty_dict, 'empty dict'),
          (crash_on_empty, 'IndexError.*no lines'), (search_back, "don't search back"), (any_json, 'a JSON object'),
          (greedy_regex, r'JSONDecodeError|take the last line'), (whole_output, 'JSONDecodeError.*last line that is not blank'), (keys_only, 'return a dict'),
          (unguarded, 'catch json.JSONDecodeError'), (brace_check, 'catch json.JSONDecodeError')]

def test_wrong_answers_are_named(): assert_check(check_tfs_result, tfs_result, WRONGS)

# --- the learner's answer carries the lesson on ------------------------------------------------------------------------
ANSWER = '''
def my_tfs_result(stdout):
    CALLS['tfs_result'] = CALLS.get('tfs_result', 0) + 1
    for line in reversed(stdout.splitlines()):
        if line.strip():
            try: res = json.loads(line)
            except ValueError: return None
            return res if isinstance(res, dict) else None
    return None
'''

def test_the_lesson_goes_on_with_the_learners_answer(tmp_path):
    "The learner's edition with the exercise answered: once the check passes, `tfs handout`'s results are read with it"
    from learner_run import run_answered
    seen = run_answered(tmp_path, '90_cli.ipynb', {'my_tfs_result': ANSWER})
    assert seen['end']['tfs_result'] > seen['after check']['tfs_result'], seen

# the audit's round: a last line that is a JSON list
def numbers_only(stdout):                            # refuses a number but passes any other JSON on, a list included
    lines = stdout.strip().splitlines()
    if not lines: return None
    try: res = json.loads(lines[-1])
    except json.JSONDecodeError: return None
    return None if isinstance(res, (int, float)) else res

def test_a_json_list_is_no_result(): assert_check(check_tfs_result, tfs_result, [(numbers_only, 'a JSON list.*a dict')])
