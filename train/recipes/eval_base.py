#!/usr/bin/python3
"""Issue 13's held-out checks for a base model: bits per byte on English
prose it never saw, and AUROC of that prose against its word-shuffled,
random-character and character-shuffled twins (the files prep_base.py writes to DATA/heldout).

Runs `onecore score` on each file and prints one JSON object:
  bits_per_byte        total -log2 p of every token after <bos>, over the
                       UTF-8 bytes of all documents (acceptance: <= 1.6)
  auroc_shuffled       P(a real document scores fewer bits per byte than a
  auroc_random         shuffled / random one), ties count half (>= 0.99)
  auroc_charshuffled   the same against its characters shuffled (harder)
  docs, tokens, bytes  of the prose file

Usage: eval_base.py --model DIR --heldout DATA/heldout [--onecore BIN] [--work DIR]
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile


def score(onecore, model, path, work):
    out = os.path.join(work, os.path.basename(path))
    if os.path.exists(out):
        os.remove(out)
    subprocess.run([onecore, "score", "--model", model, "--in", path, "--out", out, "--progress", "none",
                    "--max-tokens", "8192"], check=True, stdout=subprocess.DEVNULL)
    texts = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            texts[r["id"]] = len(r["text"].encode())
    rows = {}
    with open(out, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            if r.get("truncated"):
                sys.exit(f"eval_base: {r['id']} in {path} was truncated; raise --max-tokens")
            nats = -r["mean_logprob"] * (r["tokens"] - 1)
            rows[r["id"]] = (nats / math.log(2), texts[r["id"]], r["tokens"])
    return rows


def auroc(real, fake):
    """P(real < fake) over all pairs, by ranks (Mann-Whitney U)."""
    allv = sorted([(v, 0) for v in real] + [(v, 1) for v in fake])
    ranks, i = {}, 0
    rank_sum_real = 0.0
    while i < len(allv):
        j = i
        while j < len(allv) and allv[j][0] == allv[i][0]:
            j += 1
        r = (i + j + 1) / 2  # average rank, 1-based
        rank_sum_real += r * sum(1 for k in range(i, j) if allv[k][1] == 0)
        i = j
    n, m = len(real), len(fake)
    u = rank_sum_real - n * (n + 1) / 2  # pairs where real ranks above fake
    return 1 - u / (n * m)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--heldout", required=True)
    ap.add_argument("--onecore", default="onecore")
    ap.add_argument("--work")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="eval_base-")
    os.makedirs(work, exist_ok=True)
    res = {k: score(a.onecore, a.model, os.path.join(a.heldout, k + ".jsonl"), work)
           for k in ("prose", "shuffled", "random", "charshuffled")}
    prose = res["prose"]
    bits = sum(v[0] for v in prose.values())
    nbytes = sum(v[1] for v in prose.values())
    bpb = {k: {i: v[0] / v[1] for i, v in rows.items()} for k, rows in res.items()}
    out = {
        "model": a.model,
        "bits_per_byte": round(bits / nbytes, 4),
        "auroc_shuffled": round(auroc(list(bpb["prose"].values()), list(bpb["shuffled"].values())), 4),
        "auroc_random": round(auroc(list(bpb["prose"].values()), list(bpb["random"].values())), 4),
        "auroc_charshuffled": round(auroc(list(bpb["prose"].values()), list(bpb["charshuffled"].values())), 4),
        "bits_per_byte_shuffled": round(sum(v[0] for v in res["shuffled"].values()) / sum(v[1] for v in res["shuffled"].values()), 4),
        "bits_per_byte_random": round(sum(v[0] for v in res["random"].values()) / sum(v[1] for v in res["random"].values()), 4),
        "docs": len(prose), "tokens": sum(v[2] for v in prose.values()), "bytes": nbytes,
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
