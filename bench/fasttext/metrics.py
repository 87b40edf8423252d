#!/usr/bin/python3
"""Accuracy and macro-F1 of predicted labels against gold labels.

Usage:
  metrics.py GOLD.jsonl PRED [--pred-format fasttext|jsonl] [--pred-field label]
GOLD.jsonl has id and label. PRED is either fastText `predict` output (one
`__label__X` per line, same order as GOLD) or JSONL with id and a label field
(matched by id; a missing id is an error). Prints one JSON object.
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gold")
    ap.add_argument("pred")
    ap.add_argument("--pred-format", default="jsonl", choices=["jsonl", "fasttext"])
    ap.add_argument("--pred-field", default="label")
    ap.add_argument("--id-field", default="id")
    a = ap.parse_args()
    gold = [json.loads(l) for l in open(a.gold, encoding="utf-8")]
    if a.pred_format == "fasttext":
        preds = [l.split()[0].removeprefix("__label__") for l in open(a.pred)]
        if len(preds) != len(gold):
            sys.exit(f"metrics: {a.pred}: {len(preds)} predictions for {len(gold)} gold rows")
    else:
        by_id = {}
        for l in open(a.pred, encoding="utf-8"):
            r = json.loads(l)
            by_id[str(r[a.id_field])] = r[a.pred_field]
        missing = [g["id"] for g in gold if g["id"] not in by_id]
        if missing:
            sys.exit(f"metrics: {a.pred}: {len(missing)} gold ids missing, e.g. {missing[0]}")
        preds = [by_id[g["id"]] for g in gold]
    labels = sorted({g["label"] for g in gold})
    correct = sum(p == g["label"] for p, g in zip(preds, gold))
    f1s, per = [], {}
    for lab in labels:
        tp = sum(p == lab and g["label"] == lab for p, g in zip(preds, gold))
        fp = sum(p == lab and g["label"] != lab for p, g in zip(preds, gold))
        fn = sum(p != lab and g["label"] == lab for p, g in zip(preds, gold))
        prec = tp / (tp + fp) if tp + fp else 0.0
        rec = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        f1s.append(f1)
        per[lab] = {"precision": round(prec, 4), "recall": round(rec, 4), "f1": round(f1, 4),
                    "support": tp + fn}
    print(json.dumps({"n": len(gold), "accuracy": round(correct / len(gold), 4),
                      "macro_f1": round(sum(f1s) / len(f1s), 4), "errors": len(gold) - correct,
                      "per_label": per}))


if __name__ == "__main__":
    main()
