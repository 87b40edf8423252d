#!/usr/bin/python3
"""Scores extraction predictions against the benchmark's gold records.

  exact match  a record is right when the gold is absent and the system
               abstained, or when the answer equals the gold (surrounding
               whitespace ignored); over all records
  token F1     SQuAD-style token overlap (lower-cased, punctuation split),
               averaged over records whose gold is present (an abstention
               scores 0)
  abstention   precision and recall of "absent", and their F1

Usage: bench/extract/score.py GOLD.jsonl PRED.jsonl [--json]
Predictions are JSON Lines with "id", "answer" and "abstained" (onecore
extract's output columns; a baseline's too). Prints one line of metrics.
"""
import collections
import json
import re
import sys


def tokens(s):
    return re.findall(r"\w+|[^\w\s]", (s or "").lower())


def f1(pred, gold):
    p, g = tokens(pred), tokens(gold)
    common = sum((collections.Counter(p) & collections.Counter(g)).values())
    if common == 0:
        return 0.0
    pr, rc = common / len(p), common / len(g)
    return 2 * pr * rc / (pr + rc)


def score(gold_path, pred_path):
    gold = {}
    for line in open(gold_path, encoding="utf-8"):
        r = json.loads(line)
        gold[r["id"]] = r["answer"]
    pred = {}
    for line in open(pred_path, encoding="utf-8"):
        r = json.loads(line)
        pred[r["id"]] = None if r.get("abstained") else r.get("answer")
    missing = [k for k in gold if k not in pred]
    if missing:
        sys.exit(f"score: {len(missing)} gold records have no prediction (e.g. {missing[0]})")
    em = f1s = 0.0
    npres = 0
    tp = fp = fn = 0
    for k, g in gold.items():
        p = pred[k]
        if g is None:
            em += p is None
            tp += p is None
            fn += p is not None
        else:
            npres += 1
            fp += p is None
            if p is not None:
                em += p.strip() == g.strip()
                f1s += f1(p, g)
    n = len(gold)
    prec = tp / (tp + fp) if tp + fp else 0.0
    rec = tp / (tp + fn) if tp + fn else 0.0
    return {"records": n, "exact_match": em / n, "token_f1": f1s / max(1, npres),
            "abstain_precision": prec, "abstain_recall": rec,
            "abstain_f1": 2 * prec * rec / (prec + rec) if prec + rec else 0.0}


if __name__ == "__main__":
    m = score(sys.argv[1], sys.argv[2])
    if "--json" in sys.argv:
        print(json.dumps(m))
    else:
        print(" ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in m.items()))
