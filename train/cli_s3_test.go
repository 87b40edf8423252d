package train

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onecore-dev/onecore/internal/testenv"
)

// TestCLITrainDataS3: every trainer takes --data s3://… (a real S3 server,
// versitygw) and trains exactly what it trains from the same files on local
// disk: the weights are equal byte for byte. Pretraining reads a prefix as
// a folder (plain objects one document each, JSON Lines one per row, a
// hidden folder skipped), the others read single objects.
func TestCLITrainDataS3(t *testing.T) {
	s3 := testenv.StartS3(t)
	bucket := s3.Bucket(t)
	bucketDir := filepath.Join(s3.Dir, strings.TrimPrefix(bucket, "s3://"))
	local := t.TempDir()

	// the same files locally and in the bucket
	put := func(rel string, data []byte) {
		for _, root := range []string{local, bucketDir} {
			p := filepath.Join(root, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	src, err := os.ReadFile("/usr/local/go/src/unicode/utf8/utf8.go")
	if err != nil {
		src = []byte(strings.Repeat("package utf8 // RuneLen returns the number of bytes in the UTF-8 encoding of the rune.\n", 60))
	}
	put("corpus/a.go", src)
	put("corpus/b/notes.txt", []byte(strings.Repeat("the quick brown fox jumps over the lazy dog. ", 80)))
	put("corpus/.hidden/skip.txt", []byte("never read: a hidden folder"))
	var rows bytes.Buffer
	for i := 0; i < 30; i++ {
		j, _ := json.Marshal(map[string]string{"text": fmt.Sprintf("row %d: %s", i, strings.Repeat("lorem ipsum ", 1+i%5))})
		rows.Write(append(j, '\n'))
	}
	put("corpus/c/rows.jsonl", rows.Bytes())

	var recs bytes.Buffer
	for i := 0; i < 120; i++ {
		label := []string{"x", "y"}[i%2]
		j, _ := json.Marshal(map[string]string{"text": strings.Repeat(label+" q ", 2+i%9) + fmt.Sprint(i), "label": label,
			"prompt": fmt.Sprintf("say %c (%d):", 'a'+i%5, i), "answer": strings.Repeat(string(rune('a'+i%5)), 3)})
		recs.Write(append(j, '\n'))
	}
	put("labeled.jsonl", recs.Bytes())
	spans, err := os.ReadFile(writeRecords(t, codeRecords(60, 3)))
	if err != nil {
		t.Fatal(err)
	}
	put("spans.jsonl", spans)

	work := t.TempDir()
	cfgPath := filepath.Join(work, "config.json")
	cb, _ := json.Marshal(smallConfig())
	os.WriteFile(cfgPath, cb, 0o644)
	tok := byteLevelTokenizerJSON(t)
	from := filepath.Join(work, "from")
	c := smallConfig()
	p := NewParams[float32](ParamSpecs(c, 0))
	p.Init(c, 5)
	if err := SaveCheckpoint(from, c, p, &Generation{StopIDs: []int32{eosID}}, tok); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name, data string // data relative to the local folder and the bucket
		args       []string
	}{
		{"pretrain", "corpus", []string{"train", "pretrain", "--config", cfgPath, "--tokenizer", tok, "--tokens", "2560", "--batch", "2",
			"--seq-len", "64", "--negatives", "64", "--warmup", "2", "--eval-every", "0", "--generations", "0", "--val-permille", "200", "--val-tokens", "256"}},
		{"classify", "labeled.jsonl", []string{"train", "classify", "--from", from, "--label-field", "label", "--head-steps", "10",
			"--epochs", "1", "--batch-tokens", "256", "--max-tokens", "64"}},
		{"sft", "labeled.jsonl", []string{"train", "sft", "--from", from, "--epochs", "1", "--batch", "4", "--seq-len", "64", "--samples", "0"}},
		{"extract", "spans.jsonl", []string{"train", "extract", "--from", from, "--question", "code?", "--epochs", "1",
			"--batch-tokens", "512", "--max-tokens", "128", "--eval-every", "0", "--samples", "0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			train := func(data, out string) []byte {
				t.Helper()
				cmd := exec.Command(testenv.Binary(t), append(tc.args, "--data", data, "--out", out, "--workers", "2")...)
				cmd.Env = append(os.Environ(), s3.Env()...)
				if b, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("%s --data %s: %v\n%s", tc.name, data, err, b)
				}
				w, err := os.ReadFile(filepath.Join(out, "model.safetensors"))
				if err != nil {
					t.Fatal(err)
				}
				return w
			}
			want := train(filepath.Join(local, tc.data), filepath.Join(work, tc.name+"-local"))
			got := train(bucket+"/"+tc.data, filepath.Join(work, tc.name+"-s3"))
			if !bytes.Equal(got, want) {
				t.Fatalf("weights trained from %s/%s differ from those trained from the local copy", bucket, tc.data)
			}
		})
	}
	// the listing: sorted by key, the hidden folder skipped, sizes known;
	// an object named whole is explicit
	s3.Setenv(t)
	files, err := listInputs([]string{bucket + "/corpus"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimPrefix(f.Path, bucket+"/"))
		if f.Size <= 0 || f.Explicit {
			t.Errorf("%s: size %d, explicit %v", f.Path, f.Size, f.Explicit)
		}
	}
	if want := "corpus/a.go corpus/b/notes.txt corpus/c/rows.jsonl"; strings.Join(names, " ") != want {
		t.Errorf("listed %q, want %q", names, want)
	}
	if files, err := listInputs([]string{bucket + "/labeled.jsonl"}); err != nil || len(files) != 1 || !files[0].Explicit {
		t.Errorf("one object: %+v, %v", files, err)
	}
	if _, err := listInputs([]string{bucket + "/nothing-here"}); err == nil || !strings.Contains(err.Error(), "no objects found") {
		t.Errorf("empty prefix: %v", err)
	}
}
