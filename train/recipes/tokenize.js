// Tokenizes the "text" field of JSONL documents with a tokenizer.json via the
// Hugging Face tokenizers npm binding, for the PyTorch fallback trainer.
// Writes OUT.bin (uint16 ids; each document is <bos> ids... <eos>) and
// OUT.idx (uint32 LE start offsets, one per document, plus the end).
//
// Usage: NODE_PATH=.cache/node/node_modules node tokenize.js TOKENIZER.json IN.jsonl OUT
const fs = require('fs');
const readline = require('readline');
const tk = require('tokenizers');

const [tokPath, inPath, out] = process.argv.slice(2);
const t = tk.Tokenizer.fromFile(tokPath);
const BOS = 1, EOS = 2;

(async () => {
  const rl = readline.createInterface({ input: fs.createReadStream(inPath), crlfDelay: Infinity });
  let batch = [];
  const chunks = [];
  const offsets = [0];
  let total = 0;
  const flush = async () => {
    const encs = await t.encodeBatch(batch, { addSpecialTokens: false });
    for (const e of encs) {
      const ids = e.getIds();
      const a = new Uint16Array(ids.length + 2);
      a[0] = BOS; a.set(ids, 1); a[ids.length + 1] = EOS;
      chunks.push(a);
      total += a.length;
      offsets.push(total);
    }
    batch = [];
  };
  for await (const line of rl) {
    if (!line.trim()) continue;
    batch.push(JSON.parse(line).text);
    if (batch.length === 512) await flush();
  }
  if (batch.length) await flush();
  const bin = Buffer.alloc(total * 2);
  let p = 0;
  for (const a of chunks) { Buffer.from(a.buffer).copy(bin, p); p += a.length * 2; }
  fs.writeFileSync(out + '.bin', bin);
  fs.writeFileSync(out + '.idx', Buffer.from(new Uint32Array(offsets).buffer));
  console.log(`${inPath}: ${offsets.length - 1} docs, ${total} tokens -> ${out}.bin`);
})().catch(e => { console.error(e); process.exit(1); });
