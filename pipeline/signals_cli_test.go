package pipeline

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/onecore-dev/onecore/engine"
	"github.com/onecore-dev/onecore/internal/testenv"
	"github.com/onecore-dev/onecore/jobs"
)

// startCLI starts the onecore binary with stderr collected line by line;
// waitFor blocks until a line containing s appears (or fails after 60s),
// and wait returns the exit status and all of stderr.
func startCLI(t *testing.T, args ...string) (cmd *exec.Cmd, waitFor func(s string), wait func() (int, string)) {
	t.Helper()
	cmd = exec.Command(testenv.Binary(t), args...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lines []string
	eof := make(chan struct{})
	go func() {
		defer close(eof)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			mu.Lock()
			lines = append(lines, sc.Text())
			mu.Unlock()
		}
	}()
	all := func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(lines, "\n")
	}
	waitFor = func(s string) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); !strings.Contains(all(), s); time.Sleep(100 * time.Microsecond) {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatalf("no %q on stderr within 60s:\n%s", s, all())
			}
		}
	}
	wait = func() (int, string) {
		<-eof
		return exitStatus(cmd.Wait()), all()
	}
	return cmd, waitFor, wait
}

// TestCLISignals (issue 19.9): a second SIGINT sent as soon as the first
// was received exits 130 at once (it was lost, or killed the process, in
// a ~10 ms window while the handler re-registered), and a SIGINT while the model loads exits 130 with a
// message instead of killing the process silently.
func TestCLISignals(t *testing.T) {
	tmp := t.TempDir()
	t.Run("two signals back to back", func(t *testing.T) {
		model := filepath.Join(tmp, "model")
		writeTinyModel(t, model)
		in := filepath.Join(tmp, "in")
		writeShards(t, in, genDocs(600, 23), 12)
		out := filepath.Join(tmp, "out")
		cmd, waitFor, wait := startCLI(t, "score", "--model", model, "--in", in, "--out", out, "--workers", "1", "--pack-tokens", "256", "--progress", "none")
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(time.Millisecond) {
			if m, _ := filepath.Glob(filepath.Join(out, jobs.DoneDir, "*.json")); len(m) > 0 {
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatal("no shard finished within 60s")
			}
		}
		// Two signals sent by one kill(2) after another are merged by the
		// kernel (and by Go's signal queue) into one when the first is not
		// yet delivered: send the second as soon as the first was received.
		cmd.Process.Signal(os.Interrupt)
		waitFor("signal again to exit now")
		cmd.Process.Signal(os.Interrupt)
		code, stderr := wait()
		if code != 130 || !strings.Contains(stderr, "second signal, exiting now") {
			t.Fatalf("exit %d, want %d with the second signal's message:\n%s", code, 130, stderr)
		}
	})
	t.Run("signal while the model loads", func(t *testing.T) {
		// A model that takes ~0.1-0.3 s to load (24 layers of the default
		// shapes, 36 MB): the signal lands well inside the load.
		model := filepath.Join(tmp, "big")
		c := engine.DefaultConfig()
		c.Layers = nil
		for i := range 24 {
			c.Layers = append(c.Layers, []string{"lin", "swa"}[i%2])
		}
		if err := engine.SaveCheckpoint(model, &c, engine.InitTensors(&c, 5), nil); err != nil {
			t.Fatal(err)
		}
		writeTokenizer(t, filepath.Join(model, "tokenizer.json"))
		in := filepath.Join(tmp, "in2")
		writeShards(t, in, genDocs(20, 24), 1)
		out := filepath.Join(tmp, "out2")
		cmd, waitFor, wait := startCLI(t, "score", "--model", model, "--in", in, "--out", out, "--progress", "none")
		waitFor("loading model")
		start := time.Now()
		cmd.Process.Signal(syscall.SIGINT)
		code, stderr := wait()
		if code != 130 || !strings.Contains(stderr, "interrupt before the run started") {
			t.Fatalf("exit %d, want %d with a message:\n%s", code, 130, stderr)
		}
		if strings.Contains(stderr, "msg=extract") {
			t.Errorf("the run started after the signal:\n%s", stderr)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s was created: the signal must stop before anything is written", out)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("exit took %v after the signal", d)
		}
	})
}
