// Hugging Face tokenizers oracle for the Go parity tests and benchmarks.
//
//   node oracle.js encode TOKENIZER.json IN.jsonl OUT.jsonl [add_special]
//       IN: one {"text": "..."} per line; OUT: one JSON array of ids per line.
//   node oracle.js bench TOKENIZER.json IN.jsonl
//       encodes every document one at a time (one thread) and prints
//       {"mb_per_s":..., "docs":..., "tokens":..., "mb_per_cpu_s":...}.
//   node oracle.js benchbatch TOKENIZER.json IN.jsonl
//       the same with encodeBatch over 64 documents at a time (pin it to one
//       core, e.g. taskset -c 0 with RAYON_NUM_THREADS=1, for one thread).
//   node oracle.js decode TOKENIZER.json IDS.jsonl OUT.jsonl
//       OUT: one JSON string per line.
//   node oracle.js pretok TOKENIZER.json IN.jsonl OUT.jsonl
//       OUT: the pre-tokenizer's pieces of each document, a JSON array.
//
// NODE_PATH must point at the node_modules holding tokenizers@0.23.2.
'use strict';
const fs = require('fs');
const readline = require('readline');
const { Tokenizer } = require('tokenizers');

async function* lines(path) {
  const rl = readline.createInterface({ input: fs.createReadStream(path), crlfDelay: Infinity });
  for await (const line of rl) if (line.length > 0) yield line;
}

async function main() {
  const [mode, tokPath, inPath, outPath, addSpecial] = process.argv.slice(2);
  const tok = Tokenizer.fromFile(tokPath);
  const opts = { addSpecialTokens: addSpecial === 'add_special' };
  if (mode === 'encode') {
    const out = fs.createWriteStream(outPath);
    let batch = [];
    const flush = async () => {
      const encs = await tok.encodeBatch(batch, opts);
      for (const e of encs) out.write(JSON.stringify(Array.from(e.getIds())) + '\n');
      batch = [];
    };
    for await (const line of lines(inPath)) {
      batch.push(JSON.parse(line).text);
      if (batch.length >= 256) await flush();
    }
    if (batch.length) await flush();
    await new Promise((r) => out.end(r));
  } else if (mode === 'bench' || mode === 'benchbatch') {
    const docs = [];
    let bytes = 0;
    for await (const line of lines(inPath)) {
      const t = JSON.parse(line).text;
      docs.push(t);
      bytes += Buffer.byteLength(t, 'utf8');
    }
    let tokens = 0;
    const c0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    if (mode === 'bench') {
      for (const d of docs) tokens += (await tok.encode(d, null, opts)).getIds().length;
    } else {
      for (let i = 0; i < docs.length; i += 64) {
        for (const e of await tok.encodeBatch(docs.slice(i, i + 64), opts)) tokens += e.getIds().length;
      }
    }
    const sec = Number(process.hrtime.bigint() - t0) / 1e9;
    const c = process.cpuUsage(c0);
    const cpu = (c.user + c.system) / 1e6; // all threads of the process
    console.log(JSON.stringify({ mb_per_s: bytes / 1e6 / sec, docs: docs.length, tokens, seconds: sec,
      cpu_seconds: cpu, mb_per_cpu_s: bytes / 1e6 / cpu, bytes }));
  } else if (mode === 'pretok') {
    const pre = tok.getPreTokenizer();
    const out = fs.createWriteStream(outPath);
    for await (const line of lines(inPath)) {
      out.write(JSON.stringify(pre.preTokenizeString(JSON.parse(line).text).map((p) => p[0])) + '\n');
    }
    await new Promise((r) => out.end(r));
  } else if (mode === 'decode') {
    const out = fs.createWriteStream(outPath);
    for await (const line of lines(inPath)) {
      out.write(JSON.stringify(await tok.decode(JSON.parse(line), false)) + '\n');
    }
    await new Promise((r) => out.end(r));
  } else {
    throw new Error('mode must be encode, bench, benchbatch, pretok or decode');
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
