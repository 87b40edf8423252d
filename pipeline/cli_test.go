package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/onecore-dev/onecore/internal/testenv"
	"github.com/onecore-dev/onecore/jobs"
)

// cliRun runs the onecore binary; it returns stdout, stderr and the exit
// status (-9 when killed by SIGKILL).
func cliRun(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(testenv.Binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), exitStatus(err)
}

func exitStatus(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return -int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// partIDs reads the id column of every part in dir (or of one file).
func partIDs(t *testing.T, path, format string) []string {
	t.Helper()
	files := []string{path}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		files, _ = filepath.Glob(filepath.Join(path, "part-*."+format))
	}
	var ids []string
	for _, f := range files {
		err := copyRecords(f, format, func(rec arrow.RecordBatch) error {
			col := rec.Column(int(rec.Schema().FieldIndices(jobs.ColID)[0])).(*array.String)
			for i := 0; i < col.Len(); i++ {
				ids = append(ids, col.Value(i))
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	sort.Strings(ids)
	return ids
}

// crashCorpus writes 6 mixed shards of 30 documents, with one malformed
// line, and returns the ids that must come out.
func crashCorpus(t *testing.T, dir string) []string {
	docs := genDocs(180, 7)
	writeShards(t, dir, docs, 6)
	// One malformed line in a JSONL shard (a reject that must appear once).
	p := filepath.Join(dir, "s02.jsonl")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, append([]byte("{not json\n"), b...), 0o644)
	var ids []string
	for _, d := range docs {
		ids = append(ids, d.id)
	}
	sort.Strings(ids)
	return ids
}

func countRejects(t *testing.T, dir string) int {
	n := 0
	files, _ := filepath.Glob(filepath.Join(dir, jobs.RejectsDir, "*.jsonl"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		n += strings.Count(string(b), "\n")
	}
	return n
}

// TestKillResumeExactlyOnce SIGKILLs real onecore processes at exact points
// (reading, after an engine pack, mid-part write, between a part's rename
// and its rejects / marker, after a marker, while assembling a single
// output file) and at random times, then reruns the same command: every
// input row ends up exactly once (in a part or in the rejects).
func TestKillResumeExactlyOnce(t *testing.T) {
	tmp := t.TempDir()
	model := filepath.Join(tmp, "model")
	writeTinyModel(t, model)
	in := filepath.Join(tmp, "in")
	want := crashCorpus(t, in)

	type scenario struct {
		crash string        // ONECORE_TEST_CRASH
		after time.Duration // or a kill after this long
		file  bool          // single merged output file
	}
	var scs []scenario
	for _, c := range []string{"read:1", "read:100", "engine:1", "engine:6", "write:1", "write:4", "renamed:1", "renamed:3", "rejects:1", "reject:1", "marked:1", "marked:5"} {
		scs = append(scs, scenario{crash: c})
	}
	scs = append(scs, scenario{crash: "merge:2", file: true}, scenario{crash: "merged:1", file: true}, scenario{crash: "renamed:2", file: true})
	for _, d := range []time.Duration{100, 250, 500} {
		scs = append(scs, scenario{after: d * time.Millisecond})
	}
	for i, sc := range scs {
		name := sc.crash
		if name == "" {
			name = sc.after.String()
		}
		if sc.file {
			name += "/file"
		}
		t.Run(strings.ReplaceAll(name, ":", "@"), func(t *testing.T) {
			out := filepath.Join(tmp, fmt.Sprintf("out%d", i))
			if sc.file {
				out += ".parquet"
			} else {
				out += "/"
			}
			args := []string{"extract", "--task", "score", "--model", model, "--in", in, "--out", out, "--workers", "2", "--pack-tokens", "256", "--progress", "none"}
			if sc.crash != "" {
				_, stderr, code := cliRun(t, []string{"ONECORE_TEST_CRASH=" + sc.crash}, args...)
				if code != -int(syscall.SIGKILL) {
					t.Fatalf("crash run at %s: exit %d (not killed)\n%s", sc.crash, code, stderr)
				}
			} else {
				cmd := exec.Command(testenv.Binary(t), args...)
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				time.Sleep(sc.after)
				cmd.Process.Kill()
				cmd.Wait()
			}
			stdout, stderr, code := cliRun(t, nil, args...)
			if code != 3 && code != 0 {
				t.Fatalf("rerun: exit %d\n%s", code, stderr)
			}
			var sum Summary
			if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
				t.Fatalf("summary: %v\n%s", err, stdout)
			}
			got := partIDs(t, strings.TrimSuffix(out, "/"), "parquet")
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("after resume: %d ids, want %d exactly once", len(got), len(want))
			}
			rej := 0
			if sc.file {
				b, _ := os.ReadFile(out + ".rejects.jsonl")
				rej = strings.Count(string(b), "\n")
				if _, err := os.Stat(out + StagingSuffix); !os.IsNotExist(err) {
					t.Fatal("staging folder left")
				}
			} else {
				rej = countRejects(t, out)
			}
			if rej != 1 {
				t.Fatalf("%d rejects, want exactly 1", rej)
			}
			left, _ := filepath.Glob(filepath.Join(strings.TrimSuffix(out, "/"), ".*tmp*"))
			if len(left) > 0 {
				t.Fatalf("temporaries left: %v", left)
			}
		})
	}
}
