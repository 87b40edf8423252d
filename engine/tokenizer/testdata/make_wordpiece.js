// Builds a BERT-style WordPiece tokenizer.json with the Hugging Face
// tokenizers oracle, for the parity tests (the project ships no BERT
// vocabulary, and tests must not read files outside the repository).
//
//   node make_wordpiece.js CORPUS.jsonl OUT.json [notype]
//
// The vocabulary comes from the corpus as BERT's normalizer and
// pre-tokenizer see it (lowercased, accents stripped, CJK characters
// isolated): special tokens, every character alone and as a "##"
// continuation, the 6000 most frequent words and the 3000 most frequent
// word endings (as "##" pieces), so WordPiece's greedy longest match has
// real choices to make. Ties break by the string, so the file is the same
// on every run. With "notype", the model's "type" field is dropped, as in
// older files (bert-base-uncased's), which loaders must still accept.
'use strict';
const fs = require('fs');
const t = require('tokenizers');
const [corpus, out, notype] = process.argv.slice(2);
const norm = t.bertNormalizer({ cleanText: true, handleChineseChars: true, stripAccents: true, lowercase: true });
const pre = t.bertPreTokenizer();
const words = new Map(), ends = new Map(), chars = new Set();
for (const line of fs.readFileSync(corpus, 'utf8').split('\n')) {
  if (!line) continue;
  const text = norm.normalizeString(JSON.parse(line).text);
  for (const [w] of pre.preTokenizeString(text)) {
    const cs = Array.from(w);
    cs.forEach((c) => chars.add(c));
    words.set(w, (words.get(w) || 0) + 1);
    for (let k = 2; k <= 4 && k < cs.length; k++) {
      const e = cs.slice(cs.length - k).join('');
      ends.set(e, (ends.get(e) || 0) + 1);
    }
  }
}
const top = (m, n) => [...m.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).slice(0, n).map((e) => e[0]);
const vocab = {};
let next = 0;
const add = (tok) => { if (!(tok in vocab)) vocab[tok] = next++; };
['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'].forEach(add);
const sortedChars = [...chars].sort();
sortedChars.forEach(add);
sortedChars.forEach((c) => add('##' + c));
top(words, 6000).forEach(add);
top(ends, 3000).forEach((e) => add('##' + e));
const tok = new t.Tokenizer(t.WordPiece.init(vocab, { unkToken: '[UNK]', continuingSubwordPrefix: '##', maxInputCharsPerWord: 100 }));
tok.setNormalizer(norm);
tok.setPreTokenizer(pre);
tok.setPostProcessor(t.bertProcessing(['[SEP]', vocab['[SEP]']], ['[CLS]', vocab['[CLS]']]));
tok.setDecoder(t.wordPieceDecoder('##', true));
tok.addSpecialTokens(['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']);
tok.save(out);
if (notype === 'notype') {
  const j = JSON.parse(fs.readFileSync(out, 'utf8'));
  delete j.model.type;
  fs.writeFileSync(out, JSON.stringify(j));
}
