package slurmtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestArrayJob runs a 3-task array job that writes its task id.
func TestArrayJob(t *testing.T) {
	c := Start(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "job.sh")
	os.WriteFile(script, []byte("#!/bin/bash\n#SBATCH --array=0-2\n#SBATCH --output=log-%a.txt\necho \"$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT\" > out-$SLURM_ARRAY_TASK_ID.txt\n"), 0o755)
	id := c.Submit(script, dir)
	states := c.Wait(id, 60*time.Second)
	for i, want := range []string{"0/3", "1/3", "2/3"} {
		b, err := os.ReadFile(filepath.Join(dir, "out-"+string(rune('0'+i))+".txt"))
		if err != nil || strings.TrimSpace(string(b)) != want {
			t.Fatalf("task %d: %q %v (states %v)\n%s", i, b, err, states, c.Logs())
		}
	}
	for k, s := range states {
		if s != "COMPLETED" {
			t.Fatalf("task %s: %s", k, s)
		}
	}
}
