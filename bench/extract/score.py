#!/usr/bin/python3
"""Scores extraction predictions against the benchmark's gold records.

  exact match  a record is right when the gold is absent and the system
               abstained, or when the answer equals the gold (surrounding
               whitespace ignored); over all records
  token F1     SQuAD-style token overlap (lower-cased, punctuation split),
               averaged over records whose gold is present (an abstention
               scores 0)
  abstention   precision and recall of "absent", and their F1

Usage: bench/extract/score.py GOLD.jsonl PRED.jsonl [--json] [--bootstrap N]
Predictions are JSON Lines with "id", "answer" and "abstained" (onecore
extract's output columns; a baseline's too). Prints one line of metrics.
With --bootstrap N it also prints 95 % intervals of exact match and
abstention F1 from N resamples of the records (seed 1): a test split of a
few dozen absent records moves abstention F1 by several points per error.
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


def load(gold_path, pred_path):
    """(gold, prediction) pairs in gold order; an abstention is None."""
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
    return [(g, pred[k]) for k, g in gold.items()]


def score(gold_path, pred_path):
    return metrics(load(gold_path, pred_path))


def metrics(pairs):
    em = f1s = 0.0
    npres = 0
    tp = fp = fn = 0
    for g, p in pairs:
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
    n = len(pairs)
    prec = tp / (tp + fp) if tp + fp else 0.0
    rec = tp / (tp + fn) if tp + fn else 0.0
    return {"records": n, "exact_match": em / n, "token_f1": f1s / max(1, npres),
            "abstain_precision": prec, "abstain_recall": rec,
            "abstain_f1": 2 * prec * rec / (prec + rec) if prec + rec else 0.0}


def bootstrap(pairs, n, seed=1):
    """95 % percentile intervals of exact match and abstention F1 over n
    resamples (with replacement) of the records."""
    import random
    rng = random.Random(seed)
    em, af = [], []
    for _ in range(n):
        m = metrics([pairs[rng.randrange(len(pairs))] for _ in pairs])
        em.append(m["exact_match"])
        af.append(m["abstain_f1"])
    em.sort()
    af.sort()
    lo, hi = int(0.025 * n), min(n - 1, int(0.975 * n))
    return {"exact_match_95": [em[lo], em[hi]], "abstain_f1_95": [af[lo], af[hi]]}


if __name__ == "__main__":
    pairs = load(sys.argv[1], sys.argv[2])
    m = metrics(pairs)
    if "--bootstrap" in sys.argv:
        m.update(bootstrap(pairs, int(sys.argv[sys.argv.index("--bootstrap") + 1])))
    if "--json" in sys.argv:
        print(json.dumps(m))
    else:
        def fmt(v):
            if isinstance(v, float):
                return f"{v:.3f}"
            if isinstance(v, list):
                return "[" + ", ".join(f"{x:.3f}" for x in v) + "]"
            return str(v)
        print(" ".join(f"{k}={fmt(v)}" for k, v in m.items()))
