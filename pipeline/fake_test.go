package pipeline

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/onecore-dev/onecore/jobs"
)

// memSource serves shards from memory: each row is a Doc, a *RowError or,
// as the last entry, a *FileError.
type memSource struct {
	shards map[string][]any
	opened atomic.Int64
	// onNext, when set, runs before every row is returned (kill points).
	onNext func()
	// fractions makes the readers Fractioners (rows read of the shard's rows).
	fractions bool
}

func (m *memSource) Open(s Shard, _ ReadOptions) (DocReader, error) {
	m.opened.Add(1)
	rows, ok := m.shards[s.Path]
	if !ok {
		return nil, &FileError{File: s.Path, Err: errors.New("no such file")}
	}
	if m.fractions {
		return &fracReader{memReader: memReader{rows: rows, src: m}}, nil
	}
	return &memReader{rows: rows, src: m}, nil
}

// fracReader is a memReader that reports its fraction read.
type fracReader struct {
	memReader
	read atomic.Int64
}

func (r *fracReader) Next() (Doc, error) {
	d, err := r.memReader.Next()
	if err != io.EOF {
		r.read.Add(1)
	}
	return d, err
}

func (r *fracReader) Fraction() float64 { return float64(r.read.Load()) / float64(len(r.rows)) }

type memReader struct {
	rows []any
	i    int
	src  *memSource
}

func (r *memReader) Next() (Doc, error) {
	if r.src.onNext != nil {
		r.src.onNext()
	}
	if r.i >= len(r.rows) {
		return Doc{}, io.EOF
	}
	v := r.rows[r.i]
	switch v := v.(type) {
	case Doc:
		r.i++
		return v, nil
	case *RowError:
		r.i++
		return Doc{}, v
	case *FileError:
		return Doc{}, v // sticky
	}
	panic("bad row")
}

func (r *memReader) Close() error { return nil }

// byteTok maps each byte to id 3+b (0..2 are special).
type byteTok struct{}

func (byteTok) Encode(s string) []int32 {
	out := make([]int32, len(s))
	for i := 0; i < len(s); i++ {
		out[i] = int32(s[i]) + 3
	}
	return out
}

func (byteTok) Decode(ids []int32) string {
	b := make([]byte, 0, len(ids))
	for _, id := range ids {
		if id >= 3 {
			b = append(b, byte(id-3))
		}
	}
	return string(b)
}

// fakeModel computes per-document outputs that depend only on the
// document's own tokens (as the real engine must), so any packing or worker
// split gives identical results.
type fakeModel struct {
	labels []string
	// head and thresholds make the fake's head multilabel or regression
	// ("" is multiclass).
	head       string
	thresholds []float32
	workers    atomic.Int64
	calls      atomic.Int64
	failAt     int64 // Forward call number that fails (0: never)
	delay      time.Duration
}

func (m *fakeModel) NewWorker() (Worker, error) {
	m.workers.Add(1)
	return &fakeWorker{m: m}, nil
}
func (m *fakeModel) Labels() []string              { return m.labels }
func (m *fakeModel) SpanHead() (bool, SpanOptions) { return false, SpanOptions{} }
func (m *fakeModel) ClassHead() (string, []float32) {
	if m.head == "" {
		return jobs.HeadMulticlass, nil
	}
	return m.head, m.thresholds
}

// Template gives task extract the default template, as a generation-tuned
// checkpoint records its prompt (an extract task refuses a classifier
// without one).
func (m *fakeModel) Template(task string) string {
	if task == "extract" {
		return defaultExtractTemplate
	}
	return ""
}
func (m *fakeModel) StopIDs() []int32 { return []int32{EOS} }

type fakeWorker struct{ m *fakeModel }

func (w *fakeWorker) Forward(docs [][]int32, want Want) ([]Output, error) {
	time.Sleep(w.m.delay)
	if n := w.m.calls.Add(1); w.m.failAt > 0 && n == w.m.failAt {
		return nil, errors.New("injected engine failure")
	}
	outs := make([]Output, len(docs))
	for i, d := range docs {
		if len(d) == 0 || d[0] != BOS {
			return nil, fmt.Errorf("doc %d does not start with <bos>", i)
		}
		if want.LogProbs {
			lp := make([]float32, len(d)-1)
			for t := range lp {
				lp[t] = -float32(1+(int(d[t+1])*7+t)%11) / 4
			}
			outs[i].LogProbs = lp
		}
		var sum int64
		for _, v := range d {
			sum += int64(v)
		}
		if want.Mean {
			outs[i].Mean = []float32{float32(sum) / float32(len(d)), float32(len(d))}
		}
		if want.ClassLogits {
			l := make([]float32, len(w.m.labels))
			for k := range l {
				l[k] = float32((sum + int64(k)*13) % 17)
			}
			outs[i].ClassLogits = l
		}
	}
	return outs, nil
}

func (w *fakeWorker) Generate(prompts [][]int32, opt GenOptions) ([]Generation, error) {
	out := make([]Generation, len(prompts))
	for i, p := range prompts {
		var g []int32
		for len(g) < opt.MaxNew {
			var next int32
			if opt.Allow != nil {
				a := opt.Allow(i, g)
				if a == nil {
					break
				}
				next = a[int(p[len(p)/2]+int32(len(g)))%len(a)]
			} else {
				next = p[(len(p)/3+len(g))%len(p)]
				if len(g) == 3 {
					next = EOS
				}
			}
			if next == EOS {
				out[i].Stopped = true
				break
			}
			g = append(g, next)
			out[i].LogProb -= 0.5
		}
		out[i].Tokens = g
	}
	return out, nil
}

func (w *fakeWorker) Close() error { return nil }

// jsonWriter is a PartWriter writing JSON Lines atomically (the tests'
// stand-in for writers.Create).
type jsonWriter struct {
	path string
	f    *os.File
	bw   *bufio.Writer
}

func createJSON(path, format string, schema *arrow.Schema) (PartWriter, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, err
	}
	return &jsonWriter{path: path, f: f, bw: bufio.NewWriter(f)}, nil
}

func (w *jsonWriter) Write(rec arrow.RecordBatch) error { return array.RecordToJSON(rec, w.bw) }
func (w *jsonWriter) Close() error {
	if err := w.bw.Flush(); err != nil {
		return err
	}
	if err := w.f.Close(); err != nil {
		return err
	}
	return os.Rename(w.f.Name(), w.path)
}
func (w *jsonWriter) Abort() error { w.f.Close(); return os.Remove(w.f.Name()) }

// readRows reads every JSON row of the parts in dir (or of one file).
func readRows(t *testing.T, path string) []map[string]any {
	t.Helper()
	var files []string
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		files, _ = filepath.Glob(filepath.Join(path, "part-*"))
	} else {
		files = []string{path}
	}
	sort.Strings(files)
	var rows []map[string]any
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if line == "" {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("%s: %v: %q", f, err, line)
			}
			rows = append(rows, m)
		}
	}
	return rows
}
