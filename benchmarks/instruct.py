"""Instruction tuning (lesson 52) measured per task on held-out examples, over seeds: the base model prompted with the
template, the instruction-tuned model (loss on the responses only), the same with the loss on every token (the prompt
too), and LoRA (lesson 50, every linear layer of the blocks, merged) instead of full fine-tuning. Each run pretrains its
own base (`run_instruct`), so the seeds vary the data's draw, the weights and the batches.

    python benchmarks/instruct.py                               # INSTRUCT_QUICK, 3 seeds, every variant (CPU: tens of minutes)
    python benchmarks/instruct.py --seeds 1 --variants response # the lesson's run
    python benchmarks/instruct.py --full                        # INSTRUCT_FULL (a GPU; prints each phase as it ends: --progress)
    python benchmarks/instruct.py --seeds 1 --variants response --tasks spell --steps 2000   # one task alone, longer
    python benchmarks/instruct.py --seeds 1 --variants response --tasks spell --steps 2000 --pos learned

`--tasks` takes lesson 51's task names, each with an optional share (`spell:2,add:1`; default: all seven, evenly);
`--steps` sets the tuning steps, and the training examples grow with them so that each is still seen once;
`--pretrain-steps` sets the pretraining's (`--pretrain-steps 1`: next to none, a model tuned from its initialisation);
`--max-train` fixes their number instead (`--tasks reverse --steps 2000 --max-train 1000`: a fixed thousand, each seen 64 times);
`--model` changes the model's shape (`--model depth=4,heads=8`), for pretraining and tuning alike.

Prints one table per variant (mean and range over the seeds of exact match, the share of responses that stop at the
end token, BLEU for translation), then, as its last line, a JSON object with every number, the machine and its load
average (timings on a shared machine are upper bounds)."""
import argparse, dataclasses, json, os, platform, statistics, time
import torch
from transformers_scratch.config import ModelConfig
from transformers_scratch.instruct import INSTRUCT_QUICK, INSTRUCT_FULL
from transformers_scratch.runs import run_instruct

VARIANTS = {'response': dict(), 'all': dict(loss_on='all'), 'lora': dict(lora=(8, 16))}

def model_settings(text):
    "{field: value} of 'depth=4,heads=8': `ModelConfig` fields, each value read as its default's type (a field that defaults to None: a whole number)"
    defaults = {f.name: getattr(ModelConfig(), f.name) for f in dataclasses.fields(ModelConfig)}
    out = {}
    for item in text.split(','):
        k, eq, v = (x.strip() for x in item.partition('='))
        if not eq or k not in defaults: raise ValueError(f"expected name=value pairs of ModelConfig's fields ({', '.join(defaults)}), got {item!r}")
        t = type(defaults[k]) if defaults[k] is not None else int
        if t is bool and v.lower() not in ('true', 'false', '1', '0'): raise ValueError(f"{k}: expected true or false, got {v!r}")
        try: out[k] = None if v == 'None' else v.lower() in ('1', 'true') if t is bool else t(v)
        except ValueError: raise ValueError(f"{k}: expected a {t.__name__}, got {v!r}") from None
    return out

def summary(runs, key):
    "{task: {measure: (mean, min, max)}} over `runs` of their `key` ('base' or 'tuned')"
    out = {}
    for t in runs[0][key]:
        out[t] = {m: (statistics.mean(v), min(v), max(v)) for m in ('exact', 'stops', 'bleu') if m in runs[0][key][t]
                  for v in [[r[key][t][m] for r in runs]]}
    return out

def show(name, s):
    print(f"\n{name}")
    for t, ms in s.items():
        print(f"  {t:10}" + ''.join(f"  {m} {a:.3f} [{lo:.3f}, {hi:.3f}]" for m, (a, lo, hi) in ms.items()))

def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--seeds', type=int, default=3)
    ap.add_argument('--variants', nargs='+', default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument('--full', action='store_true', help='INSTRUCT_FULL instead of INSTRUCT_QUICK')
    ap.add_argument('--steps', type=int, default=None, help="tuning steps (default: the recipe's); the examples grow with them")
    ap.add_argument('--tasks', default=None, help="tasks to tune on, each with an optional share: 'spell', 'spell,reverse', 'spell:2,add:1' (default: all seven, evenly)")
    ap.add_argument('--max-train', type=int, default=None, help="tuning examples in all (default: bs·steps, each seen once); fewer are seen again and again")
    ap.add_argument('--pretrain-steps', type=int, default=None, help="steps of pretraining on raw text (default: the recipe's; 1 is next to none)")
    ap.add_argument('--pos', default=None, choices=['learned', 'sinusoidal', 'rope'], help="the model's positions (default: the recipe's)")
    ap.add_argument('--model', default=None, help="other settings of the model (a `ModelConfig`'s fields), for pretraining and tuning alike: 'depth=4,heads=8'")
    ap.add_argument('--progress', action=argparse.BooleanOptionalAction, default=None,
                    help="print each phase of each run as it ends (default: with --full, where a run takes minutes)")
    a = ap.parse_args()
    for flag in ('seeds', 'steps', 'max_train', 'pretrain_steps'):      # refused before anything trains, not silently dropped
        v = getattr(a, flag)
        if v is not None and v < 1: ap.error(f"--{flag.replace('_', '-')}: expected a whole number >= 1, got {v}")
    torch.set_num_threads(int(os.environ.get('OMP_NUM_THREADS', '1')))
    recipe = dict(INSTRUCT_FULL if a.full else INSTRUCT_QUICK)
    if a.steps is not None:
        t = recipe['tune'].train
        recipe['tune'] = recipe['tune'].replace(n_batches=a.steps, max_train=max(t.max_train or 0, t.bs * a.steps))
    if a.max_train is not None: recipe['tune'] = recipe['tune'].replace(max_train=a.max_train)
    if a.pretrain_steps is not None: recipe['pretrain'] = recipe['pretrain'].replace(n_batches=a.pretrain_steps)
    if a.pos: recipe = {k: r.replace(pos=a.pos) for k, r in recipe.items()}
    if a.model:
        try: recipe = {k: r.replace(**model_settings(a.model)) for k, r in recipe.items()}
        except (ValueError, TypeError) as e: ap.error(f"--model: {e}")
    tasks = None
    if a.tasks:
        try: tasks = {t: float(w) if w else 1 for t, _, w in (x.strip().partition(':') for x in a.tasks.split(','))}
        except ValueError: ap.error(f"--tasks: expected task names with optional numeric shares such as spell:2,add:1, got {a.tasks!r}")
    if a.progress is None: a.progress = a.full
    res, dev = {}, None
    for v in a.variants:
        runs = []
        for s in range(a.seeds):
            c0 = time.process_time()
            r = run_instruct(recipe, seed=s, base=(v == 'response'), tasks=tasks, verbose=a.progress, **VARIANTS[v])
            r['cpu_s'] = time.process_time() - c0
            dev = r['device'] + (f" ({torch.cuda.get_device_name()})" if r['device'].startswith('cuda') else '')
            runs.append({k: r[k] for k in ('base', 'tuned', 'pretrain_s', 'tune_s', 'cpu_s', 'trainable_pct', 'tune_loss') if k in r})
            print(f"{v} seed {s}: pretrain {r['pretrain_s']:.0f} s, tune {r['tune_s']:.0f} s (wall); whole run {r['cpu_s']:.0f} s of CPU; "
                  f"training loss at the end {r['tune_loss']:.3f}", flush=True)
        res[v] = dict(tuned=summary(runs, 'tuned'), seconds=statistics.mean(r['pretrain_s'] + r['tune_s'] for r in runs),
                      cpu_seconds=statistics.mean(r['cpu_s'] for r in runs),
                      tune_loss=[r['tune_loss'] for r in runs],
                      **({'base': summary(runs, 'base')} if v == 'response' else {}),
                      **({'trainable_pct': runs[0]['trainable_pct']} if 'trainable_pct' in runs[0] else {}))
        if v == 'response': show(f"base model, prompted with the template ({a.seeds} seeds: mean [min, max])", res[v]['base'])
        show(f"tuned: {v} ({a.seeds} seeds: mean [min, max]; {res[v]['seconds']:.0f} s of training per run, {res[v]['cpu_seconds']:.0f} s of CPU per whole run)", res[v]['tuned'])
    machine = (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch threads {torch.get_num_threads()}, "
               f"{dev}, torch {torch.__version__}, load average {os.getloadavg()[0]:.1f}")
    print(f"\nmachine: {machine}")
    print(json.dumps(dict(recipe='INSTRUCT_FULL' if a.full else 'INSTRUCT_QUICK', steps=recipe['tune'].train.n_batches, pretrain_steps=recipe['pretrain'].train.n_batches, max_train=recipe['tune'].train.max_train, pos=recipe['tune'].model.pos, model=a.model,
                          tasks=tasks, seeds=a.seeds, machine=machine, results=res)))

if __name__ == '__main__': main()
