#!/usr/bin/env python3
"""Deterministic synthetic corpus for the token-cache memory test (issue 13).

Writes JSON Lines shards ({"text": ...}) of English-like documents until
--bytes of text are written: words from a fixed seeded vocabulary with a
Zipf-like frequency, sentences and paragraphs of varying length, so the BPE
tokenizer sees realistic merges. The same arguments always give the same
bytes, so a measurement can be repeated.

  python3 bench/gen_corpus.py --out /tmp/corpus2g --bytes 2200000000
"""
import argparse
import json
import os
import random


def vocabulary(rng, n):
    onsets = ["", "b", "c", "d", "f", "g", "h", "l", "m", "n", "p", "r", "s", "t", "w", "st", "tr", "pl", "ch", "sh", "th"]
    vowels = ["a", "e", "i", "o", "u", "ea", "ou", "ai"]
    codas = ["", "n", "r", "s", "t", "l", "nd", "st", "ng", "ck"]
    words = set()
    while len(words) < n:
        k = rng.choice([1, 1, 2, 2, 2, 3, 3, 4])
        words.add("".join(rng.choice(onsets) + rng.choice(vowels) + rng.choice(codas) for _ in range(k)))
    return sorted(words)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--bytes", type=int, required=True, help="text bytes in total")
    ap.add_argument("--shard-bytes", type=int, default=256 << 20)
    ap.add_argument("--seed", type=int, default=13)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    words = vocabulary(rng, 20000)
    cum, acc = [], 0.0
    for i in range(len(words)):
        acc += 1.0 / (i + 10)
        cum.append(acc)
    # a pool of pre-drawn sentences keeps generation fast (~100 MB/s) while
    # documents still differ: each document is a random draw from the pool
    pool = []
    for _ in range(200000):
        ws = rng.choices(words, cum_weights=cum, k=rng.randint(4, 24))
        pool.append(ws[0].capitalize() + " " + " ".join(ws[1:]) + rng.choice([".", ".", ".", "?", "!"]))
    os.makedirs(a.out, exist_ok=True)
    written, shard, f, in_shard = 0, 0, None, 0
    while written < a.bytes:
        if f is None or in_shard >= a.shard_bytes:
            if f:
                f.close()
            f = open(os.path.join(a.out, f"part-{shard:04d}.jsonl"), "w")
            shard, in_shard = shard + 1, 0
        paras = []
        for _ in range(rng.randint(1, 8)):
            paras.append(" ".join(rng.choices(pool, k=rng.randint(2, 10))))
        text = "\n\n".join(paras)
        line = json.dumps({"text": text}) + "\n"
        f.write(line)
        written += len(text)
        in_shard += len(line)
    f.close()
    print(f"{written} text bytes in {shard} shards under {a.out}")


if __name__ == "__main__":
    main()
