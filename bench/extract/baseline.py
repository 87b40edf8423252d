#!/usr/bin/python3
"""The extraction benchmark's baseline: what a user would otherwise write,
one hand-written regular expression per family (fixed before any model's
test results were seen; not tuned on the test split). Reads a family's
records and writes predictions as JSON Lines {"id", "answer", "abstained"}
(answer null when the regex finds nothing: the baseline abstains).

Usage: bench/extract/baseline.py FAMILY IN.jsonl OUT.jsonl
"""
import json
import re
import sys

RULES = {
    # display name of the From: header: "Name" <a@b>, Name <a@b>, a@b (Name)
    "email_sender": [r'^From: "?([^"<>\n]*?)"?\s*<', r"^From: \S+@\S+\s*\(([^()\n]+)\)"],
    # the first holder on the first Copyright: line, after years and (c)
    # a signature: the last short line of one to three capitalised words
    # (after a "-- " separator when there is one)
    "email_signature": None,
    "copyright_holder": [r"^Copyright:[ \t]*(?:copyright\s*)?(?:\([cC]\)\s*|©\s*)?(?:[\d ,\-]+\s+)?([^<\n]*?)\s*(?:<|$)"],
    "upstream_contact": [r"^Upstream-Contact:[ \t]*(\S.*)$"],
    "changelog_uploader": [r"^ -- (.+?) <"],
    "changelog_bug": [r"[Cc]loses:\s*#(\d+)"],
    "fortune_author": [r"^\s*--\s*([^,(\n]+?)\s*(?:,|\(|$)"],
    "man_purpose": [r"^NAME\n\s*\S.*? - (.+)$"],
    # outside the benchmark (prep.py HELD_OUT): the Source: field, else a
    # URL after "downloaded from"
    "source_url": [r"^Source:[ \t]*(\S+)", r"[Dd]ownloaded from:?\s*<?((?:https?|ftp)://[^\s<>]+?)>?[.,;]?(?:\s|$)"],
}


def signature(text):
    lines = [x.strip() for x in text.strip().split("\n")]
    if "--" in lines:
        lines = lines[: len(lines) - lines[::-1].index("--") + 3]
    for x in reversed(lines[-12:]):
        x = x.lstrip("-").strip()
        if re.fullmatch(r"[A-Z][a-z]+(?: [A-Z]\.?)?(?: [A-Z][a-zA-Z'-]+){0,2}", x):
            return x
    return None


def predict(family, text):
    if family == "email_signature":
        return signature(text)
    for rule in RULES[family]:
        for m in re.finditer(rule, text, re.M):
            ans = m.group(1).strip()
            if ans:
                return ans
    return None


def main():
    family, src, dst = sys.argv[1:4]
    with open(src, encoding="utf-8") as f, open(dst, "w", encoding="utf-8") as out:
        for line in f:
            r = json.loads(line)
            ans = predict(family, r["text"])
            out.write(json.dumps({"id": r["id"], "answer": ans, "abstained": ans is None}) + "\n")


if __name__ == "__main__":
    main()
