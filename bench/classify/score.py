#!/usr/bin/python3
"""Accuracy and macro-F1 of predictions against gold labels; prints
"ACCURACY MACRO_F1".

  score.py GOLD.txt PRED.txt             fastText files (__label__X ... per line)
  score.py --jsonl GOLD.jsonl PRED.jsonl onecore: gold {"id","label"}, predictions
                                         {"row","label"} (row = 0-based line of GOLD)
Macro-F1 averages F1 over the gold label set (a label never predicted
counts with F1 0).
"""
import json
import sys


def macro_f1(gold, pred):
    labels = sorted(set(gold))
    f1s = []
    for c in labels:
        tp = sum(g == c and p == c for g, p in zip(gold, pred))
        fp = sum(g != c and p == c for g, p in zip(gold, pred))
        fn = sum(g == c and p != c for g, p in zip(gold, pred))
        f1s.append(0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn))
    return sum(f1s) / len(f1s)


def main():
    args = sys.argv[1:]
    if args[0] == "--jsonl":
        gold = [json.loads(l)["label"] for l in open(args[1])]
        pred = [None] * len(gold)
        for l in open(args[2]):
            r = json.loads(l)
            pred[r["row"]] = r["label"]
    else:
        gold = [l.split(" ", 1)[0] for l in open(args[0])]
        pred = [l.strip() for l in open(args[1])]
    if len(pred) != len(gold):
        sys.exit(f"score: {len(pred)} predictions for {len(gold)} gold labels")
    acc = sum(g == p for g, p in zip(gold, pred)) / len(gold)
    print(f"{acc:.6f} {macro_f1(gold, pred):.6f}")


if __name__ == "__main__":
    main()
