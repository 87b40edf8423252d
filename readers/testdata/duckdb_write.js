// Writes Parquet files with DuckDB for readers' tests, and prints the
// expected rows as JSON Lines (one file per line: {"file", "rows": [...]}).
// Usage: node duckdb_write.js OUTDIR
const { DuckDBInstance } = require('@duckdb/node-api');

const out = process.argv[2];
const table = `
  SELECT
    CASE WHEN i % 7 = 3 THEN NULL ELSE 'doc-' || i END AS id,
    CASE WHEN i % 5 = 0 THEN ''
         WHEN i % 5 = 1 THEN 'héllo wörld ' || i || ' 日本語 😀'
         WHEN i % 5 = 2 THEN repeat('long text ', 20 + i % 50)
         ELSE 'plain "quoted" \\ back' || chr(10) || 'line ' || i END AS text,
    ['en', 'fr', 'de'][1 + i % 3] AS lang,
    i::BIGINT AS n,
    CASE WHEN i % 4 = 0 THEN NULL ELSE i * 0.5 END::DOUBLE AS score,
    i % 2 = 0 AS flag,
    (DATE '2024-01-01' + (i % 30)::INTEGER) AS day,
    (TIMESTAMP '2024-01-01 00:00:00' + to_seconds(i)) AS ts,
    (i / 100)::DECIMAL(10, 2) AS price,
    {'a': i, 'b': 'x' || i, 'c': [i, i + 1]} AS meta,
    CASE WHEN i % 3 = 0 THEN NULL ELSE [i, i * 2, NULL] END AS nums,
    [{'k': 'p' || i, 'v': i}, {'k': 'q', 'v': NULL}] AS pairs,
    MAP {'m1': i, 'm2': i + 1} AS m
  FROM range(0, NROWS) t(i)`;

async function main() {
  const inst = await DuckDBInstance.create(':memory:');
  const c = await inst.connect();
  const specs = [
    { file: 'one_group.parquet', n: 1000, opts: 'ROW_GROUP_SIZE 100000' },
    { file: 'rg2048_snappy.parquet', n: 9000, opts: "ROW_GROUP_SIZE 2048, COMPRESSION 'snappy'" },
    { file: 'rg2048_zstd.parquet', n: 5000, opts: "ROW_GROUP_SIZE 2048, COMPRESSION 'zstd'" },
    { file: 'v2_gzip.parquet', n: 500, opts: "ROW_GROUP_SIZE 128, COMPRESSION 'gzip', PARQUET_VERSION 'V2'" },
  ];
  for (const s of specs) {
    const q = table.replace('NROWS', String(s.n));
    const path = out + '/' + s.file;
    await c.run(`COPY (${q}) TO '${path}' (FORMAT parquet, ${s.opts})`);
    const r = await c.runAndReadAll(`SELECT id, text, lang, n::VARCHAR AS n, score, flag,
        day::VARCHAR AS day, strftime(ts, '%Y-%m-%dT%H:%M:%SZ') AS ts, price::VARCHAR AS price,
        to_json(meta)::VARCHAR AS meta, to_json(nums)::VARCHAR AS nums, to_json(pairs)::VARCHAR AS pairs,
        to_json(m)::VARCHAR AS m
      FROM read_parquet('${path}')`);
    const rows = r.getRowObjectsJson();
    const md = await c.runAndReadAll(`SELECT count(DISTINCT row_group_id)::INTEGER AS rgs,
        bool_or(encodings LIKE '%DICTIONARY%') AS dict
      FROM parquet_metadata('${path}')`);
    const meta = md.getRowObjectsJson()[0];
    console.log(JSON.stringify({ file: s.file, row_groups: meta.rgs, dictionary: meta.dict, rows }));
  }
}
main().catch((e) => { console.error(e); process.exit(1); });
