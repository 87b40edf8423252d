package pipeline

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/onecore-dev/onecore/internal/slurmtest"
	"github.com/onecore-dev/onecore/internal/testenv"
	"github.com/onecore-dev/onecore/jobs"
)

// TestSlurmArray submits `onecore jobs render slurm` output to a real
// single-node Slurm: a 3-task array over 7 shards. Every shard is processed
// by exactly one task, the union of the parts is the input, and
// resubmitting the same script finds everything done.
func TestSlurmArray(t *testing.T) {
	c := slurmtest.Start(t)
	tmp := t.TempDir()
	model := filepath.Join(tmp, "model")
	writeTinyModel(t, model)
	in := filepath.Join(tmp, "in")
	docs := genDocs(140, 12)
	writeShards(t, in, docs, 7)
	out := filepath.Join(tmp, "out")
	jobFile := filepath.Join(tmp, "score.yaml")
	os.WriteFile(jobFile, []byte("task: score\nkeep: [url]\nin: "+in+"\nout: "+out+"\n"), 0o644)

	render := exec.Command(testenv.Binary(t), "jobs", "render", "slurm", "--job", jobFile, "--world", "3",
		"--cpus", "1", "--model", model, "--binary", testenv.Binary(t))
	script, err := render.Output()
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	scriptPath := filepath.Join(tmp, "score.sbatch")
	os.WriteFile(scriptPath, script, 0o755)

	for round := 0; round < 2; round++ {
		id := c.Submit(scriptPath, tmp)
		states := c.Wait(id, 90*time.Second)
		if len(states) != 3 {
			t.Fatalf("round %d: array tasks %v\n%s", round, states, c.Logs())
		}
		for task, s := range states {
			if s != "COMPLETED" {
				logs, _ := filepath.Glob(filepath.Join(tmp, "*.log"))
				var b strings.Builder
				for _, l := range logs {
					d, _ := os.ReadFile(l)
					b.Write(d)
				}
				t.Fatalf("round %d: task %s %s\n%s", round, task, s, b.String())
			}
		}
	}
	logs, _ := filepath.Glob(filepath.Join(tmp, "onecore-score-*.log"))
	if len(logs) != 6 {
		t.Fatalf("%d task logs, want 6", len(logs))
	}
	ranks := map[string]bool{}
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		s := string(b)
		if !strings.Contains(s, "placement=\"slurm array\"") {
			t.Fatalf("task did not take its rank from Slurm:\n%s", s)
		}
		for _, r := range []string{"rank=0", "rank=1", "rank=2"} {
			if strings.Contains(s, r+" ") {
				ranks[r] = true
			}
		}
	}
	if len(ranks) != 3 {
		t.Fatalf("ranks seen: %v", ranks)
	}
	markers, _ := filepath.Glob(filepath.Join(out, jobs.DoneDir, "*.json"))
	if len(markers) != 7 {
		t.Fatalf("%d completion markers, want 7", len(markers))
	}
	got := partIDs(t, out, "parquet")
	var want []string
	for _, d := range docs {
		want = append(want, d.id)
	}
	sort.Strings(want)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("union of parts: %d ids, want %d exactly once", len(got), len(want))
	}
}
