#!/usr/bin/env bash
# Side-by-side throughput on one pinned core, same input, one run: fastText
# `predict` vs `onecore classify` (and `onecore extract --task score`) over the
# SpamAssassin held-out split. Prints one JSON line per measurement.
#
# Usage: bench/fasttext/compare.sh [MODEL_DIR]   (default: the bundled model)
# Needs: bench/fasttext/run.sh run first (fastText models in bench/fasttext/work).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$here/work
cpu=${CPU:-1}
model=(); [[ -n ${1:-} ]] && model=(--model "$1")
held=$root/train/recipes/data/spam_heldout.jsonl
bin=$work/onecore
(cd "$root" && go build -o "$bin" ./cmd/onecore)
n=$(wc -l <"$held")
now() { date +%s.%N; }

for name in default tutorial-dim16; do
  [[ -f $work/$name.bin ]] || { echo "run bench/fasttext/run.sh first" >&2; exit 1; }
  t0=$(now); taskset -c "$cpu" fasttext predict "$work/$name.bin" "$work/one.txt" >/dev/null; t1=$(now)
  taskset -c "$cpu" fasttext predict "$work/$name.bin" "$work/speed.txt" >/dev/null; t2=$(now)
  m=$(wc -l <"$work/speed.txt")
  echo "{\"system\":\"fasttext-$name\",\"docs\":$m,\"docs_per_s\":$(echo "$m / (($t2 - $t1) - ($t1 - $t0))" | bc)}"
done
# TASKS: task:max-tokens pairs (score reads out the whole vocabulary per token: slow).
for tm in ${TASKS:-classify:1024 classify:256 classify:64 score:1024}; do
  task=${tm%%:*}; mt=${tm#*:}
  out=$work/onecore-$task-$mt.jsonl
  rm -rf "$out" "$out".onecore-* "$work/$task-$mt-summary.json"
  taskset -c "$cpu" "$bin" extract --task "$task" "${model[@]}" --in "$held" --out "$out" --workers 1 \
    --max-tokens "$mt" --progress none --summary "$work/$task-$mt-summary.json" >/dev/null 2>&1
  /usr/bin/python3 - "$work/$task-$mt-summary.json" "$task-$mt" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print(json.dumps({"system": "onecore-" + sys.argv[2], "docs": s["rows_out"], "tokens": s["tokens"],
                  "docs_per_s": round(s["docs_per_s"], 1), "tok_per_s": round(s["tok_per_s"]),
                  "engine_busy_s": round(s["busy_s"]["engine"], 2), "wall_s": round(s["wall_s"], 2)}))
PY
  if [[ $task == classify ]]; then
    /usr/bin/python3 "$here/metrics.py" "$held" "$out" | sed "s/^/{\"system\":\"onecore-$task-$mt-quality\",\"metrics\":/; s/\$/}/"
  fi
done
