#!/usr/bin/env bash
# fastText baseline for the default classifier (issue 8): train `fasttext
# supervised` on the same SpamAssassin train split our model's head is trained
# on, score the held-out split (accuracy, macro-F1) and measure prediction
# throughput in docs/s on one pinned core.
#
# Usage: bench/fasttext/run.sh [WORKDIR]   (default: bench/fasttext/work)
# Needs: Debian `fasttext` (apt-get install fasttext; NOT a test dependency),
# /usr/bin/python3, and the splits from train/recipes/prep_spam.py (run here
# if missing). Results: WORKDIR/results.jsonl, one JSON object per setting.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=${1:-$here/work}
data=$root/train/recipes/data
cpu=${FASTTEXT_CPU:-1}
command -v fasttext >/dev/null || { echo "fasttext not found: apt-get install fasttext" >&2; exit 1; }
mkdir -p "$work"
[[ -s $data/spam_train.jsonl ]] || /usr/bin/python3 "$root/train/recipes/prep_spam.py" --out "$data"
/usr/bin/python3 "$here/to_fasttext.py" "$data/spam_train.jsonl" "$work/train.txt"
/usr/bin/python3 "$here/to_fasttext.py" "$data/spam_heldout.jsonl" "$work/heldout.txt"

# Throughput input: the held-out split repeated 20 times (~17.8K docs), so
# model loading is a small part; it is measured separately and subtracted.
for _ in $(seq 20); do cat "$work/heldout.txt"; done >"$work/speed.txt"
head -1 "$work/heldout.txt" >"$work/one.txt"
n_speed=$(wc -l <"$work/speed.txt")

: >"$work/results.jsonl"
# name | flags. "tutorial" is the fastText text-classification tutorial's
# setting; "default" is fastText's own defaults; "tutorial-dim16" a small model.
settings=(
  "default|"
  "tutorial|-epoch 25 -wordNgrams 2 -lr 1.0"
  "tutorial-dim16|-epoch 25 -wordNgrams 2 -lr 1.0 -dim 16 -bucket 200000"
)
for s in "${settings[@]}"; do
  name=${s%%|*}; flags=${s#*|}
  start=$(date +%s.%N)
  # shellcheck disable=SC2086
  taskset -c "$cpu" fasttext supervised -input "$work/train.txt" -output "$work/$name" -thread 1 -seed 1 $flags -verbose 0
  train_s=$(echo "$(date +%s.%N) - $start" | bc)
  fasttext predict "$work/$name.bin" "$work/heldout.txt" >"$work/$name.pred"
  m=$(/usr/bin/python3 "$here/metrics.py" "$data/spam_heldout.jsonl" "$work/$name.pred" --pred-format fasttext)
  t0=$(date +%s.%N); taskset -c "$cpu" fasttext predict "$work/$name.bin" "$work/one.txt" >/dev/null; t1=$(date +%s.%N)
  taskset -c "$cpu" fasttext predict "$work/$name.bin" "$work/speed.txt" >/dev/null; t2=$(date +%s.%N)
  load_s=$(echo "$t1 - $t0" | bc); total_s=$(echo "$t2 - $t1" | bc)
  dps=$(echo "$n_speed / ($total_s - $load_s)" | bc)
  dps_incl=$(echo "$n_speed / $total_s" | bc)
  size=$(stat -c %s "$work/$name.bin")
  echo "{\"setting\":\"$name\",\"flags\":\"$flags\",\"train_s\":$(printf %.1f $train_s),\"model_bytes\":$size,\"predict_docs\":$n_speed,\"load_s\":$(printf %.3f $load_s),\"predict_s\":$(printf %.3f $total_s),\"docs_per_s_per_core\":$dps,\"docs_per_s_incl_load\":$dps_incl,\"metrics\":$m}" | tee -a "$work/results.jsonl"
done
