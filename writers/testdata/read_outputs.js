// Reads files onecore wrote with independent implementations and prints
// what they see as one JSON object: DuckDB for Parquet, apache-arrow (the
// Arrow project's JavaScript library) for Arrow IPC, since DuckDB's core
// has no Arrow IPC file reader.
// Usage: node read_outputs.js FILE.parquet FILE.arrow
const fs = require('fs');
const { DuckDBInstance } = require('@duckdb/node-api');
const arrow = require('apache-arrow');

async function main() {
  const [pq, ipc] = process.argv.slice(2);
  const out = {};
  const inst = await DuckDBInstance.create(':memory:');
  const c = await inst.connect();
  const d = await c.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${pq}')`);
  const rows = await c.runAndReadAll(`SELECT * FROM read_parquet('${pq}')`);
  const cnt = await c.runAndReadAll(`SELECT count(*)::INTEGER AS n FROM read_parquet('${pq}')`);
  const meta = await c.runAndReadAll(`SELECT path_in_schema, compression, count(*)::INTEGER AS chunks
      FROM parquet_metadata('${pq}') GROUP BY ALL ORDER BY 1`);
  const schema = await c.runAndReadAll(`SELECT name, repetition_type FROM parquet_schema('${pq}') WHERE name <> 'schema'`);
  out.parquet = {
    count: cnt.getRowObjectsJson()[0].n,
    columns: d.getRowObjectsJson().map((r) => [r.column_name, r.column_type]),
    repetition: schema.getRowObjectsJson().map((r) => [r.name, r.repetition_type]),
    chunks: meta.getRowObjectsJson(),
    rows: rows.getRowObjectsJson(),
  };
  const table = arrow.tableFromIPC(fs.readFileSync(ipc));
  out.arrow = {
    count: table.numRows,
    fields: table.schema.fields.map((f) => [f.name, String(f.type), f.nullable]),
    rows: table.toArray().map((r) => r.toJSON()),
  };
  console.log(JSON.stringify(out));
}
main().catch((e) => { console.error(e); process.exit(1); });
