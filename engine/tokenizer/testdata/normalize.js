// Normalization and pre-tokenization oracle for regex_onig_test.go and
// normalize_long_test.go: reads {"text"} lines, writes one JSON string (or
// array of pieces) per line.
//
//   node normalize.js norm FORM IN.jsonl OUT.jsonl      FORM: nfc nfd nfkc nfkd
//   node normalize.js split REGEX BEHAVIOR INVERT IN.jsonl OUT.jsonl
'use strict';
const fs = require('fs');
const t = require('tokenizers');
const args = process.argv.slice(2);
let fn, inPath, outPath;
if (args[0] === 'norm') {
  const n = { nfc: t.nfcNormalizer, nfd: t.nfdNormalizer, nfkc: t.nfkcNormalizer, nfkd: t.nfkdNormalizer }[args[1]]();
  fn = (s) => n.normalizeString(s);
  [inPath, outPath] = args.slice(2);
} else if (args[0] === 'split') {
  const json = JSON.stringify({ version: '1.0', truncation: null, padding: null, added_tokens: [], normalizer: null,
    pre_tokenizer: { type: 'Split', pattern: { Regex: args[1] }, behavior: args[2], invert: args[3] === 'true' },
    post_processor: null, decoder: null, model: { type: 'WordLevel', vocab: { a: 0 }, unk_token: 'a' } });
  const pre = t.Tokenizer.fromString(json).getPreTokenizer();
  fn = (s) => pre.preTokenizeString(s).map((p) => p[0]);
  [inPath, outPath] = args.slice(4);
} else {
  throw new Error('mode must be norm or split');
}
const out = [];
for (const line of fs.readFileSync(inPath, 'utf8').split('\n')) {
  if (line.length) out.push(JSON.stringify(fn(JSON.parse(line).text)));
}
fs.writeFileSync(outPath, out.join('\n') + '\n');
