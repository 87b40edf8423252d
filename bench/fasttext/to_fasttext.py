#!/usr/bin/python3
"""Convert id/text/label JSONL to fastText's supervised format.

One line per document: `__label__<label> <tokens>`, with the preprocessing
from the fastText text-classification tutorial (lower-case, punctuation split
off, whitespace collapsed to single spaces so a document is one line).

Usage: to_fasttext.py IN.jsonl OUT.txt [--label-field label] [--text-field text]
Also writes OUT.ids (one id per line, same order) for scoring predictions.
"""
import argparse
import json
import re

PUNCT = re.compile(r"([.!?,'/()\"])")


def clean(text):
    return " ".join(PUNCT.sub(r" \1 ", text.lower()).split())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("inp")
    ap.add_argument("out")
    ap.add_argument("--label-field", default="label")
    ap.add_argument("--text-field", default="text")
    a = ap.parse_args()
    with open(a.inp, encoding="utf-8") as f, open(a.out, "w", encoding="utf-8") as o, \
            open(a.out.rsplit(".", 1)[0] + ".ids", "w", encoding="utf-8") as ids:
        for line in f:
            r = json.loads(line)
            o.write(f"__label__{r[a.label_field]} {clean(r[a.text_field])}\n")
            ids.write(f"{r['id']}\n")


if __name__ == "__main__":
    main()
