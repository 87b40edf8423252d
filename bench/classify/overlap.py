#!/usr/bin/python3
"""How much of a task's test split a pretraining corpus already holds.

For each test row of TASK_DIR/test.jsonl: does it share a run of N words
(default 13, the usual contamination n-gram; rows shorter than N words count
when the whole row appears) with any text of the corpus files? Words are
lowercased runs of letters and digits, so line breaks and punctuation do not
hide a copy.

Corpus files: JSON Lines with a "text" field (train/recipes/prep_base.py's
corpus/*.jsonl), JSON (a list of strings, or an object with "text": npm
nlp-corpus's builds, stdlib datasets) or plain text (anything else, read
whole).

Usage: bench/classify/overlap.py TASK_DIR CORPUS_FILE... [--n 13] [--show 5]
Prints per corpus file and in total: test rows with a hit, of how many.
"""
import argparse
import json
import re
import sys

WORD = re.compile(r"[^\W_]+")


def words(text):
    return WORD.findall(text.lower())


def grams(ws, n):
    if len(ws) < n:
        return {tuple(ws)} if ws else set()
    return {tuple(ws[i:i + n]) for i in range(len(ws) - n + 1)}


def corpus_texts(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        if path.endswith(".json"):
            v = json.load(f)
            if isinstance(v, dict):
                v = [v.get("text") or ""]
            yield "\n".join(x for x in v if isinstance(x, str))
        elif path.endswith(".jsonl"):
            for line in f:
                line = line.strip()
                if line:
                    yield json.loads(line).get("text") or ""
        else:
            yield f.read()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("task_dir")
    ap.add_argument("corpus", nargs="+")
    ap.add_argument("--n", type=int, default=13)
    ap.add_argument("--show", type=int, default=5, help="print this many hits per corpus file")
    a = ap.parse_args()
    rows = [json.loads(l) for l in open(a.task_dir.rstrip("/") + "/test.jsonl", encoding="utf-8")]
    # every gram of every test row -> the rows holding it; short rows are
    # matched as a whole sequence, so keep them apart
    owners, short = {}, {}
    for i, r in enumerate(rows):
        ws = words(r["text"])
        if len(ws) < a.n:
            if ws:
                short.setdefault(" ".join(ws), []).append(i)
            continue
        for g in grams(ws, a.n):
            owners.setdefault(g, []).append(i)
    hit_all = set()
    for path in a.corpus:
        hit = set()
        for text in corpus_texts(path):
            ws = words(text)
            for j in range(len(ws) - a.n + 1):
                for i in owners.get(tuple(ws[j:j + a.n]), ()):
                    hit.add(i)
            if short:
                joined = " " + " ".join(ws) + " "
                for s, idx in short.items():
                    if " " + s + " " in joined:
                        hit.update(idx)
        hit_all |= hit
        print(f"{path}: {len(hit)} of {len(rows)} test rows ({100 * len(hit) / max(1, len(rows)):.2f} %)")
        for i in sorted(hit)[:a.show]:
            print(f"    {rows[i].get('id', i)}: {rows[i]['text'][:100]!r}")
    print(f"total: {len(hit_all)} of {len(rows)} test rows ({100 * len(hit_all) / max(1, len(rows)):.2f} %) share a {a.n}-word run with the corpus")


if __name__ == "__main__":
    sys.exit(main())
