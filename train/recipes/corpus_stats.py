#!/usr/bin/python3
"""Per-source corpus statistics for base.sh: reads "source tokens" lines on
stdin (token counts from `onecore tokenize --format count`), joins them with
prep_base.py's manifest.json, writes stats.json and prints a table.

Usage: corpus_stats.py MANIFEST TOKENIZER STATS_JSON < counts
"""
import json
import sys


def main():
    manifest, tok, dst = sys.argv[1:4]
    m = json.load(open(manifest))
    rows = {}
    for line in sys.stdin:
        name, n = line.split()
        s = m["sources"][name]
        rows[name] = {"docs": s["docs"], "bytes": s["bytes"], "tokens": int(n)}
    tot = {k: sum(r[k] for r in rows.values()) for k in ("docs", "bytes", "tokens")}
    tot["bytes_per_token"] = round(tot["bytes"] / max(tot["tokens"], 1), 3)
    with open(dst, "w") as f:
        json.dump({"sources": rows, "total": tot, "tokenizer": tok, "heldout": m["heldout"]}, f, indent=1)
    print(f"{'source':<10} {'docs':>8} {'MB':>8} {'Mtok':>8} {'share':>6}")
    for k, r in rows.items():
        print(f"{k:<10} {r['docs']:>8} {r['bytes'] / 1e6:>8.1f} {r['tokens'] / 1e6:>8.2f} {r['tokens'] / tot['tokens']:>6.1%}")
    print(f"{'total':<10} {tot['docs']:>8} {tot['bytes'] / 1e6:>8.1f} {tot['tokens'] / 1e6:>8.2f}")


if __name__ == "__main__":
    main()
