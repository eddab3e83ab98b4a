"""LoRA (lesson 50) against full fine-tuning, on a CPU: lesson 21's quick character model (`LM_QUICK['char']`), pretrained
on tiny Shakespeare, adapted to IMDB_SAMPLE's reviews read as characters (Shakespeare's characters only: the rest
become spaces). Every variant gets the same steps and batches; the loss is on the last 10 % of the reviews, never
trained on. Rows: the unadapted model, full fine-tuning, LoRA at `--ranks` on every linear layer of the blocks
(alpha = 2r), each with its trainable share and seconds; over `--seeds` seeds (pretraining once).

    python benchmarks/lora.py                                 # 600 pretraining steps, 200 adapting steps, ranks 1 4 16
    python benchmarks/lora.py --pretrain 300 --steps 80       # about the lesson's quick run
    python benchmarks/lora.py --gpt2                          # lesson 25's GPT-2 classifier, full vs LoRA: GPT-2 small on the
                                                              # full IMDB (GPT2_LORA_FULL; meant for a GPU); --quick: the tiny path

The last line is a JSON object with every number and the machine it came from (and its load average: timings on a shared
machine are upper bounds). GPU rows (GPT-2 small on full IMDB, LoRA vs full fine-tuning, `--gpt2`): not measured yet."""
import argparse, dataclasses, json, os, platform, statistics, time
import torch
from transformers_scratch.data import shakespeare_text, imdb_sample_df
from transformers_scratch.lm import LM_QUICK
from transformers_scratch.lmdata import CharVocab
from transformers_scratch.models import GenerationTransformer
from transformers_scratch.lora import lm_steps, reviews_as, adapt_compare, gpt2_lora_compare

def machine():
    if torch.cuda.is_available(): return torch.cuda.get_device_name()
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch threads {torch.get_num_threads()}"

def gpt2(a):
    "Lesson 25's classifier fine-tuned in full and with LoRA at --ranks, side by side: accuracy, trainable share, seconds and LoRA's time as a ratio of full fine-tuning's"
    res = gpt2_lora_compare(a.source, 'imdb', quick=a.quick, ranks=tuple(a.ranks))
    full = res['rows'][0]
    for row in res['rows']:
        row['seconds_vs_full'] = round(row['seconds'] / full['seconds'], 2) if full['seconds'] else None
        print(f"{row['method']:>18}  {row['trainable_pct']:7.2f} % trainable  accuracy {row['accuracy']:.4f}  {row['seconds']:8.1f} s "
              f"({row['seconds_vs_full']}× full's)")
    print(json.dumps(dict(res, machine=machine(), load_average=[round(x, 2) for x in os.getloadavg()])))

def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--pretrain', type=int, default=600, help='pretraining steps on tiny Shakespeare')
    ap.add_argument('--steps', type=int, default=200, help='adapting steps, the same for every variant')
    ap.add_argument('--ranks', type=int, nargs='+', default=[1, 4, 16])
    ap.add_argument('--seeds', type=int, default=1)
    ap.add_argument('--bs', type=int, default=32)
    ap.add_argument('--gpt2', action='store_true', help="lesson 25's GPT-2 classifier, full fine-tuning vs LoRA at --ranks (default 8)")
    ap.add_argument('--quick', action='store_true', help='with --gpt2: the tiny random GPT-2 shape on IMDB_SAMPLE (GPT2_LORA_QUICK)')
    ap.add_argument('--source', default='gpt2', help='with --gpt2: the hub name or folder of the GPT-2 to adapt')
    a = ap.parse_args()
    torch.set_num_threads(int(os.environ.get('OMP_NUM_THREADS', '1')))
    if a.gpt2:
        if a.ranks == [1, 4, 16]: a.ranks = [8]
        return gpt2(a)
    text = shakespeare_text()
    vocab = CharVocab(text)
    config = dataclasses.replace(LM_QUICK['char'].model, n_tokens=len(vocab))
    torch.manual_seed(0)
    t0 = time.perf_counter()
    base = lm_steps(GenerationTransformer(config), torch.tensor(vocab.encode(text)), config.seq_len, a.pretrain, a.bs, lr=LM_QUICK['char'].train.lr)
    pre_s = time.perf_counter() - t0
    ids = torch.tensor(vocab.encode(reviews_as(vocab.itos, imdb_sample_df())))
    runs = [adapt_compare(base, ids, a.steps, tuple(a.ranks), bs=a.bs, seed=s) for s in range(a.seeds)]
    rows = []
    for i, row in enumerate(runs[0]):
        losses = [r[i]['valid_loss'] for r in runs]
        rows.append(dict(method=row['method'], trainable_pct=round(row['trainable_pct'], 2), valid_loss=round(statistics.mean(losses), 4),
                         valid_loss_sd=round(statistics.stdev(losses), 4) if len(losses) > 1 else None,
                         seconds=round(statistics.mean(r[i]['seconds'] for r in runs), 1)))
        print(f"{row['method']:>18}  {rows[-1]['trainable_pct']:7.2f} % trainable  valid loss {rows[-1]['valid_loss']:.4f}  {rows[-1]['seconds']:6.1f} s")
    print(json.dumps(dict(pretrain_steps=a.pretrain, pretrain_seconds=round(pre_s, 1), steps=a.steps, bs=a.bs, seeds=a.seeds,
                          model=dataclasses.asdict(config), rows=rows, gpu='not measured yet',
                          machine=machine(),
                          load_average=[round(x, 2) for x in os.getloadavg()])))

if __name__ == '__main__': main()
