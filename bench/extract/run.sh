#!/usr/bin/env bash
# The extraction benchmark (issue 14), side by side per family: the span
# head (`onecore train extract` from a base checkpoint, then `onecore
# extract` on the held-out split, one pinned core) and the regex baseline
# (baseline.py), each scored by score.py: exact match, token F1, abstention
# precision/recall, documents/s per core, training wall time.
#
# Usage: bench/extract/run.sh DATA OUT
#   DATA      bench/extract/prep.py's output (FAMILY.train.jsonl, FAMILY.test.jsonl)
#   OUT       runs, predictions and results.tsv
# Env:
#   ONECORE=path       the binary (default: built from this checkout into OUT)
#   BASE=base          checkpoint to start from (a directory or a bundled name)
#   FAMILIES="a b"     default: every family in DATA
#   TRAIN_FLAGS=""     extra flags for train extract (e.g. "--epochs 3")
#   WORKERS=           --workers for training (default: all usable cores)
#   CORE=0             the core extraction is pinned to (docs/s per core)
#   INT8=1             also run the span head with --int8 (int8 weights):
#                      row span_head_int8
#   SFT=1              also generative SFT (item 2): `train sft` from BASE on
#                      the same training records as prompt/answer pairs (the
#                      default extract template; answer " none" when absent),
#                      then `extract` decoding greedily (--abstain none)
#   SFT_FLAGS=""       extra flags for train sft (default: --epochs 3)
#   SFT_EXTRACTIVE=1   also decode the SFT model with --extractive (the answer
#                      kept a substring of the document or "none"): row
#                      generative_sft_extractive
#   SFT_WINDOW=192     also decode the SFT model with --extractive --window N
#                      (long documents read as half-overlapping windows):
#                      row generative_sft_window
#   SFT_BASE=BASE      checkpoint the SFT starts from (e.g. the stage-1
#                      copy/abstain model of sft_stage1.py, trained from BASE)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
data=${1:?usage: run.sh DATA OUT}
out=${2:?usage: run.sh DATA OUT}
mkdir -p "$out"
if [[ -z ${ONECORE:-} ]]; then
  ONECORE=$out/onecore
  (cd "$here/../.." && go build -o "$ONECORE" ./cmd/onecore)
fi
base=${BASE:-base}
core=${CORE:-0}
families=${FAMILIES:-$(cd "$data" && ls *.test.jsonl | sed 's/\.test\.jsonl$//')}
workers=(); [[ -n ${WORKERS:-} ]] && workers=(--workers "$WORKERS")
res=$out/results.tsv
printf 'family\tsystem\trecords\texact_match\ttoken_f1\tabstain_precision\tabstain_recall\tabstain_f1\tdocs_per_s_core\ttrain_s\n' >"$res"
row() { # family system metrics-json docs/s train_s
  python3 -c 'import json,sys; m=json.loads(sys.argv[3]); print("\t".join([sys.argv[1], sys.argv[2], str(m["records"])] + ["%.3f" % m[k] for k in ("exact_match","token_f1","abstain_precision","abstain_recall","abstain_f1")] + [sys.argv[4], sys.argv[5]]))' "$@" >>"$res"
}
docs_per_s() { # an extract --summary file's documents/s
  python3 -c 'import json,sys; print("%.0f" % json.load(open(sys.argv[1]))["docs_per_s"])' "$1"
}
# sft_decode SYSTEM TAG [FLAGS...]: decode the family's SFT model on the test
# split (pinned to one core) with the extract FLAGS, into TAG-pred.jsonl,
# and add its scored row
sft_decode() {
  local system=$1 tag=$2
  shift 2
  rm -rf "$d/$tag-pred.jsonl"
  taskset -c "$core" "$ONECORE" extract --task extract --model "$d/sft" --in "$data/$fam.test.jsonl" \
    --question-field question --abstain none --max-new-tokens 48 --max-tokens 1024 "$@" --out "$d/$tag-pred.jsonl" \
    --workers 1 --progress none --summary "$d/$tag-extract.json" >/dev/null 2>"$d/$tag-extract.log"
  row "$fam" "$system" "$(python3 "$here/score.py" "$data/$fam.test.jsonl" "$d/$tag-pred.jsonl" --json)" \
    "$(docs_per_s "$d/$tag-extract.json")" "$sft_s"
}
# span_decode SYSTEM SUFFIX [FLAGS...]: answer the family's test split with
# its span head (pinned to one core) with the extract FLAGS, into
# pred$SUFFIX.jsonl, and add its scored row
span_decode() {
  local system=$1 sfx=$2
  shift 2
  rm -rf "$d/pred$sfx.jsonl"
  taskset -c "$core" "$ONECORE" extract --task extract --model "$d/model" --in "$data/$fam.test.jsonl" "$@" \
    --question-field question --out "$d/pred$sfx.jsonl" --workers 1 --progress none --summary "$d/extract$sfx.json" >/dev/null 2>"$d/extract$sfx.log"
  row "$fam" "$system" "$(python3 "$here/score.py" "$data/$fam.test.jsonl" "$d/pred$sfx.jsonl" --json)" \
    "$(docs_per_s "$d/extract$sfx.json")" "$train_s"
}
for fam in $families; do
  d=$out/$fam
  mkdir -p "$d"
  echo "== $fam" >&2
  t0=$(date +%s)
  resume=(); [[ -f $d/model/train_state/state.json ]] && resume=(--resume)
  if [[ ! -f $d/model/model.safetensors || -f $d/model/train_state/state.json ]]; then
    # train on the gold's position, not the answer string's first
    # occurrence: prep.py records where the gold is (answer_start/end, in
    # characters), and a string answer would train the first occurrence
    # (the quoted "Brian wrote:" instead of the signature "Brian")
    python3 - "$data/$fam.train.jsonl" >"$d/train.jsonl" <<'PY'
import json, sys
for n, line in enumerate(open(sys.argv[1], encoding="utf-8"), 1):
    r = json.loads(line)
    if r.get("answer") is not None and r.get("answer_start") is not None:
        s, e = r["answer_start"], r["answer_end"]
        if r["text"][s:e] != r["answer"]:
            sys.exit(f"{sys.argv[1]}:{n}: answer_start/end {s},{e} do not hold the answer {r['answer']!r}")
        r["answer"] = [s, e]
    print(json.dumps(r, ensure_ascii=False))
PY
    # shellcheck disable=SC2086
    "$ONECORE" train extract --from "$base" --data "$d/train.jsonl" --out "$d/model" \
      "${workers[@]}" "${resume[@]}" ${TRAIN_FLAGS:-} 2>&1 | tee "$d/train.log" | grep -E 'eval|sample|example' >&2 || true
  fi
  train_s=$(( $(date +%s) - t0 ))
  span_decode span_head ""
  [[ -n ${INT8:-} ]] && span_decode span_head_int8 -int8 --int8
  t0=$(date +%s.%N)
  taskset -c "$core" python3 "$here/baseline.py" "$fam" "$data/$fam.test.jsonl" "$d/baseline.jsonl"
  n=$(wc -l <"$data/$fam.test.jsonl")
  bdps=$(python3 -c "import sys; print('%.0f' % ($n / ($(date +%s.%N) - $t0)))")
  row "$fam" regex "$(python3 "$here/score.py" "$data/$fam.test.jsonl" "$d/baseline.jsonl" --json)" "$bdps" 0
  sft_pred=""
  if [[ -n ${SFT:-} ]]; then
    # generative extraction: the same records as prompt/answer pairs in the
    # pipeline's default extract template, so `extract` prompts exactly as
    # the model was trained
    python3 - "$data/$fam.train.jsonl" >"$d/sft.train.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1], encoding="utf-8"):
    r = json.loads(line)
    prompt = r["text"] + "\nQuestion: " + r["question"] + "\nAnswer:"
    print(json.dumps({"prompt": prompt, "answer": " " + (r["answer"] if r["answer"] is not None else "none")}, ensure_ascii=False))
PY
    t0=$(date +%s)
    resume=(); [[ -f $d/sft/train_state/state.json ]] && resume=(--resume)
    if [[ ! -f $d/sft/model.safetensors || -f $d/sft/train_state/state.json ]]; then
      # shellcheck disable=SC2086
      "$ONECORE" train sft --from "${SFT_BASE:-$base}" --data "$d/sft.train.jsonl" --out "$d/sft" --seq-len 640 \
        "${workers[@]}" "${resume[@]}" ${SFT_FLAGS:---epochs 3} >"$d/sft.log" 2>&1
    fi
    sft_s=$(( $(date +%s) - t0 ))
    sft_decode generative_sft sft
    if [[ -n ${SFT_EXTRACTIVE:-} ]]; then sft_decode generative_sft_extractive sftx --extractive; fi
    if [[ -n ${SFT_WINDOW:-} ]]; then sft_decode generative_sft_window sftw --extractive --window "$SFT_WINDOW"; fi
    sft_pred=$d/sft-pred.jsonl
  fi
  # what the models answer, not only their scores
  python3 - "$data/$fam.test.jsonl" "$d/pred.jsonl" $sft_pred >"$d/examples.txt" <<'PY'
import json, sys
gold = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
preds = [{r["id"]: r for r in map(json.loads, open(p, encoding="utf-8"))} for p in sys.argv[2:]]
ans = lambda p: None if p.get("abstained") else p.get("answer")
for g in gold[:25]:
    line = f"{g['question']!r}  gold={g['answer']!r}  span_head={ans(preds[0][g['id']])!r}"
    if len(preds) > 1:
        line += f"  sft={ans(preds[1][g['id']])!r}"
    print(line)
PY
  head -8 "$d/examples.txt" >&2
done
column -t -s $'\t' "$res"
