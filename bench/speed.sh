#!/usr/bin/env bash
# Throughput of several checkpoints side by side (docs/s per core, e.g.
# `train extract|classify --layers 6|3|2`): every model runs the same task
# on the same records on the same pinned core, in alternating rounds so load
# drift hits all of them, and the median documents/s and tokens/s of each
# (from `onecore extract --summary`, the pipeline's own wall clock: model
# load excluded, tokenizing, packing, the engine and the writer included)
# are printed with the ratio to the first model.
#
# Usage: bench/speed.sh TASK INPUT.jsonl MODEL...
#   TASK          extract (span heads; records need "question": e.g.
#                 bench/extract/prep.py's FAMILY.test.jsonl, cat several for
#                 a mix) or classify (bench/classify/prep.py's test.jsonl)
#   MODEL         checkpoint directories
# Env:
#   ONECORE=onecore   the binary
#   CORE=0            the core extraction is pinned to
#   ROUNDS=3          alternating rounds
#   FLAGS=            more flags for every run (e.g. "--max-tokens 256")
#   VARIANTS=         flag sets to compare, separated by '|' (e.g. "|--int8":
#                     every model without and with --int8), each a row
set -euo pipefail
usage="usage: speed.sh extract|classify INPUT.jsonl MODEL..."
task=${1:?$usage}
in=${2:?$usage}
shift 2
(( $# > 0 )) || { echo "$usage" >&2; exit 2; }
case $task in
  extract) taskargs=(--task extract --question-field question) ;;
  classify) taskargs=(--task classify) ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
oc=${ONECORE:-onecore}
core=${CORE:-0}
rounds=${ROUNDS:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
IFS='|' read -r -a variants <<<"${VARIANTS:-}"
(( ${#variants[@]} > 0 )) || variants=("")
for ((r = 1; r <= rounds; r++)); do
  i=0
  for m in "$@"; do
    for v in "${variants[@]}"; do
      i=$((i + 1))
      rm -f "$tmp/out.jsonl"
      # shellcheck disable=SC2086
      taskset -c "$core" "$oc" extract "${taskargs[@]}" ${FLAGS:-} $v --model "$m" --in "$in" \
        --out "$tmp/out.jsonl" --workers 1 --progress none --summary "$tmp/s.json" >/dev/null 2>"$tmp/err" ||
        { rc=$?; [[ $rc == 3 ]] || { cat "$tmp/err" >&2; exit 1; }; } # 3: some rows rejected (counted in rows)
      python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(sys.argv[2], j["docs_per_s"], j["tok_per_s"], j["rows_out"])' \
        "$tmp/s.json" "$i" >>"$tmp/runs"
    done
  done
done
python3 - "$tmp/runs" "${VARIANTS:-}" "$@" <<'PY'
import json, os, statistics, sys
runs = [l.split() for l in open(sys.argv[1])]
variants = sys.argv[2].split("|")
models = sys.argv[3:]
first = None
print("model\tflags\tlayers\trows\tdocs_per_s\ttok_per_s\tratio")
i = 0
for m in models:
    for v in variants:
        i += 1
        rs = [r for r in runs if r[0] == str(i)]
        dps = statistics.median(float(r[1]) for r in rs)
        tps = statistics.median(float(r[2]) for r in rs)
        layers = len(json.load(open(os.path.join(m, "config.json")))["layers"])
        first = first or dps
        print(f"{m}\t{v.strip() or '-'}\t{layers}\t{rs[0][3]}\t{dps:.0f}\t{tps:.0f}\t{dps / first:.2f}")
PY
