// cld3_detect: one language code per input line, from npm cld3-asm (Google's
// CLD3, ~107 languages, compiled to WebAssembly), for
// bench/classify/langid_detectors.py. Reads UTF-8 text, one document per
// line, on stdin; writes CLD3's code (ISO 639-1 where one exists, "und"
// when it is not reliable enough to say) per line on stdout.
//
// Run: NODE_PATH=DIR/node_modules node cld3_detect.js   (npm install cld3-asm@4.0.0)
const { loadModule } = require("cld3-asm");
const readline = require("readline");

(async () => {
  const factory = await loadModule();
  const id = factory.create(0, 1000);
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  const out = [];
  for await (const line of rl) {
    out.push(id.findLanguage(line).language);
  }
  id.dispose();
  process.stdout.write(out.join("\n") + (out.length ? "\n" : ""));
})();
