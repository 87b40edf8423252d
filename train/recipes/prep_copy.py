#!/usr/bin/python3
"""Copy-rich documents for continued pretraining of the base model.

The base model copies a repeated sequence only about half the time
(induction probe 0.45 after 300M tokens, docs/notes/issue-13.md), and
generative extraction is bounded by that: a fine-tuned model writes a
plausible answer instead of the one in the document. Natural text repeats
itself too rarely to teach copying at this scale, so this script makes
documents that do, from the corpus's own text (no new source):

  a corpus document (at most --doc-chars characters, cut at a word), then
  2 to 4 passages repeated from it, word spans of 6 to 40 words, each
  presented the way text gets repeated in the wild: plainly after a blank
  line, as an e-mail quote ("> " before each line), in double quotes after
  "As stated above:" style lead-ins, or as a "key: value" recap line.

The first words of a repeated passage are not predictable; the rest are a
copy of text seen earlier in the document, which is what the induction probe
and extractive answers need. The spans are natural text, not the probe's
random tokens.

Documents are taken from corpus/*.jsonl in SHA-256 order of their id (the
sample is spread over every source) until --chars characters are written;
ids are "copy:<source id>". Deterministic for a given corpus.

Usage: prep_copy.py --corpus DIR/corpus --out copy.jsonl [--chars 48000000]
"""
import argparse
import glob
import hashlib
import json
import random
import sys

LEADS = ["As stated above:", "To repeat:", "Quoting the text:", "In other words, as written:",
         "Again:", "The key passage:", "Recall:", "Note:"]


def words_cut(text, limit):
    """text cut to at most limit characters at a word boundary."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[:cut if cut > limit // 2 else limit]


def repeat(rng, span):
    """span presented in one of the ways text is repeated."""
    style = rng.randrange(4)
    if style == 0:
        return span
    if style == 1:
        return "\n".join("> " + line for line in span.split("\n"))
    if style == 2:
        return rng.choice(LEADS) + ' "' + span + '"'
    return rng.choice(["summary", "quote", "excerpt", "text", "passage"]) + ": " + span


def make(rng, text, doc_chars):
    text = words_cut(text.strip(), doc_chars)
    words = text.split(" ")
    if len(words) < 12:
        return None
    parts = [text]
    for _ in range(rng.randint(2, 4)):
        n = rng.randint(6, min(40, len(words) - 1))
        s = rng.randrange(0, len(words) - n + 1)
        span = " ".join(words[s:s + n]).strip()
        if span:
            parts.append(repeat(rng, span))
    return "\n\n".join(parts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", required=True, help="prep_base.py's corpus/ directory")
    ap.add_argument("--out", required=True)
    ap.add_argument("--chars", type=int, default=48_000_000, help="characters to write (about 4 per token)")
    ap.add_argument("--doc-chars", type=int, default=1600)
    ap.add_argument("--seed", type=int, default=13)
    a = ap.parse_args()
    rows = []
    for p in sorted(glob.glob(a.corpus + "/*.jsonl")):
        for line in open(p, encoding="utf-8"):
            r = json.loads(line)
            rows.append((hashlib.sha256(r["id"].encode()).digest(), r["id"], r["text"]))
    rows.sort()
    rng = random.Random(a.seed)
    n = docs = 0
    with open(a.out, "w", encoding="utf-8") as f:
        for _, rid, text in rows:
            doc = make(rng, text, a.doc_chars)
            if doc is None:
                continue
            f.write(json.dumps({"id": "copy:" + rid, "text": doc}, ensure_ascii=False) + "\n")
            n += len(doc)
            docs += 1
            if n >= a.chars:
                break
    print(f"{a.out}: {docs} documents, {n} characters", file=sys.stderr)


if __name__ == "__main__":
    main()
