#!/usr/bin/python3
"""Off-the-shelf language detectors on the suite's langid task (udhr, ISO
639-3 gold labels): CLD2 (Debian libcld2, cld2_detect.cc) and CLD3 (npm
cld3-asm, cld3_detect.js), scored against the same test split as fastText
and onecore, and compared with them on the languages each detector knows.

A detector answers in its own codes (ISO 639-1 where one exists, else 639-3
or its own), so a prediction counts as right when it names the gold
language: the same 639-3 code, its 639-1 code (Debian iso-codes), or the
639-1 code of its macrolanguage for the individual languages udhr uses
(MACRO below: cmn → zh, swh → sw, pes → fa, …; CLD2 and CLD3 only know the
macrolanguage). A language counts as one the detector knows when it names
it right at least once on train + test; the "known" rows restrict every
system to the test records of those languages.

Usage: langid_detectors.py DATA WORK CPU FT_PREDS... --onecore PRED.jsonl
  DATA       bench/classify data dir of the task (train.jsonl, test.jsonl)
  WORK       where cld2_detect is built and outputs are written
  CPU        the core detectors are pinned to (docs/s per core)
  FT_PREDS   fastText prediction files (NAME=PATH, __label__X per line)
  env NODE_MODULES: a node_modules folder holding cld3-asm (else it is
  installed into WORK)
Appends {"task":"langid","system":"cld2"|"cld3",...} rows to WORK/../results.jsonl
style output on stdout (one JSON object per line), then a "known languages"
table on stderr.
"""
import json
import os
import subprocess
import sys
import time

from score import macro_f1

HERE = os.path.dirname(os.path.abspath(__file__))

# Individual languages in udhr whose macrolanguage has the 639-1 code the
# detectors answer with (ISO 639-3 macrolanguage mappings, by hand).
MACRO = {
    "arb": "ar", "azb": "az", "azj": "az", "cmn": "zh", "gan": "zh", "hak": "zh", "hsn": "zh",
    "nan": "zh", "wuu": "zh", "yue": "zh", "ekk": "et", "gaz": "om", "gug": "gn", "ike": "iu",
    "khk": "mn", "knc": "kr", "lvs": "lv", "npi": "ne", "ojb": "oj", "pbu": "ps", "pes": "fa",
    "prs": "fa", "plt": "mg", "swh": "sw", "uzn": "uz", "ydd": "yi", "zlm": "ms", "als": "sq",
    "fuf": "ff", "fuv": "ff", "kng": "kg", "quy": "qu", "quz": "qu", "qug": "qu", "quh": "qu",
    "qul": "qu", "qva": "qu", "qvc": "qu", "qvh": "qu", "qvm": "qu", "qvn": "qu", "qwh": "qu",
    "qxn": "qu", "qxu": "qu", "hea": "hmn", "hms": "hmn", "hnj": "hmn", "tzh": "tzh",
}
# Old or detector-specific codes for the same language.
ALIAS = {"iw": "he", "in": "id", "ji": "yi", "jw": "jv", "zh-Latn": "zh", "zh-Hant": "zh", "zh-TW": "zh",
         "fil": "tl", "bo": "bo"}


def names(gold, iso):
    """The codes a detector may answer for the 639-3 code gold."""
    out = {gold}
    a2 = iso.get(gold)
    if a2:
        out.add(a2)
    if gold in MACRO:
        out.add(MACRO[gold])
    if "tgl" == gold:
        out.add("tl")
    return out


def one_line(text):
    return " ".join(text.split())


def run_detector(cmd, texts, cpu, env=None):
    """Detector codes for texts, and docs/s on one pinned core (start-up
    subtracted: the time for one line is taken off the time for all)."""
    data = "".join(one_line(t) + "\n" for t in texts).encode()
    t0 = time.time()
    subprocess.run(["taskset", "-c", str(cpu)] + cmd, input=(one_line(texts[0]) + "\n").encode(),
                   stdout=subprocess.DEVNULL, check=True, env=env)
    t1 = time.time()
    out = subprocess.run(["taskset", "-c", str(cpu)] + cmd, input=data, stdout=subprocess.PIPE, check=True,
                         env=env).stdout.decode().split("\n")
    t2 = time.time()
    codes = [ALIAS.get(c.strip(), c.strip()) for c in out[:len(texts)]]
    if len(codes) != len(texts):
        sys.exit(f"langid_detectors: {cmd[0]} answered {len(codes)} lines for {len(texts)}")
    return codes, len(texts) / max(1e-9, (t2 - t1) - (t1 - t0))


def main():
    args = sys.argv[1:]
    onecore = None
    if "--onecore" in args:
        i = args.index("--onecore")
        onecore = args[i + 1]
        del args[i:i + 2]
    data, work, cpu = args[:3]
    ft = dict(a.split("=", 1) for a in args[3:])
    iso = {r["alpha_3"]: r.get("alpha_2") for r in
           json.load(open("/usr/share/iso-codes/json/iso_639-3.json"))["639-3"]}
    train = [json.loads(l) for l in open(f"{data}/train.jsonl")]
    test = [json.loads(l) for l in open(f"{data}/test.jsonl")]
    gold = [r["label"] for r in test]

    os.makedirs(work, exist_ok=True)
    cld2 = os.path.join(work, "cld2_detect")
    if not os.path.exists(cld2):
        subprocess.run(["g++", "-O2", "-o", cld2, f"{HERE}/cld2_detect.cc", "-Wl,--no-as-needed",
                        "-lcld2_full", "-lcld2"], check=True)
    # cld3-asm from NODE_MODULES (the test deps' folder) when it has it, else
    # installed into WORK
    modules = os.environ.get("NODE_MODULES", "")
    if not os.path.isdir(os.path.join(modules, "cld3-asm")):
        node_dir = os.path.join(work, "node")
        modules = os.path.join(node_dir, "node_modules")
        if not os.path.isdir(os.path.join(modules, "cld3-asm")):
            os.makedirs(node_dir, exist_ok=True)
            subprocess.run(["npm", "install", "--prefix", node_dir, "--no-audit", "--no-fund", "--loglevel=error",
                            "cld3-asm@4.0.0"], check=True, stdout=subprocess.DEVNULL)
    env = dict(os.environ, NODE_PATH=modules)
    detectors = {"cld2": ([cld2], None), "cld3": (["node", f"{HERE}/cld3_detect.js"], env)}

    systems = {}  # name -> test predictions in gold's terms (right or not)
    for name, path in ft.items():
        systems[name] = [l.strip().removeprefix("__label__") for l in open(path)]
    if onecore:
        pred = [None] * len(test)
        for l in open(onecore):
            r = json.loads(l)
            pred[r["row"]] = r["label"]
        systems["onecore"] = pred
    known = {}
    for name, (cmd, e) in detectors.items():
        codes, dps = run_detector(cmd, [r["text"] for r in test], cpu, e)
        right = [c in names(g, iso) for c, g in zip(codes, gold)]
        # macro-F1 in gold's terms: a right answer is the gold label itself
        as_gold = [g if ok else "≠" + c for ok, c, g in zip(right, codes, gold)]
        print(json.dumps({"task": "langid", "system": name, "accuracy": round(sum(right) / len(gold), 6),
                          "macro_f1": round(macro_f1(gold, as_gold), 6), "docs_per_s": round(dps, 1)}))
        tr_codes, _ = run_detector(cmd, [r["text"] for r in train], cpu, e)
        known[name] = {g for c, g in zip(tr_codes + codes, [r["label"] for r in train] + gold)
                       if c in names(g, iso)}
        systems[name] = as_gold
    print(f"{'languages':28} {'test docs':>9} " + " ".join(f"{s:>18}" for s in systems), file=sys.stderr)
    for name, langs in known.items():
        idx = [i for i, g in enumerate(gold) if g in langs]
        accs = [sum(systems[s][i] == gold[i] for i in idx) / max(1, len(idx)) for s in systems]
        print(f"{name + ' knows (' + str(len(langs)) + ')':28} {len(idx):9} " +
              " ".join(f"{100 * a:17.2f}%" for a in accs), file=sys.stderr)


if __name__ == "__main__":
    main()
