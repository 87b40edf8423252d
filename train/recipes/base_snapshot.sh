#!/usr/bin/env bash
# Copies the base-model run's latest checkpoint (weights, tokenizer,
# generation settings, metrics and train_state/ for --resume) into
# train/recipes/state/base/, to be committed: the next session, on a machine
# that starts empty, restores it (base.sh) and continues the run bit for bit
# from that checkpoint.
#
# A checkpoint is several files written one after another, so the copy is
# taken right after the run logs a finished checkpoint (it waits for the next
# one, at most WAIT seconds), and checked: train_state/state.json must name
# the same step before and after the copy.
#
# Usage: train/recipes/base_snapshot.sh LOG   (LOG: the run's log file)
#   OUT=${XDG_CACHE_HOME:-$HOME/.cache}/onecore/recipes/base/run   WAIT=900
#   SNAP=train/recipes/state/base   where the snapshot goes (base_small.sh's
#   stages: OUT=.../run-small SNAP=.../state/base-small-1, run-small2 and -2)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
log=${1:?usage: base_snapshot.sh LOG}
out=${OUT:-${XDG_CACHE_HOME:-$HOME/.cache}/onecore/recipes/base/run}
snap=${SNAP:-$here/state/base}
wait=${WAIT:-900}
step() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["step"])' "$out/train_state/state.json"; }

n0=$(grep -c 'msg=checkpoint' "$log" || true)
for ((t = 0; t < wait; t += 2)); do
  n=$(grep -c 'msg=checkpoint' "$log" || true)
  ((n > n0)) && break
  sleep 2
done
((n > n0)) || { echo "base_snapshot: no new checkpoint in ${wait}s" >&2; exit 1; }
s0=$(step)
mkdir -p "$(dirname "$snap")"
tmp=$(mktemp -d "$(dirname "$snap")/.snapshot-XXXX")
cp -r "$out/config.json" "$out/model.safetensors" "$out/tokenizer.json" "$out/generation.json" \
  "$out/metrics.jsonl" "$out/train_state" "$tmp/"
s1=$(step)
if [[ $s0 != "$s1" ]]; then
  rm -rf "$tmp"
  echo "base_snapshot: the run saved again during the copy (step $s0 -> $s1); rerun" >&2
  exit 1
fi
# metrics beyond the checkpoint are recomputed identically on resume
python3 - "$tmp/metrics.jsonl" "$s0" <<'PY'
import json, sys
path, step = sys.argv[1], int(sys.argv[2])
keep = [l for l in open(path) if l.strip() and json.loads(l).get("step", 0) <= step]
open(path, "w").writelines(keep)
PY
rm -rf "$snap" && mv "$tmp" "$snap"
echo "base_snapshot: step $s0 -> $snap ($(du -sh "$snap" | cut -f1))"
