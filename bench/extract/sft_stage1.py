#!/usr/bin/python3
"""Stage 1 of the generative extraction recipe (issue 14 item 2): generic
copy, abstention and stopping examples made from unlabeled documents, in
the same prompt format as run.sh's SFT records, so that a model learns to
copy a span of its document (and to say "none") before it sees any
family's labels. Stage 2 is the family's own SFT from this checkpoint
(run.sh SFT=1 SFT_BASE=...).

Kinds of examples, from each document's own text (no labels needed):
  field    a "Key: value" line: "What is the Key?" -> value (one line)
  follow   a phrase that occurs once: 'What follows "<2-3 words>"?' -> the
           next 1-6 words of its line
  absent   either question about a key or phrase of another document that
           this one does not contain -> "none"
Every answer ends the record, so stopping is learnt with copying.

Usage: bench/extract/sft_stage1.py OUT.jsonl FILE.jsonl [FILE.jsonl ...]
  FILEs: JSON Lines with a "text" field (e.g. prep.py's *.train.jsonl: their
  texts only; test splits must not be given). --n examples (default 6000).
"""
import argparse
import hashlib
import json
import random
import re


def h64(s):
    return int.from_bytes(hashlib.sha256(s.encode()).digest()[:8], "big")


FIELD = re.compile(r"^([A-Z][A-Za-z][\w -]{1,30}?):[ \t]+(\S.{0,80}?)\s*$", re.M)


def follow_example(rng, text):
    lines = [l for l in text.split("\n") if len(l.split()) >= 5]
    if not lines:
        return None
    line = rng.choice(lines)
    words = line.split()
    k = rng.choice((2, 3))
    i = rng.randrange(0, len(words) - k)
    key = " ".join(words[i:i + k])
    if text.count(key) != 1:
        return None
    n = rng.randint(1, 6)
    rest = words[i + k:i + k + n]
    if not rest:
        return None
    ans = " ".join(rest)
    # the answer as it appears right after the key (single spaces in the line)
    if (key + " " + ans) not in text:
        return None
    return f'What follows "{key}"?', ans, key


def field_example(rng, text):
    fields = [(m.group(1).strip(), m.group(2).strip()) for m in FIELD.finditer(text)]
    fields = [(k, v) for k, v in fields if sum(1 for kk, _ in fields if kk == k) == 1]
    if not fields:
        return None
    k, v = rng.choice(fields)
    return f"What is the {k}?", v, k + ":"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("files", nargs="+")
    ap.add_argument("--n", type=int, default=6000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    texts = []
    seen = set()
    for p in a.files:
        if ".test." in p:
            raise SystemExit(f"sft_stage1: {p} looks like a test split; give training files only")
        for line in open(p, encoding="utf-8"):
            t = json.loads(line)["text"]
            if t not in seen:
                seen.add(t)
                texts.append(t)
    texts.sort(key=h64)
    rng = random.Random(a.seed)
    kinds = {"field": 0, "follow": 0, "absent": 0}
    with open(a.out, "w", encoding="utf-8") as f:
        made = 0
        tries = 0
        while made < a.n and tries < 20 * a.n:
            tries += 1
            t = rng.choice(texts)
            r = rng.random()
            if r < 0.2:
                other = rng.choice(texts)
                ex = (field_example if rng.random() < 0.5 else follow_example)(rng, other)
                if not ex or ex[2] in t:
                    continue
                q, ans, kind = ex[0], "none", "absent"
            else:
                ex = field_example(rng, t) if r < 0.5 else follow_example(rng, t)
                if not ex:
                    continue
                q, ans, kind = ex[0], ex[1], "field" if r < 0.5 else "follow"
            prompt = t + "\nQuestion: " + q + "\nAnswer:"
            f.write(json.dumps({"prompt": prompt, "answer": " " + ans}, ensure_ascii=False) + "\n")
            kinds[kind] += 1
            made += 1
    print(f"sft_stage1: {made} examples from {len(texts)} documents: {kinds}")


if __name__ == "__main__":
    main()
