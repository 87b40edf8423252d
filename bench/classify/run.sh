#!/usr/bin/env bash
# The classification suite (issue 15): every task of bench/classify/prep.py,
# every system side by side in one run, on the same fixed splits —
#   fastText 0.9.2 (Debian `fasttext`): defaults; the text-classification
#     tutorial's setting (-epoch 25 -wordNgrams 2 -lr 1.0); and
#     -autotune-validation on a 10 % slice of the training split (by hash),
#     -autotune-duration AUTOTUNE seconds;
#   onecore: `train classify --finetune` from BASE (a pretrained checkpoint)
#     when BASE is set (it costs a training run per task), and any already
#     trained classifier directories named in MODELS="task=DIR ..." —
#   printing accuracy, macro-F1 and docs/s on one pinned core (prediction
#   only, model loading excluded for fastText; onecore's summary docs/s with
#   --workers 1) as a table, and results.jsonl in WORK.
#
# Usage: bench/classify/run.sh [TASKS]     (default: all five)
#   WORK=/tmp/onecore-classify  CPU=1  AUTOTUNE=60  BASE=  MODELS=  MAX_TOKENS=256
#   TRAIN_CPUS=$CPU (cores for `train classify`: its weights do not depend on
#   --workers, so training on more cores changes only how long it takes)
# Needs: fasttext (apt-get install fasttext), /usr/bin/python3; the datasets
# come from bench/classify/prep.py (run here when missing).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=${WORK:-/tmp/onecore-classify}
cpu=${CPU:-1}
tasks=${1:-spam,sections,fortunes,wordnet,langid}
command -v fasttext >/dev/null || { echo "fasttext not found: apt-get install fasttext" >&2; exit 1; }
mkdir -p "$work"
py=/usr/bin/python3

[[ -s $work/data/langid/test.jsonl ]] || $py "$here/prep.py" --out "$work/data"
onecore=$work/onecore
(cd "$root" && go build -o "$onecore" ./cmd/onecore)

: >"$work/results.jsonl"
record() { # task system accuracy macro_f1 docs_per_s
  printf '{"task":"%s","system":"%s","accuracy":%s,"macro_f1":%s,"docs_per_s":%s}\n' "$@" >>"$work/results.jsonl"
}

for task in ${tasks//,/ }; do
  d=$work/data/$task w=$work/$task
  mkdir -p "$w"
  # fastText input: __label__X text-on-one-line; autotune gets a validation slice
  $py - "$d" "$w" <<'PY'
import hashlib, json, sys
d, w = sys.argv[1:]
def line(r):
    return "__label__" + r["label"].replace(" ", "_") + " " + " ".join(r["text"].split()) + "\n"
rows = [json.loads(l) for l in open(f"{d}/train.jsonl")]
with open(f"{w}/train.txt", "w") as a, open(f"{w}/tune_train.txt", "w") as b, open(f"{w}/tune_valid.txt", "w") as c:
    for r in rows:
        a.write(line(r))
        v = int.from_bytes(hashlib.sha256(r["text"].encode()).digest()[:8], "little") % 10 == 0
        (c if v else b).write(line(r))
with open(f"{w}/test.txt", "w") as t:
    for l in open(f"{d}/test.jsonl"):
        t.write(line(json.loads(l)))
PY
  n_test=$(wc -l <"$w/test.txt")
  for s in "default|" "tutorial|-epoch 25 -wordNgrams 2 -lr 1.0" "autotune|autotune"; do
    name=${s%%|*} flags=${s#*|}
    if [[ $flags == autotune ]]; then
      taskset -c "$cpu" fasttext supervised -input "$w/tune_train.txt" -output "$w/ft-$name" -thread 1 \
        -autotune-validation "$w/tune_valid.txt" -autotune-duration "${AUTOTUNE:-60}" >"$w/ft-$name.log" 2>&1
    else
      # shellcheck disable=SC2086
      taskset -c "$cpu" fasttext supervised -input "$w/train.txt" -output "$w/ft-$name" -thread 1 $flags >"$w/ft-$name.log" 2>&1
    fi
    head -1 "$w/test.txt" >"$w/one.txt"
    t0=$(date +%s.%N); taskset -c "$cpu" fasttext predict "$w/ft-$name.bin" "$w/one.txt" >/dev/null; t1=$(date +%s.%N)
    taskset -c "$cpu" fasttext predict "$w/ft-$name.bin" "$w/test.txt" >"$w/ft-$name.pred"; t2=$(date +%s.%N)
    read -r acc f1 < <($py "$here/score.py" "$w/test.txt" "$w/ft-$name.pred")
    dps=$($py -c "print(round($n_test / max(1e-9, ($t2 - $t1) - ($t1 - $t0)), 1))")
    record "$task" "fasttext-$name" "$acc" "$f1" "$dps"
  done
  model=""
  for m in ${MODELS:-}; do [[ ${m%%=*} == "$task" ]] && model=${m#*=}; done
  if [[ -z $model && -n ${BASE:-} ]]; then
    model=$w/onecore-cls
    train_cpus=${TRAIN_CPUS:-$cpu}
    n_train_cpus=$(taskset -c "$train_cpus" nproc)
    [[ -f $model/model.safetensors ]] || taskset -c "$train_cpus" "$onecore" train classify --from "$BASE" \
      --data "$d/train.jsonl" --label-field label --out "$model" --finetune --max-tokens "${MAX_TOKENS:-256}" \
      --workers "$n_train_cpus" >"$w/onecore-train.log" 2>&1
  fi
  if [[ -n $model ]]; then
    rm -rf "$w/onecore.jsonl"
    "$onecore" classify --model "$model" --in "$d/test.jsonl" --out "$w/onecore.jsonl" --workers 1 --no-pin \
      --max-tokens "${MAX_TOKENS:-256}" --progress none --summary "$w/onecore-summary.json" >/dev/null 2>&1 || [[ $? == 3 ]]
    read -r acc f1 < <($py "$here/score.py" --jsonl "$d/test.jsonl" "$w/onecore.jsonl")
    dps=$($py -c "import json; print(round(json.load(open('$w/onecore-summary.json'))['docs_per_s'], 1))")
    record "$task" "onecore" "$acc" "$f1" "$dps"
  fi
done

$py - "$work/results.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"{'task':10} {'system':20} {'accuracy':>9} {'macro-F1':>9} {'docs/s/core':>12}")
for r in rows:
    print(f"{r['task']:10} {r['system']:20} {100*r['accuracy']:8.2f}% {r['macro_f1']:9.3f} {r['docs_per_s']:12.1f}")
PY
