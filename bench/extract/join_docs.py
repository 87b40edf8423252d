#!/usr/bin/env python3
"""Records of a fixed length for throughput at N tokens per document.

Joins pairs of test documents (drawn with a fixed seed) into records long
enough that `onecore extract --max-tokens N` cuts every one to N tokens,
keeping the first document's question. Their answers mean nothing: this is
for documents/s at a given length (the issue's "≤ 512 tokens per document"),
not for scores. Example, the 2-layer head at 512 tokens:

  bench/extract/join_docs.py /tmp/ex-all/{copyright_holder,upstream_contact,email_sender}.test.jsonl \\
      --records 1000 > /tmp/ex-512.jsonl
  FLAGS="--max-tokens 512" VARIANTS="|--int8" CORE=1 bench/speed.sh extract /tmp/ex-512.jsonl HEAD_DIR
"""
import argparse
import json
import random
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("inputs", nargs="+", help="FAMILY.test.jsonl files of bench/extract/prep.py")
    ap.add_argument("--records", type=int, default=1000)
    ap.add_argument("--min-chars", type=int, default=3000,
                    help="join documents until a record has this many characters (~4 per token)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    docs = []
    for p in a.inputs:
        with open(p, encoding="utf-8") as f:
            docs += [json.loads(line) for line in f if line.strip()]
    if len(docs) < 2:
        sys.exit("join_docs.py: need at least 2 documents")
    rng = random.Random(a.seed)
    out = sys.stdout
    for i in range(a.records):
        first = rng.choice(docs)
        text = first["text"]
        while len(text) < a.min_chars:
            text += "\n\n" + rng.choice(docs)["text"]
        out.write(json.dumps({"id": f"joined-{i}", "text": text, "question": first.get("question")}, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
