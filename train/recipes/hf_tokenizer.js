// Fallback tokenizer trainer (used only when `onecore train tokenizer` is not
// available): trains a byte-level BPE with the Hugging Face tokenizers npm
// binding (tokenizers@0.23.2, installed by `make deps`), then rebuilds the
// vocabulary in onecore's layout: <pad>=0, <bos>=1, <eos>=2, the 256
// byte-level symbols, then the first merges in training order up to
// --vocab-size. (The binding does not expose BpeTrainer options, so it trains
// with defaults and we cut: BPE merges are learned greedily in order, so the
// first k merges are what a k-merge training would learn.)
//
// Usage: NODE_PATH=$(scripts/test-deps.sh --node-path) node hf_tokenizer.js TEXT OUT.json [VOCAB]
const fs = require('fs');
const os = require('os');
const path = require('path');
const tk = require('tokenizers');

const [text, out, vocabArg] = process.argv.slice(2);
const vocabSize = parseInt(vocabArg || '16384', 10);
const specials = ['<pad>', '<bos>', '<eos>'];

const t = new tk.Tokenizer(tk.BPE.empty());
t.setPreTokenizer(tk.byteLevelPreTokenizer(false, true));

t.train([text]);
const tmp = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'bpe-')), 'raw.json');
t.save(tmp);
const raw = JSON.parse(fs.readFileSync(tmp, 'utf8'));
let merges = raw.model.merges.map(m => Array.isArray(m) ? m : m.split(' '));

const vocab = {};
specials.forEach((s, i) => { vocab[s] = i; });
for (const ch of tk.byteLevelAlphabet().sort()) vocab[ch] = Object.keys(vocab).length;
const kept = [];
for (const [a, b] of merges) {
  if (Object.keys(vocab).length >= vocabSize) break;
  if (!(a in vocab) || !(b in vocab)) throw new Error(`merge ${a} ${b}: parts not in vocab`);
  const m = a + b;
  if (m in vocab) continue;
  vocab[m] = Object.keys(vocab).length;
  kept.push([a, b]);
}
const added = specials.map((s, i) => ({ id: i, content: s, single_word: false, lstrip: false,
  rstrip: false, normalized: false, special: true }));
const json = {
  version: '1.0',
  truncation: null,
  padding: null,
  added_tokens: added,
  normalizer: null,
  pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
  post_processor: null,
  decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
  model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null,
    end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, ignore_merges: false,
    vocab, merges: kept },
};
fs.writeFileSync(out, JSON.stringify(json));
// Round-trip check with the real library.
const back = tk.Tokenizer.fromFile(out);
back.encode('Subject: Re: hello wörld\n\nfunc main() {}').then(e => {
  console.log(`vocab ${Object.keys(vocab).length}, merges ${kept.length}; sample ids ${e.getIds().slice(0, 12)}`);
});
