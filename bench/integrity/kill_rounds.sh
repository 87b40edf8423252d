#!/usr/bin/env bash
# Adversarial kill/rerun rounds (issue 19's acceptance): for each round,
# start `onecore score` on a mixed corpus (Parquet + JSONL.zst + JSONL with a
# malformed line), SIGKILL it at a random moment — or at a named crash point
# (reading, writing, renaming, marking, merging, cleaning up) — rerun the same
# command until it finishes, and compare the output row by row with a clean
# reference run: rows lost, duplicated and mismatched (score or kept column
# differs) must all be 0. Directory mode and single-file mode alternate.
#
# Usage: bench/integrity/kill_rounds.sh [ROUNDS=24] [WORK=/tmp/onecore-kill]
# Needs node with @duckdb/node-api (make deps installs it; scripts/test-deps.sh --node-path).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
rounds=${1:-24}
work=${2:-/tmp/onecore-kill}
bin=$work/onecore
rm -rf "$work" && mkdir -p "$work/in"
(cd "$root" && go build -o "$bin" ./cmd/onecore)
export NODE_PATH=$(bash "$root/scripts/test-deps.sh" --node-path)

# corpus: the bundled sample shards (Parquet + JSONL.zst), a JSONL copy of the
# Parquet shard with one malformed line, and smaller slices as extra shards
cp "$root"/testdata/sample/* "$work/in/"
python3 - "$work/in" <<'PY'
import json, sys, random
d = sys.argv[1]
rng = random.Random(7)
words = "the cat sat on a mat while data pipelines ran overnight across every core".split()
for k in range(6):
    with open(f"{d}/extra{k}.jsonl", "w") as f:
        for i in range(40):
            if k == 2 and i == 5:
                f.write("{not json\n")
                continue
            txt = " ".join(rng.choice(words) for _ in range(rng.randint(5, 300)))
            f.write(json.dumps({"id": f"e{k}-{i}", "text": txt, "gold": f"g{k}-{i}"}) + "\n")
PY
args=(score --in "$work/in" --keep gold --workers 2 --pack-tokens 256 --progress none)
"$bin" "${args[@]}" --out "$work/ref.parquet" >/dev/null 2>&1 || [[ $? == 3 ]]

cat >"$work/cmp.js" <<'JS'
const { DuckDBInstance } = require('@duckdb/node-api');
(async () => {
  const [ref, got] = process.argv.slice(2);
  const c = await (await DuckDBInstance.create(':memory:')).connect();
  const q = async (s) => (await c.runAndReadAll(s)).getRowObjectsJson()[0];
  const r = await q(`WITH g AS (SELECT * FROM read_parquet('${got}')), r AS (SELECT * FROM read_parquet('${ref}'))
    SELECT (SELECT count(*) FROM r WHERE id NOT IN (SELECT id FROM g)) AS lost,
           (SELECT count(*) - count(DISTINCT id) FROM g) AS duplicated,
           (SELECT count(*) FROM r JOIN g USING (id) WHERE r.mean_logprob IS DISTINCT FROM g.mean_logprob
              OR r.gold IS DISTINCT FROM g.gold OR r.tokens IS DISTINCT FROM g.tokens) AS mismatched,
           (SELECT count(*) FROM g) AS rows`);
  console.log(JSON.stringify(r));
})();
JS

dir_points=(read:1 read:150 engine:2 write:1 renamed:1 rejects:1 reject:1 marked:1 marked:4)
file_points=(merge:1 merged:1 cleanup:1 marked:2 write:1 read:150 renamed:3)
tot_lost=0 tot_dup=0 tot_mis=0
for ((i = 0; i < rounds; i++)); do
  mode=dir; out=$work/out$i/; glob="$work/out$i/*.parquet"
  if ((i % 2)); then mode=file; out=$work/out$i.parquet; glob=$out; fi
  how=""
  if ((i / 2 % 2 == 0)); then # half the rounds of each mode: a named crash point
    if [[ $mode == dir ]]; then p=${dir_points[$((i / 4 % ${#dir_points[@]}))]}; else p=${file_points[$((i / 4 % ${#file_points[@]}))]}; fi
    how="crash $p"
    (ONECORE_TEST_CRASH=$p exec "$bin" "${args[@]}" --out "$out" >/dev/null 2>&1) 2>/dev/null || true
  else
    ms=$((RANDOM % 900 + 30))
    how="kill after ${ms}ms"
    "$bin" "${args[@]}" --out "$out" >/dev/null 2>&1 &
    pid=$!
    sleep "$(printf '0.%03d' "$ms")"
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  code=0
  "$bin" "${args[@]}" --out "$out" >"$work/sum$i.json" 2>"$work/err$i.txt" || code=$?
  if [[ $code != 0 && $code != 3 ]]; then
    echo "round $i ($mode, $how): rerun exit $code"; cat "$work/err$i.txt"; exit 1
  fi
  res=$(node "$work/cmp.js" "$work/ref.parquet" "$glob")
  echo "round $i: $mode, $how, rerun exit $code: $res"
  l=$(echo "$res" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["lost"], r["duplicated"], r["mismatched"])')
  read -r a b c <<<"$l"
  tot_lost=$((tot_lost + a)) tot_dup=$((tot_dup + b)) tot_mis=$((tot_mis + c))
done
echo "rounds: $rounds; rows lost: $tot_lost, duplicated: $tot_dup, mismatched: $tot_mis"
[[ $tot_lost == 0 && $tot_dup == 0 && $tot_mis == 0 ]]
