#!/usr/bin/python3
"""Draws the classification suite's accuracy-vs-throughput curve as an SVG
(no plotting library needed): for every task, onecore read at each
--max-tokens the run measured (run.sh's CURVE; the points are joined and
labelled with their token budget) and fastText's settings (--fasttext;
the tutorial one by default) as hollow markers, accuracy against documents per second on one core (log scale).

Usage: bench/classify/plot.py RESULTS.jsonl OUT.svg [--title TEXT]
  RESULTS.jsonl: run.sh's results (systems onecore, onecore-mtN,
  fasttext-default, fasttext-tutorial, ...); rows without docs_per_s (the
  language-ID detectors' per-language rows) are left out.
"""
import argparse
import json
import math
import re
from html import escape

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"]
W, H = 900, 520
L, R, T, B = 70, 235, 40, 60  # margins: the legend sits on the right


def load(path, default_mt, fasttext):
    tasks = {}
    for line in open(path, encoding="utf-8"):
        r = json.loads(line)
        if not r.get("docs_per_s") or r.get("accuracy") is None:
            continue
        t = tasks.setdefault(r["task"], {"onecore": [], "other": []})
        m = re.fullmatch(r"onecore(?:-mt(\d+))?", r["system"])
        if m:
            t["onecore"].append((float(r["docs_per_s"]), float(r["accuracy"]), int(m.group(1) or default_mt)))
        elif r["system"] in fasttext:
            t["other"].append((float(r["docs_per_s"]), float(r["accuracy"]), r["system"].removeprefix("fasttext-")))
    return tasks


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results")
    ap.add_argument("out")
    ap.add_argument("--title", default="Accuracy vs documents/s on one core")
    ap.add_argument("--fasttext", default="tutorial", help="fastText settings drawn (comma-separated)")
    ap.add_argument("--max-tokens", type=int, default=256, help="the budget of the plain 'onecore' rows")
    a = ap.parse_args()
    tasks = load(a.results, a.max_tokens, {"fasttext-" + x for x in a.fasttext.split(",")})
    pts = [p for t in tasks.values() for p in t["onecore"] + t["other"]]
    if not pts:
        raise SystemExit(f"plot: no rows with accuracy and docs_per_s in {a.results}")
    x0 = 10 ** math.floor(math.log10(min(p[0] for p in pts)))
    x1 = 10 ** math.ceil(math.log10(max(p[0] for p in pts)))
    y0 = max(0.0, math.floor(min(p[1] for p in pts) * 10) / 10)
    y1 = min(1.0, math.ceil(max(p[1] for p in pts) * 20) / 20 + 0.02)
    px = lambda x: L + (math.log10(x) - math.log10(x0)) / (math.log10(x1) - math.log10(x0)) * (W - L - R)
    py = lambda y: T + (y1 - y) / (y1 - y0) * (H - T - B)
    s = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
         'font-family="sans-serif" font-size="12">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{L}" y="22" font-size="15">{escape(a.title)}</text>']
    # grid and axes
    d = x0
    while d <= x1 * 1.0001:
        x = px(d)
        s.append(f'<line x1="{x:.1f}" y1="{T}" x2="{x:.1f}" y2="{H - B}" stroke="#ddd"/>')
        s.append(f'<text x="{x:.1f}" y="{H - B + 16}" text-anchor="middle">{d:,.0f}</text>')
        d *= 10
    y = y0
    while y <= y1 + 1e-9:
        s.append(f'<line x1="{L}" y1="{py(y):.1f}" x2="{W - R}" y2="{py(y):.1f}" stroke="#ddd"/>')
        s.append(f'<text x="{L - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{y * 100:.0f} %</text>')
        y += 0.1
    s.append(f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="none" stroke="#444"/>')
    s.append(f'<text x="{(L + W - R) / 2}" y="{H - 18}" text-anchor="middle">documents / s on one core (log scale)</text>')
    s.append(f'<text transform="translate(18,{(T + H - B) / 2}) rotate(-90)" text-anchor="middle">accuracy on the test split</text>')
    ly = T + 10
    for i, (name, t) in enumerate(sorted(tasks.items())):
        c = COLORS[i % len(COLORS)]
        on = sorted(t["onecore"])
        if len(on) > 1:
            s.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>' % (c, " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y, _ in on)))
        for x, y, mt in on:
            s.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="4" fill="{c}"/>')
            s.append(f'<text x="{px(x) + 5:.1f}" y="{py(y) - 6:.1f}" fill="{c}" font-size="10">{mt}</text>')
        for x, y, setting in t["other"]:
            s.append(f'<rect x="{px(x) - 4:.1f}" y="{py(y) - 4:.1f}" width="8" height="8" fill="white" stroke="{c}" stroke-width="2"/>')
            s.append(f'<text x="{px(x) + 6:.1f}" y="{py(y) + 4:.1f}" fill="{c}" font-size="10">{escape(setting)}</text>')
        s.append(f'<circle cx="{W - R + 18}" cy="{ly}" r="4" fill="{c}"/>')
        s.append(f'<text x="{W - R + 28}" y="{ly + 4}">{escape(name)}</text>')
        ly += 18
    ly += 8
    s.append(f'<circle cx="{W - R + 18}" cy="{ly}" r="4" fill="#444"/><text x="{W - R + 28}" y="{ly + 4}">onecore (label: --max-tokens)</text>')
    ly += 18
    s.append(f'<rect x="{W - R + 14}" y="{ly - 4}" width="8" height="8" fill="white" stroke="#444" stroke-width="2"/>'
             f'<text x="{W - R + 28}" y="{ly + 4}">fastText setting</text>')
    s.append("</svg>")
    with open(a.out, "w", encoding="utf-8") as f:
        f.write("\n".join(s) + "\n")


if __name__ == "__main__":
    main()
