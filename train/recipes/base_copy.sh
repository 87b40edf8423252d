#!/usr/bin/env bash
# Continued pretraining of the base model on a copy-rich mix (issue 13's
# induction probe, issue 14's generative extraction): the base corpus plus
# documents that repeat passages of themselves (prep_copy.py), from the
# 300 M-token checkpoint of base.sh (committed in train/recipes/state/base)
# at a low learning rate. Its output is the bundled models/base (stage 2 of
# the base model; base.sh is stage 1).
#
#   1. corpus   base.sh STOP_AFTER=corpus (the same corpus, same cache)
#   2. copy     prep_copy.py: COPY_CHARS characters of copy-rich documents
#               made from that corpus (no new source)
#   3. train    onecore train pretrain --init-from FROM, --resume whenever a
#               checkpoint exists: rerun after any stop
#   4. eval     eval_base.py on the held-out prose (bits per byte, AUROC)
#   5. install  INSTALL=1 copies the weights, config, tokenizer and
#               generation settings into models/base
#
# Usage: train/recipes/base_copy.sh            (env knobs below)
#   CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/onecore/recipes/base   (shared with base.sh)
#   OUT=$CACHE/run-copy   FROM=models/base   TOKENS=24000000   COPY_CHARS=48000000
#   LR=6e-4 MIN_LR=1e-4 WARMUP=200 BATCH=32 SEQ_LEN=256 EVAL=4000000 CKPT=2000000
#   WORKERS=   ONECORE=path/to/onecore (else built from this checkout)
#   STOP_AFTER=copy   stop after step 2 (base_small.sh uses the same documents)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cache=${CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/onecore/recipes/base}
out=${OUT:-$cache/run-copy}
from=${FROM:-$here/state/base}
log() { echo "[$(date -u +%H:%M:%S)] base_copy: $*" >&2; }
if [[ -z ${ONECORE:-} ]]; then
  ONECORE=$cache/onecore
  (cd "$root" && go build -o "$ONECORE" ./cmd/onecore)
fi
export ONECORE

log "1. corpus (base.sh)"
STOP_AFTER=corpus CACHE=$cache bash "$here/base.sh"
data=$cache/data

log "2. copy-rich documents"
mkdir -p "$cache/copy"
if [[ ! -f $cache/copy/copy.jsonl ]]; then
  /usr/bin/python3 "$here/prep_copy.py" --corpus "$data/corpus" --out "$cache/copy/copy.jsonl.tmp" \
    --chars "${COPY_CHARS:-48000000}"
  mv "$cache/copy/copy.jsonl.tmp" "$cache/copy/copy.jsonl"
fi
[[ ${STOP_AFTER:-} == copy ]] && exit 0

log "3. continued pretraining from $from -> $out"
resume=(); [[ -f $out/train_state/state.json ]] && resume=(--resume)
workers=(); [[ -n ${WORKERS:-} ]] && workers=(--workers "$WORKERS")
"$ONECORE" train pretrain --config "$from/config.json" --init-from "$from" \
  --data "$data/corpus" --data "$cache/copy/copy.jsonl" --tokenizer "$from/tokenizer.json" \
  --out "$out" --cache "$cache/tokcache-copy" --tokens "${TOKENS:-24000000}" \
  --batch "${BATCH:-32}" --seq-len "${SEQ_LEN:-256}" --lr "${LR:-6e-4}" --min-lr "${MIN_LR:-1e-4}" \
  --warmup "${WARMUP:-200}" --eval-every "${EVAL:-4000000}" --ckpt-every "${CKPT:-2000000}" \
  --val-permille 5 --val-tokens 65536 "${workers[@]}" "${resume[@]}"

log "4. held-out prose"
/usr/bin/python3 "$here/eval_base.py" --model "$out" --heldout "$data/heldout" --onecore "$ONECORE"

if [[ -n ${INSTALL:-} ]]; then
  log "5. install into models/base"
  for f in config.json generation.json model.safetensors tokenizer.json; do cp "$out/$f" "$root/models/base/$f"; done
fi
