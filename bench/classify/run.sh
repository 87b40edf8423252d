#!/usr/bin/env bash
# The classification suite (issue 15): every task of bench/classify/prep.py,
# every system side by side in one run, on the same fixed splits —
#   fastText 0.9.2 (Debian `fasttext`): defaults; the text-classification
#     tutorial's setting (-epoch 25 -wordNgrams 2 -lr 1.0); and
#     -autotune-validation on a 10 % slice of the training split (by hash),
#     -autotune-duration AUTOTUNE seconds (0: skipped), killed past
#     AUTOTUNE_LIMIT seconds (default 3 × AUTOTUNE + 600);
#   onecore: `train classify` (defaults: fine-tuned, epochs scaled to the data;
#     TRAIN_ARGS adds flags, e.g. "--epochs 1") from BASE (a pretrained checkpoint)
#     when BASE is set (it costs a training run per task), and any already
#     trained classifier directories named in MODELS="task=DIR ..."; for
#     langid also CLD2 (Debian libcld2) and CLD3 (npm cld3-asm), see
#     langid_detectors.py —
#   printing accuracy, macro-F1 and docs/s on one pinned core (prediction
#   only, model loading excluded for fastText; onecore's summary docs/s with
#   --workers 1) as a table, and results.jsonl in WORK.
#
# Usage: bench/classify/run.sh [TASKS]     (default: all five; also: bible)
#   WORK=/tmp/onecore-classify  CPU=1  AUTOTUNE=60  BASE=  MODELS=  MAX_TOKENS=256
#   CURVE="32 64 128" (each onecore model also read at these --max-tokens:
#   rows onecore-mtN, the accuracy-vs-throughput curve)
#   PREP_ARGS="--root R --npm N" (for prep.py, run for tasks whose data is missing)
#   ONECORE= (a built binary; default: built from this checkout into WORK)
#   TRAIN_CPUS=$CPU (cores for `train classify`: its weights do not depend on
#   --workers, so training on more cores changes only how long it takes)
# Needs: fasttext (apt-get install fasttext), /usr/bin/python3; for langid also
# g++ with libcld2-dev (apt) and node/npm (cld3-asm is installed into WORK); the datasets
# come from bench/classify/prep.py (run here when missing).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=${WORK:-/tmp/onecore-classify}
cpu=${CPU:-1}
tasks=${1:-spam,sections,fortunes,wordnet,langid}
command -v fasttext >/dev/null || { echo "fasttext not found: apt-get install fasttext" >&2; exit 1; }
if [[ ,$tasks, == *,langid,* ]]; then
  [[ -f /usr/include/cld2/public/compact_lang_det.h ]] || { echo "CLD2 not found: apt-get install libcld2-dev" >&2; exit 1; }
  command -v npm >/dev/null || { echo "npm not found (cld3-asm): apt-get install npm" >&2; exit 1; }
fi
mkdir -p "$work"
py=/usr/bin/python3

missing=()
for task in ${tasks//,/ }; do [[ -s $work/data/$task/test.jsonl ]] || missing+=("$task"); done
if ((${#missing[@]})); then
  missing_list=$(IFS=,; echo "${missing[*]}")
  # shellcheck disable=SC2086
  $py "$here/prep.py" --out "$work/data" --tasks "$missing_list" ${PREP_ARGS:-}
fi
onecore=${ONECORE:-$work/onecore}
[[ -n ${ONECORE:-} ]] || (cd "$root" && go build -o "$onecore" ./cmd/onecore)

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
# fastText's SGD reads its input in file order and does not shuffle; four
# of the five tasks come grouped by label (spam after ham, one fortunes file
# or WordNet lexicographer file or language after another), and a
# label-sorted file leaves fastText predicting the last labels it saw (13 %
# on wordnet, 2 % on langid with defaults). So: a fixed shuffle, by a hash
# of the text, as any fastText user would do with `shuf`.
rows.sort(key=lambda r: hashlib.sha256(("order:" + r["text"]).encode()).digest())
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
      [[ ${AUTOTUNE:-60} == 0 ]] && continue
      # fastText 0.9.2's autotune can run far past its -autotune-duration
      # with -thread 1 (seen: 50 min for a 60 s budget on sections, 30 min
      # for 2 s on 160 documents), so it gets a hard limit and, past it, no
      # row (and a line saying so) rather than a stuck suite
      limit=${AUTOTUNE_LIMIT:-$((3 * ${AUTOTUNE:-60} + 600))}
      if ! timeout -s KILL "$limit" taskset -c "$cpu" fasttext supervised \
        -input "$w/tune_train.txt" -output "$w/ft-$name" -thread 1 \
        -autotune-validation "$w/tune_valid.txt" -autotune-duration "${AUTOTUNE:-60}" >"$w/ft-$name.log" 2>&1; then
        echo "$task: fasttext autotune did not finish within $limit s; no autotune row" >&2
        continue
      fi
    else
      # shellcheck disable=SC2086
      taskset -c "$cpu" fasttext supervised -input "$w/train.txt" -output "$w/ft-$name" -thread 1 $flags >"$w/ft-$name.log" 2>&1
    fi
    taskset -c "$cpu" fasttext predict "$w/ft-$name.bin" "$w/test.txt" >"$w/ft-$name.pred"
    read -r acc f1 < <($py "$here/score.py" "$w/test.txt" "$w/ft-$name.pred")
    # docs/s: the test split repeated to >= 200,000 lines, less the time of
    # a one-line run (loading the model), so start-up does not dominate
    head -1 "$w/test.txt" >"$w/one.txt"
    reps=$(((200000 + n_test - 1) / n_test))
    for ((i = 0; i < reps; i++)); do cat "$w/test.txt"; done >"$w/timing.txt"
    t0=$(date +%s.%N); taskset -c "$cpu" fasttext predict "$w/ft-$name.bin" "$w/one.txt" >/dev/null; t1=$(date +%s.%N)
    taskset -c "$cpu" fasttext predict "$w/ft-$name.bin" "$w/timing.txt" >/dev/null; t2=$(date +%s.%N)
    dps=$($py -c "print(round($((reps * n_test)) / max(1e-9, ($t2 - $t1) - ($t1 - $t0)), 1))")
    record "$task" "fasttext-$name" "$acc" "$f1" "$dps"
  done
  model=""
  for m in ${MODELS:-}; do [[ ${m%%=*} == "$task" ]] && model=${m#*=}; done
  if [[ -z $model && -n ${BASE:-} ]]; then
    model=$w/onecore-cls
    train_cpus=${TRAIN_CPUS:-$cpu}
    n_train_cpus=$(taskset -c "$train_cpus" nproc)
    [[ -f $model/model.safetensors ]] || taskset -c "$train_cpus" "$onecore" train classify --from "$BASE" \
      --data "$d/train.jsonl" --label-field label --out "$model" --max-tokens "${MAX_TOKENS:-256}" \
      --workers "$n_train_cpus" ${TRAIN_ARGS:-} >"$w/onecore-train.log" 2>&1
  fi
  if [[ -n $model ]]; then
    # the model at its training --max-tokens, then (CURVE) the same model
    # reading fewer or more tokens: the accuracy-vs-throughput curve
    for mt in "${MAX_TOKENS:-256}" ${CURVE:-}; do
      name=onecore suffix=""
      if [[ $mt != "${MAX_TOKENS:-256}" ]]; then name=onecore-mt$mt suffix=-mt$mt; fi
      rm -rf "$w/onecore$suffix.jsonl"
      taskset -c "$cpu" "$onecore" classify --model "$model" --in "$d/test.jsonl" --out "$w/onecore$suffix.jsonl" --workers 1 --no-pin \
        --max-tokens "$mt" --progress none --summary "$w/onecore$suffix-summary.json" >/dev/null 2>&1 || [[ $? == 3 ]]
      read -r acc f1 < <($py "$here/score.py" --jsonl "$d/test.jsonl" "$w/onecore$suffix.jsonl")
      dps=$($py -c "import json; print(round(json.load(open('$w/onecore$suffix-summary.json'))['docs_per_s'], 1))")
      record "$task" "$name" "$acc" "$f1" "$dps"
    done
  fi
  if [[ $task == langid ]]; then
    # the off-the-shelf detectors, and every system on the languages each knows
    onecore_pred=(); [[ -n $model ]] && onecore_pred=(--onecore "$w/onecore.jsonl")
    (cd "$here" && $py langid_detectors.py "$d" "$w/detectors" "$cpu" \
      "fasttext-default=$w/ft-default.pred" "fasttext-tutorial=$w/ft-tutorial.pred" \
      $([[ -s $w/ft-autotune.pred ]] && echo "fasttext-autotune=$w/ft-autotune.pred") "${onecore_pred[@]}") >>"$work/results.jsonl" 2>"$w/known.txt"
  fi
done

$py - "$work/results.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"{'task':10} {'system':20} {'accuracy':>9} {'macro-F1':>9} {'docs/s/core':>12}")
for r in rows:
    print(f"{r['task']:10} {r['system']:20} {100*r['accuracy']:8.2f}% {r['macro_f1']:9.3f} {r['docs_per_s']:12.1f}")
PY
if [[ -s $work/langid/known.txt ]]; then
  echo; echo "langid, test records of the languages each detector knows (accuracy):"; cat "$work/langid/known.txt"
fi
