"""Byte-level BPE (lesson 19) beside Hugging Face's `tokenizers`, on tiny Shakespeare, in one run:

- `train`: learning `--vocab` ids from the first `--train-chars` characters: our `train_bpe_fast` (pure Python, counts
  updated only for the chunks a merge touched), our didactic `train_bpe` (all pairs recounted each merge; `--slow`), and
  `tokenizers`' `BpeTrainer` (Rust, its default threads), interleaved rounds; characters per second and the ratio.
- `encode`: all of tiny Shakespeare with the same merges (tokenizers' own, read by our `read_tokenizer_json`, so that
  the ids can be checked identical): our `BPETokenizer.encode` with a cold cache of chunks and with a warm one, and
  `tokenizers`' `encode` (one call on the whole text, and `encode_batch` on its lines); characters per second.
- bytes per token of both trainers' tokenizers on the held-out rest of the text.

    python benchmarks/bpe.py                       # 512 ids, 300,000 training characters, 3 rounds
    python benchmarks/bpe.py --vocab 2000 --slow   # the didactic trainer too (minutes)

The last line is a JSON object with every number and the machine it came from (and its load average: timings on a shared
machine are upper bounds)."""
import argparse, json, os, platform, time
from pathlib import Path
from transformers_scratch.bpe import BPETokenizer, read_tokenizer_json, train_bpe, train_bpe_fast

def _hf_train(text, vocab):
    from tokenizers import Tokenizer, models, trainers, pre_tokenizers, decoders
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    t.decoder = decoders.ByteLevel()
    t.train_from_iterator([text], trainers.BpeTrainer(vocab_size=vocab, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                                      show_progress=False))
    return t

def _faster(ours, theirs):
    "Who is faster, and by how much, from two timings"
    return f"ours {theirs / ours:.1f}x faster" if ours < theirs else f"tokenizers {ours / theirs:.1f}x faster"

def _cpu():
    try: return next(l.split(':', 1)[1].strip() for l in open('/proc/cpuinfo') if l.startswith('model name'))
    except (OSError, StopIteration): return platform.processor() or platform.machine()

def _best(fn, rounds):
    "The best of `rounds` timings of `fn()` and its last result"
    best, out = float('inf'), None
    for _ in range(rounds):
        t0 = time.perf_counter(); out = fn(); best = min(best, time.perf_counter() - t0)
    return best, out

def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--vocab', type=int, default=512)
    p.add_argument('--train-chars', type=int, default=300_000)
    p.add_argument('--rounds', type=int, default=3)
    p.add_argument('--slow', action='store_true', help='also time the didactic train_bpe')
    a = p.parse_args()
    path = Path(os.environ.get('TFS_DATA', Path.home()/'.transformers_scratch'/'data'))/'tinyshakespeare'/'input.txt'
    text = path.read_text(encoding='utf-8')
    train_text, held = text[:a.train_chars], text[a.train_chars:]
    res = {'machine': f"{_cpu()}, {os.cpu_count()} cores", 'load': os.getloadavg()[0],
           'vocab': a.vocab, 'train_chars': len(train_text), 'encode_chars': len(text)}
    t_ours = t_hf = float('inf')
    for _ in range(a.rounds):                                       # interleaved, so both see the same load
        t, ours = _best(lambda: BPETokenizer.train(train_text, a.vocab, special=()), 1); t_ours = min(t_ours, t)
        t, hf = _best(lambda: _hf_train(train_text, a.vocab), 1); t_hf = min(t_hf, t)
    res['train_s'] = {'ours_fast': t_ours, 'tokenizers': t_hf}
    if a.slow: res['train_s']['ours_didactic'] = _best(lambda: train_bpe(train_text, a.vocab), 1)[0]
    assert list(train_bpe_fast(train_text[:20000], 300).items()) == list(train_bpe(train_text[:20000], 300).items())
    theirs = read_tokenizer_json(hf.to_str())
    cold = []
    for _ in range(a.rounds):
        theirs.cache.clear()
        t0 = time.perf_counter(); ids = theirs.encode(text); cold.append(time.perf_counter() - t0)
    warm, _ = _best(lambda: theirs.encode(text), a.rounds)
    t_hf_enc, hf_ids = _best(lambda: hf.encode(text).ids, a.rounds)
    lines = text.splitlines(keepends=True)
    t_hf_batch, _ = _best(lambda: hf.encode_batch(lines), a.rounds)
    res['identical_ids'] = ids == hf_ids
    res['encode_s'] = {'ours_cold_cache': min(cold), 'ours_warm_cache': warm, 'tokenizers_one_call': t_hf_enc, 'tokenizers_batch_of_lines': t_hf_batch}
    n = len(held.encode('utf-8'))
    res['bytes_per_token_held_out'] = {'ours': n / len(ours.encode(held)), 'tokenizers': n / len(hf.encode(held).ids)}
    print(f"machine: {res['machine']}, load average {res['load']:.1f} (timings are upper bounds on a shared machine)")
    print(f"train {a.vocab} ids on {len(train_text):,} chars: ours {t_ours:.2f} s ({len(train_text) / t_ours / 1e3:,.0f} k chars/s), "
          f"tokenizers {t_hf:.2f} s ({len(train_text) / t_hf / 1e3:,.0f} k chars/s): {_faster(t_ours, t_hf)}"
          + (f"; didactic train_bpe {res['train_s']['ours_didactic']:.1f} s" if a.slow else ''))
    e = res['encode_s']
    print(f"encode {len(text):,} chars: ours {e['ours_cold_cache']:.2f} s cold cache ({len(text) / e['ours_cold_cache'] / 1e6:.2f} M chars/s), "
          f"{e['ours_warm_cache']:.2f} s warm; tokenizers {e['tokenizers_one_call']:.2f} s one call, {e['tokenizers_batch_of_lines']:.2f} s "
          f"batch of lines: {_faster(e['ours_cold_cache'], min(e['tokenizers_one_call'], e['tokenizers_batch_of_lines']))} (cold cache vs "
          f"tokenizers' best); identical ids: {res['identical_ids']}")
    b = res['bytes_per_token_held_out']
    print(f"bytes per token on held-out text: ours {b['ours']:.4f}, tokenizers {b['tokenizers']:.4f} ({100 * (b['ours'] / b['tokenizers'] - 1):+.2f}%)")
    print(json.dumps(res))

if __name__ == '__main__': main()
