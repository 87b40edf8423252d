#!/usr/bin/env bash
# Write the sample shards under testdata/sample/ from the SpamAssassin
# held-out split (messages no model here was trained on):
#   part-0000.parquet   (zstd)  even-numbered of every 3rd held-out message
#   part-0001.jsonl.zst         odd-numbered of every 3rd held-out message
# Fields: id (group/number), text (Subject + body, see prep_spam.py), gold (ham|spam;
# not "label", which is the classify task's output column).
# Needs /usr/bin/python3, zstd and npm @duckdb/node-api (make deps).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
data=$here/data
out=$root/testdata/sample
[[ -s $data/spam_heldout.jsonl ]] || /usr/bin/python3 "$here/prep_spam.py" --out "$data"
mkdir -p "$out"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 - "$data/spam_heldout.jsonl" "$tmp" <<'PY'
import json, sys
rows = [json.loads(l) for i, l in enumerate(open(sys.argv[1], encoding="utf-8")) if i % 3 == 0]
half = (len(rows) + 1) // 2
for name, part in (("a.jsonl", rows[0::2]), ("b.jsonl", rows[1::2])):
    with open(f"{sys.argv[2]}/{name}", "w", encoding="utf-8") as f:
        for r in part:
            f.write(json.dumps({"id": r["id"], "text": r["text"], "gold": r["label"]}, ensure_ascii=False) + "\n")
print(f"sample: {half} + {len(rows) - half} documents")
PY
NODE_PATH=$(bash "$root/scripts/test-deps.sh" --node-path) node - "$tmp/a.jsonl" "$out/part-0000.parquet" <<'JS'
const { DuckDBInstance } = require('@duckdb/node-api');
(async () => {
  const [inp, out] = process.argv.slice(2);
  const db = await DuckDBInstance.create(':memory:');
  const c = await db.connect();
  await c.run(`COPY (SELECT id, text, gold FROM read_json('${inp}', format='newline_delimited',
    columns={id:'VARCHAR', text:'VARCHAR', gold:'VARCHAR'}))
    TO '${out}' (FORMAT parquet, COMPRESSION zstd)`);
})().catch(e => { console.error(e); process.exit(1); });
JS
zstd -q -19 -f "$tmp/b.jsonl" -o "$out/part-0001.jsonl.zst"
ls -l "$out"
