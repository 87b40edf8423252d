package train

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onecore-dev/onecore/internal/testenv"
)

// byteLevelTokenizerJSON is a Hugging Face tokenizer.json whose vocabulary
// is <pad>, <bos>, <eos> and the 256 byte-level symbols (id = byte + 3) with
// no merges: the same ids as byteTok.
func byteLevelTokenizerJSON(t *testing.T) string {
	t.Helper()
	var bs []int
	for b := '!'; b <= '~'; b++ {
		bs = append(bs, int(b))
	}
	for b := 0xA1; b <= 0xAC; b++ {
		bs = append(bs, b)
	}
	for b := 0xAE; b <= 0xFF; b++ {
		bs = append(bs, b)
	}
	char := map[int]rune{}
	for _, b := range bs {
		char[b] = rune(b)
	}
	n := 0
	for b := 0; b < 256; b++ {
		if _, ok := char[b]; !ok {
			char[b] = rune(256 + n)
			n++
		}
	}
	vocab := map[string]int{"<pad>": 0, "<bos>": 1, "<eos>": 2}
	for b := 0; b < 256; b++ {
		vocab[string(char[b])] = b + 3
	}
	added := []map[string]any{}
	for i, s := range []string{"<pad>", "<bos>", "<eos>"} {
		added = append(added, map[string]any{"id": i, "content": s, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true})
	}
	tj := map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil, "added_tokens": added, "normalizer": nil,
		"pre_tokenizer":  map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
		"post_processor": nil,
		"decoder":        map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
		"model":          map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": nil, "end_of_word_suffix": nil, "fuse_unk": false, "byte_fallback": false, "vocab": vocab, "merges": []string{}},
	}
	b, err := json.Marshal(tj)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func run(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(testenv.Binary(t), args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("onecore %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestCLITrainedCheckpointForward: `onecore train pretrain` writes a
// checkpoint that `onecore forward` (the engine's inference path) loads
// unchanged and whose logits agree with the training forward pass; `train
// sft` and `train classify` build on it.
func TestCLITrainedCheckpointForward(t *testing.T) {
	tok := byteLevelTokenizerJSON(t)
	work := t.TempDir()
	cfgPath := filepath.Join(work, "config.json")
	cb, _ := json.Marshal(smallConfig())
	os.WriteFile(cfgPath, cb, 0o644)
	ck := filepath.Join(work, "ck")
	pretrain := func(out string, extra ...string) *exec.Cmd {
		args := append([]string{"train", "pretrain", "--config", cfgPath, "--data", "/usr/local/go/src/unicode/utf8", "--tokenizer", tok,
			"--out", out, "--tokens", "6400", "--batch", "2", "--seq-len", "64", "--negatives", "64", "--lr", "3e-3",
			"--warmup", "5", "--eval-every", "0", "--ckpt-every", "1280", "--generations", "1", "--val-permille", "200", "--val-tokens", "512", "--workers", "2"}, extra...)
		return exec.Command(testenv.Binary(t), args...)
	}
	if out, err := pretrain(ck).CombinedOutput(); err != nil {
		t.Fatalf("pretrain: %v\n%s", err, out)
	}
	for _, f := range []string{"config.json", "model.safetensors", "generation.json", "tokenizer.json", "metrics.jsonl", "train_state/state.json", "train_state/optimizer.safetensors"} {
		if _, err := os.Stat(filepath.Join(ck, f)); err != nil {
			t.Errorf("checkpoint lacks %s", f)
		}
	}

	// SIGKILL after the first checkpoint, then --resume (2 workers): the
	// loss curve and the final weights are the uninterrupted ones, bit for
	// bit
	killed := filepath.Join(work, "killed")
	cmd := pretrain(killed)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if b, err := os.ReadFile(filepath.Join(killed, "train_state", "state.json")); err == nil && strings.Contains(string(b), `"step": 10`) {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("no checkpoint at step 10 within 2 minutes")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Kill() // SIGKILL
	cmd.Wait()
	if b, _ := os.ReadFile(filepath.Join(killed, "train_state", "state.json")); strings.Contains(string(b), `"step": 50`) {
		t.Fatal("the run finished before it could be killed")
	}
	if out, err := pretrain(killed, "--resume").CombinedOutput(); err != nil {
		t.Fatalf("pretrain --resume: %v\n%s", err, out)
	}
	want, _ := readMetrics(t, ck)
	got, _ := readMetrics(t, killed)
	if len(want) != 50 || len(got) != 50 {
		t.Fatalf("metrics: %d steps uninterrupted, %d killed+resumed; want 50", len(want), len(got))
	}
	for s := int64(1); s <= 50; s++ {
		if got[s] != want[s] {
			t.Fatalf("step %d: loss %v after kill+resume, %v uninterrupted", s, got[s], want[s])
		}
	}
	if !bytes.Equal(trainStateBytes(t, killed), trainStateBytes(t, ck)) {
		t.Fatal("weights after kill -9 + --resume differ from the uninterrupted run")
	}

	// two documents, the second starting mid-stream
	text := "package utf8\n\nfunc RuneLen(r rune) int {\n"
	ids := []int32{bosID}
	ids = append(ids, byteTok{}.Encode(text)...)
	ids = append(ids, bosID)
	ids = append(ids, byteTok{}.Encode("// Copyright 2009")...)
	idsPath := filepath.Join(work, "ids.json")
	b, _ := json.Marshal(ids)
	os.WriteFile(idsPath, b, 0o644)
	logitsPath := filepath.Join(work, "logits.bin")
	run(t, "forward", "--checkpoint", ck, "--ids-file", idsPath, "--out", logitsPath)
	raw, err := os.ReadFile(logitsPath)
	if err != nil {
		t.Fatal(err)
	}
	c, p, _, err := LoadCheckpoint(ck)
	if err != nil {
		t.Fatal(err)
	}
	V := c.VocabSize
	if len(raw) != 4*len(ids)*V {
		t.Fatalf("forward wrote %d bytes, want %d", len(raw), 4*len(ids)*V)
	}
	m := NewModel(c, p)
	ours := nextLogits(m, m.Forward(ids, 0), len(ids))
	var maxDiff, scale float64
	agree := 0
	for tpos := range ids {
		eng := make([]float32, V)
		for i := range eng {
			eng[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*(tpos*V+i):]))
		}
		row := ours[tpos*V : (tpos+1)*V]
		ae, ao := 0, 0
		for i := range eng {
			maxDiff = math.Max(maxDiff, math.Abs(float64(eng[i]-row[i])))
			scale = math.Max(scale, math.Abs(float64(eng[i])))
			if eng[i] > eng[ae] {
				ae = i
			}
			if row[i] > row[ao] {
				ao = i
			}
		}
		if ae == ao {
			agree++
		}
	}
	t.Logf("engine vs training forward: max |Δlogit| %.4f (max |logit| %.2f), argmax agreement %d/%d", maxDiff, scale, agree, len(ids))
	if maxDiff > 0.05*scale || agree < len(ids)*9/10 {
		t.Errorf("engine and training forward disagree: max |Δ| %.4f vs scale %.2f, argmax %d/%d", maxDiff, scale, agree, len(ids))
	}

	// post-training stages on the pretrained checkpoint
	var recs []map[string]string
	for i := 0; i < 40; i++ {
		recs = append(recs, map[string]string{"prompt": "q" + strings.Repeat("x", i%5) + "?", "answer": "ok", "text": strings.Repeat("ab ", 1+i%7), "label": []string{"short", "long"}[(i%7)/4]})
	}
	data := writeJSONL(t, recs)
	run(t, "train", "sft", "--from", ck, "--data", data, "--out", filepath.Join(work, "sft"), "--epochs", "1", "--batch", "2", "--seq-len", "64", "--samples", "2")
	out := run(t, "train", "classify", "--from", ck, "--data", data, "--label-field", "label", "--out", filepath.Join(work, "cls"), "--val-permille", "300", "--head-steps", "50", "--finetune=false")
	if !strings.Contains(out, "held-out: accuracy") {
		t.Errorf("classify printed no held-out report:\n%s", out)
	}
	if _, _, gen, err := LoadCheckpoint(filepath.Join(work, "cls")); err != nil || len(gen.Labels) != 2 {
		t.Errorf("classifier checkpoint: %v, labels %v", err, gen)
	}
}

// TestCLIPosttrainInterruptResume: `train classify --finetune` killed with
// SIGKILL after a checkpoint, and `train sft` stopped with SIGINT (exit
// 130, checkpoint saved), each continued with --resume (2 workers), end
// with the uninterrupted runs' weights and moments, bit for bit.
func TestCLIPosttrainInterruptResume(t *testing.T) {
	from, _ := cliSourceCheckpoint(t)
	var recs []map[string]string
	for i := 0; i < 200; i++ {
		label := []string{"x", "y"}[i%2]
		recs = append(recs, map[string]string{"text": strings.Repeat(label+" q ", 2+i%9) + fmt.Sprint(i), "label": label,
			"prompt": fmt.Sprintf("say %c (%d):", 'a'+i%5, i), "answer": strings.Repeat(string(rune('a'+i%5)), 3)})
	}
	data := writeJSONL(t, recs)
	spans := writeRecords(t, codeRecords(120, 3))
	work := t.TempDir()
	for _, tc := range []struct {
		name string
		sig  os.Signal
		args []string
	}{
		{"classify", os.Kill, []string{"train", "classify", "--from", from, "--data", data, "--label-field", "label", "--head-steps", "10",
			"--finetune", "--epochs", "8", "--batch-tokens", "256", "--max-tokens", "64", "--ckpt-every", "3", "--workers", "2"}},
		{"sft", os.Interrupt, []string{"train", "sft", "--from", from, "--data", data, "--epochs", "5", "--batch", "3", "--seq-len", "64",
			"--samples", "1", "--ckpt-every", "3", "--workers", "2"}},
		{"extract", os.Interrupt, []string{"train", "extract", "--from", from, "--data", spans, "--question", "code?", "--epochs", "3",
			"--batch-tokens", "512", "--max-tokens", "128", "--eval-every", "5", "--samples", "1", "--ckpt-every", "3", "--workers", "2"}},
	} {
		cmd := func(out string, extra ...string) *exec.Cmd {
			return exec.Command(testenv.Binary(t), append(append(tc.args, "--out", out), extra...)...)
		}
		full := filepath.Join(work, tc.name+"-full")
		if out, err := cmd(full).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", tc.name, err, out)
		}
		stopped := filepath.Join(work, tc.name+"-stopped")
		x := cmd(stopped)
		var log strings.Builder
		x.Stdout, x.Stderr = &log, &log
		if err := x.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(2 * time.Minute)
		for {
			b, err := os.ReadFile(filepath.Join(stopped, "train_state", "state.json"))
			if err == nil && strings.Contains(string(b), `"step": 6`) {
				break
			}
			if time.Now().After(deadline) {
				x.Process.Kill()
				t.Fatalf("%s: no checkpoint at step 6 within 2 minutes", tc.name)
			}
			time.Sleep(5 * time.Millisecond)
		}
		x.Process.Signal(tc.sig)
		err := x.Wait()
		if tc.sig == os.Interrupt {
			if x.ProcessState.ExitCode() != 130 || !strings.Contains(log.String(), "checkpoint saved") {
				t.Fatalf("%s after SIGINT: %v, want exit 130 and \"checkpoint saved\"\n%s", tc.name, err, log.String())
			}
		}
		if bytes.Equal(trainStateBytes(t, stopped), trainStateBytes(t, full)) {
			t.Fatalf("%s: the run finished before it could be stopped", tc.name)
		}
		if out, err := cmd(stopped, "--resume", "--workers", "1").CombinedOutput(); err != nil {
			t.Fatalf("%s --resume: %v\n%s", tc.name, err, out)
		}
		if !bytes.Equal(trainStateBytes(t, stopped), trainStateBytes(t, full)) {
			t.Errorf("%s: weights after the stop and --resume differ from the uninterrupted run", tc.name)
		}
	}
}

// TestCLIPresetVocabFromTokenizer: `--config dense-3m` with a tokenizer of
// fewer ids than the preset's 16,384 sizes the model to the tokenizer (it
// silently kept 16,384 rows of embedding no id ever uses); a config file's
// explicit vocab_size is kept, with a warning.
func TestCLIPresetVocabFromTokenizer(t *testing.T) {
	tok := byteLevelTokenizerJSON(t)
	var tj struct {
		Model struct {
			Vocab map[string]int `json:"vocab"`
		} `json:"model"`
	}
	b, _ := os.ReadFile(tok)
	json.Unmarshal(b, &tj)
	n := len(tj.Model.Vocab)
	out := filepath.Join(t.TempDir(), "ck")
	log := run(t, "train", "pretrain", "--config", "dense-3m", "--data", "/usr/local/go/src/unicode/utf8", "--tokenizer", tok,
		"--out", out, "--tokens", "512", "--batch", "1", "--seq-len", "64", "--negatives", "32",
		"--eval-every", "0", "--generations", "0", "--val-tokens", "128", "--workers", "1")
	cfg, err := LoadConfig(filepath.Join(out, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.VocabSize != n || !strings.Contains(log, "vocab_size set to the tokenizer's") {
		t.Fatalf("dense-3m with a %d-id tokenizer: vocab_size %d\n%s", n, cfg.VocabSize, log)
	}
}

// cliSourceCheckpoint saves a random smallConfig model with the byte-level
// tokenizer, the source the CLI tests train from, and returns its directory
// and config.
func cliSourceCheckpoint(t *testing.T) (string, *Config) {
	t.Helper()
	from := t.TempDir()
	c := smallConfig()
	p := NewParams[float32](ParamSpecs(c, 0))
	p.Init(c, 5)
	if err := SaveCheckpoint(from, c, p, &Generation{StopIDs: []int32{eosID}}, byteLevelTokenizerJSON(t)); err != nil {
		t.Fatal(err)
	}
	return from, c
}
