"""Lesson 52's quick run, tested on what the lesson itself computed (the solutions edition's Run all, CPU, `INSTRUCT_QUICK`,
seed 0): tests/test_colab_run.py runs this file in the notebook's namespace, so the quick configuration trains once.

The issue's targets, measured at this size (lesson 52 and benchmarks/instruct.py, 3 seeds): the base model's exact match
<= 0.10 on the generated tasks holds (0.00) and is asserted; >= 95 % of responses stopping at the end token holds on six
tasks of seven (1.00 on spell, count, reverse, add, sentiment and topic) and is asserted there, not on translate
(0.03-0.23); exact match >= 0.90 on the generated tasks (0.00 on spell, reverse and add, 0.53-0.60 on count) and >= 0.70
on sentiment and topic (0.53-0.63, 0.27-0.37) are NOT met at this size (why: lesson 52, 'The issue's targets,
measured'): a floor under the three seeds' figures is asserted instead, so that a regression shows."""
from transformers_scratch.instruct import INSTRUCT_QUICK, save_instruct, load_instruct

NOTEBOOK = {}   # filled by tools/learner_checks.py with the lesson's namespace after its Run all

def test_the_lesson_ran_the_quick_configuration():
    assert NOTEBOOK, "run through tools/colab_run.py nbs/52_instruct.ipynb --tests tests/measured_instruct.py"
    assert NOTEBOOK['RECIPE'] == INSTRUCT_QUICK and NOTEBOOK['res']['seed'] == 0 and NOTEBOOK['res']['device'] == 'cpu'

def test_quick_targets():
    base, tuned = NOTEBOOK['res']['base'], NOTEBOOK['res']['tuned']
    assert all(base[t]['exact'] <= 0.10 for t in ('spell', 'count', 'reverse', 'add')), base
    assert all(base[t]['stops'] <= 0.10 for t in base), base                       # the base model continues text
    assert all(tuned[t]['stops'] >= 0.95 for t in ('spell', 'count', 'reverse', 'add', 'sentiment', 'topic')), tuned
    assert tuned['count']['exact'] >= 0.5 and tuned['sentiment']['exact'] >= 0.4 and tuned['topic']['exact'] >= 0.2, tuned

def test_the_tuned_model_saves_and_loads(tmp_path):
    res = NOTEBOOK['res']
    save_instruct(res['model'], res['tokenizer'], tmp_path/'m.pt')
    m, tok = load_instruct(tmp_path/'m.pt')
    assert m.config == INSTRUCT_QUICK['tune'].model and tok.itos == res['tokenizer'].itos
