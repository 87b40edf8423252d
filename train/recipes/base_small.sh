#!/usr/bin/env bash
# The narrow base model, models/base-small (issue 14's documents/s per core):
# the config of train/recipes/small.json (d_model 128, 4 layers
# lin/swa/lin/swa, 0.66 M body parameters, about a fifth of dense-3m's body
# FLOPs per token) pretrained from scratch on base.sh's corpus plus
# base_copy.sh's copy-rich documents (the mix the bundled base saw in its two
# stages, mixed from the first step), in two stages of 100 M tokens each:
#
#   1. corpus   base.sh STOP_AFTER=corpus (the same corpus, same cache)
#   2. copy     prep_copy.py: COPY_CHARS characters of copy-rich documents
#               (shared with base_copy.sh)
#   3. stage 1  onecore train pretrain --config small.json from scratch,
#               lr 3e-3 -> 3e-4 (cosine), warmup 1000       -> $CACHE/run-small
#   4. stage 2  the same data again from stage 1's weights (--init-from, a
#               new schedule): lr 1.5e-3 -> 1.5e-4, warmup 500 -> $CACHE/run-small2
#               (stage 1 ended still improving: val_flat 3.63, induction
#               probe 0.29; stage 2 took them to 3.37 and 0.49)
#   5. eval     eval_base.py on the held-out prose (bits per byte, AUROC)
#   6. install  INSTALL=1 copies the weights, config, tokenizer and
#               generation settings into models/base-small
#
# Each stage resumes (--resume) whenever its checkpoint exists, so rerun the
# script after any stop, kill -9 included; a finished stage is skipped. A
# run that must continue on another machine: base_snapshot.sh with
# OUT=$CACHE/run-small SNAP=train/recipes/state/base-small-1 (stage 2:
# run-small2, base-small-2) copies the stage's last checkpoint (and
# train_state/) to be committed, and a machine that starts empty restores
# it from there.
#
# The same recipe builds models/base-tiny with NAME=tiny (base_tiny.sh).
#
# Usage: train/recipes/base_small.sh            (env knobs below)
#   CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/onecore/recipes/base   (shared with base.sh)
#   NAME=small   the model's name: runs in $CACHE/run-$NAME and run-${NAME}2,
#                snapshots train/recipes/state/base-$NAME-N, installs into
#                models/base-$NAME (base_tiny.sh sets NAME=tiny)
#   CONFIG=train/recipes/$NAME.json   TOKENS=100000000 (per stage)
#   COPY_CHARS=48000000   BATCH=32 SEQ_LEN=256   EVAL=10000000 CKPT=4000000
#   WORKERS=   ONECORE=path/to/onecore (else built from this checkout)
# Measured (2026-12-06, 2-core AMD EPYC Zen 5, AVX-512 BF16): ~60K tokens/s,
# 28 min per stage.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cache=${CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/onecore/recipes/base}
name=${NAME:-small}
config=${CONFIG:-$here/$name.json}
tokens=${TOKENS:-100000000}
log() { echo "[$(date -u +%H:%M:%S)] base_$name: $*" >&2; }
if [[ -z ${ONECORE:-} ]]; then
  ONECORE=$cache/onecore
  (cd "$root" && go build -o "$ONECORE" ./cmd/onecore)
fi
export ONECORE
done_stage() { [[ -f $1/.done ]]; }
# stage N OUT LR MIN_LR WARMUP [--init-from DIR]
stage() {
  local n=$1 out=$2 lr=$3 min_lr=$4 warmup=$5
  shift 5
  local snap=$here/state/base-$name-$n
  if done_stage "$out"; then
    log "stage $n: done ($out)"
    return
  fi
  if [[ ! -f $out/train_state/state.json && -f $snap/train_state/state.json ]]; then
    log "stage $n: restoring the run from the committed snapshot $snap"
    mkdir -p "$out" && cp -r "$snap/." "$out/"
  fi
  local resume=() workers=()
  [[ -f $out/train_state/state.json ]] && resume=(--resume)
  [[ -n ${WORKERS:-} ]] && workers=(--workers "$WORKERS")
  log "stage $n: $config -> $out"
  "$ONECORE" train pretrain --config "$config" \
    --data "$data/corpus" --data "$cache/copy/copy.jsonl" --tokenizer "$root/models/base/tokenizer.json" \
    --out "$out" --cache "$cache/tokcache-copy" --tokens "$tokens" \
    --batch "${BATCH:-32}" --seq-len "${SEQ_LEN:-256}" --lr "$lr" --min-lr "$min_lr" \
    --warmup "$warmup" --eval-every "${EVAL:-10000000}" --ckpt-every "${CKPT:-4000000}" \
    --val-permille 5 --val-tokens 65536 "$@" "${workers[@]}" "${resume[@]}"
  # an interrupted run exits non-zero (set -e stops here): only a run that
  # reached its token count is marked done
  touch "$out/.done"
}

log "1-2. corpus and copy-rich documents (base_copy.sh)"
STOP_AFTER=copy CACHE=$cache COPY_CHARS=${COPY_CHARS:-48000000} bash "$here/base_copy.sh"
data=$cache/data
stage 1 "$cache/run-$name" 3e-3 3e-4 1000
stage 2 "$cache/run-${name}2" 1.5e-3 1.5e-4 500 --init-from "$cache/run-$name"
out=$cache/run-${name}2

log "5. held-out prose"
/usr/bin/python3 "$here/eval_base.py" --model "$out" --heldout "$data/heldout" --onecore "$ONECORE"

if [[ ${INSTALL:-} == 1 ]]; then
  log "6. install into models/base-$name"
  mkdir -p "$root/models/base-$name"
  cp "$out/config.json" "$out/model.safetensors" "$out/tokenizer.json" "$out/generation.json" \
    "$root/models/base-$name/"
fi
