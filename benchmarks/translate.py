"""Translation benchmark: Multi30k German -> English, corpus BLEU on test_2016_flickr (sacrebleu, lowercased; cased too),
greedy and beam search side by side on the same trained model, in one run.

    python benchmarks/translate.py                 # the quick recipe, TRANSLATE_QUICK (what `tfs translate --quick` and CI run)
    python benchmarks/translate.py --full          # the full recipe, TRANSLATE_FULL, meant for one GPU (H100: ~10 min budget)
    python benchmarks/translate.py --beam 5 --src en --tgt fr

It trains once (`run_translate`, greedy BLEU), reloads the saved model and scores it again with beam search, then prints
one JSON object: BLEU, seconds (training, each decoding), training tokens/s, and the machine (CPU/GPU, threads, load
average: the 2-core CI machine is often shared, so report the load with the timing).
"""
import argparse, json, os, platform, tempfile
from pathlib import Path
import torch
from transformers_scratch.translate import load_translator, multi30k, evaluate_bleu, TRANSLATE_QUICK, TRANSLATE_FULL
from transformers_scratch.runs import run_translate
from transformers_scratch.config import ConfigError

def machine():
    m = {'platform': platform.platform(), 'cpus': os.cpu_count(), 'torch_threads': torch.get_num_threads(),
         'torch': torch.__version__}
    if torch.cuda.is_available(): m['gpu'] = torch.cuda.get_device_name(0)
    if hasattr(os, 'getloadavg'): m['load_avg_1min'] = round(os.getloadavg()[0], 2)
    return m

def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--full', action='store_true', help='the full (GPU) recipe instead of the quick one')
    p.add_argument('--beam', type=int, default=None, help='beam size to compare with greedy (default: 5 full, 4 quick)')
    p.add_argument('--src', default='de'); p.add_argument('--tgt', default='en')
    p.add_argument('--epochs', type=int, default=None)
    p.add_argument('--lr', type=float, default=None, help="peak learning rate of the one-cycle schedule (default: the recipe's)")
    a = p.parse_args()
    beam = a.beam or (5 if a.full else 4)
    try: recipe = (TRANSLATE_FULL if a.full else TRANSLATE_QUICK).replace(beam=1, epochs=a.epochs, lr=a.lr)   # greedy while training
    except ConfigError as e: p.error(f"--{e.key}: {e.why}")
    with tempfile.TemporaryDirectory() as d:
        path = Path(d)/'model.pt'
        load0 = machine().get('load_avg_1min')
        res = run_translate(src=a.src, tgt=a.tgt, recipe=recipe, quick=not a.full, out=path)
        tr = load_translator(path)
    if torch.cuda.is_available(): tr.model.cuda()
    test = multi30k(a.src, a.tgt, splits=('test_2016_flickr',))['test_2016_flickr']
    b = evaluate_bleu(tr.model, tr.src_vocab, tr.tgt_vocab, test, beam=beam)
    out = {'config': 'full' if a.full else 'quick', 'pair': f"{a.src}-{a.tgt}", 'params': res['params'],
           'epochs': res['epochs'], 'lr': recipe.train.lr, 'train_seconds': res['train_seconds'], 'tokens_per_s': res['tokens_per_s'],
           'total_seconds': res['seconds'], 'valid_loss': res['valid_loss'],
           'greedy': {'bleu': res['bleu'], 'bleu_cased': res['bleu_cased'], 'seconds': res['bleu_seconds']},
           f'beam{beam}': {'bleu': b['bleu'], 'bleu_cased': b['bleu_cased'], 'seconds': b['seconds']},
           'device': res['device'], 'machine': machine(), 'load_avg_at_start': load0}
    print(json.dumps(out))

if __name__ == '__main__': main()
