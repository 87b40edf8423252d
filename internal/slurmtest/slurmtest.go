// Package slurmtest starts a throwaway single-node Slurm cluster for tests:
// munged, slurmctld and slurmd run by hand (no systemd) from a temporary
// folder, on free ports, and are stopped by their PIDs when the test ends.
// It needs the Debian packages slurmctld, slurmd, slurm-client and munge
// (scripts/test-deps.sh installs them); a missing one fails the test with a
// message saying to run `make deps`.
package slurmtest

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/onecore-dev/onecore/internal/testenv"
)

// Cluster is a running single-node Slurm.
type Cluster struct {
	Dir  string   // state, spool, logs, slurm.conf
	Conf string   // path of slurm.conf
	Node string   // the node's name (this host's short name)
	CPUs int      // CPUs the node offers
	Env  []string // environment for Slurm client commands (SLURM_CONF)
	t    testing.TB
}

// Start brings up munged, slurmctld and slurmd and waits until the node is
// idle. Everything is torn down with t.Cleanup.
func Start(t testing.TB) *Cluster {
	t.Helper()
	for _, tool := range []string{"munged", "slurmctld", "slurmd", "sbatch", "sinfo", "squeue", "sacct", "scontrol"} {
		if tool == "sacct" {
			continue // accounting is off; sacct is not needed
		}
		testenv.LookPath(t, tool)
	}
	// Unix socket paths are limited to ~100 bytes: keep the folder short.
	dir, err := os.MkdirTemp("", "slurm-")
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Dir: dir, t: t, CPUs: runtime.NumCPU()}
	t.Cleanup(func() { os.RemoveAll(dir) })
	host, err := exec.Command("hostname", "-s").Output()
	if err != nil {
		t.Fatalf("hostname -s: %v", err)
	}
	c.Node = strings.TrimSpace(string(host))

	// munge: a random 1 KiB key in a 0700 folder, the socket in a 0755 one.
	keyDir, sockDir := filepath.Join(dir, "mkey"), filepath.Join(dir, "msock")
	mustMkdir(t, keyDir, 0o700)
	mustMkdir(t, sockDir, 0o755)
	key := make([]byte, 1024)
	rand.Read(key)
	if err := os.WriteFile(filepath.Join(keyDir, "munge.key"), key, 0o400); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(sockDir, "munge.sock")
	c.daemon("munged", "munged", "--foreground", "--force",
		"--key-file="+filepath.Join(keyDir, "munge.key"), "--socket="+sock,
		"--pid-file="+filepath.Join(sockDir, "munged.pid"), "--log-file="+filepath.Join(dir, "munged.log"),
		"--seed-file="+filepath.Join(keyDir, "munged.seed"))
	waitFor(t, 10*time.Second, "munge socket", func() bool { _, err := os.Stat(sock); return err == nil })

	for _, d := range []string{"state", "spool"} {
		mustMkdir(t, filepath.Join(dir, d), 0o755)
	}
	ctldPort, dPort := freePort(t), freePort(t)
	c.Conf = filepath.Join(dir, "slurm.conf")
	conf := fmt.Sprintf(`ClusterName=onecoretest
SlurmctldHost=%[1]s(127.0.0.1)
SlurmctldPort=%[2]d
SlurmdPort=%[3]d
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=%[4]s
CredType=cred/munge
StateSaveLocation=%[5]s/state
SlurmdSpoolDir=%[5]s/spool
SlurmctldPidFile=%[5]s/slurmctld.pid
SlurmdPidFile=%[5]s/slurmd.pid
SlurmctldLogFile=%[5]s/slurmctld.log
SlurmdLogFile=%[5]s/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
MailProg=/bin/true
ReturnToService=2
MinJobAge=300
SlurmdTimeout=30
NodeName=%[1]s NodeAddr=127.0.0.1 CPUs=%[6]d State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
`, c.Node, ctldPort, dPort, sock, dir, c.CPUs)
	if err := os.WriteFile(c.Conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	c.Env = append(os.Environ(), "SLURM_CONF="+c.Conf)
	c.daemon("slurmctld", "slurmctld", "-D", "-i", "-f", c.Conf)
	c.daemon("slurmd", "slurmd", "-D", "-f", c.Conf, "-N", c.Node)
	waitFor(t, 30*time.Second, "node idle in sinfo", func() bool {
		out, err := c.Output("sinfo", "-h", "-N", "-o", "%t")
		return err == nil && strings.HasPrefix(strings.TrimSpace(out), "idle")
	})
	return c
}

// daemon starts a foreground daemon and stops it by PID at cleanup.
func (c *Cluster) daemon(name string, bin string, args ...string) {
	t := c.t
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "SLURM_CONF="+c.Conf)
	logf, err := os.Create(filepath.Join(c.Dir, name+".out"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	// A daemon that dies at once (bad config) is reported with its log.
	select {
	case <-done:
		t.Fatalf("%s exited at start:\n%s", name, c.Logs())
	case <-time.After(200 * time.Millisecond):
	}
}

// Output runs a Slurm client command against the cluster.
func (c *Cluster) Output(name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = c.Env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, errb.String())
	}
	return out.String(), nil
}

var jobIDRe = regexp.MustCompile(`Submitted batch job (\d+)`)

// Submit runs sbatch on a script file (in dir) and returns the job id.
func (c *Cluster) Submit(script, dir string) string {
	c.t.Helper()
	cmd := exec.Command("sbatch", script)
	cmd.Env, cmd.Dir = c.Env, dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		c.t.Fatalf("sbatch: %v\n%s\n%s", err, out, c.Logs())
	}
	m := jobIDRe.FindSubmatch(out)
	if m == nil {
		c.t.Fatalf("sbatch said %q", out)
	}
	return string(m[1])
}

// Wait waits until no task of the job is pending or running, and returns
// each array task's final state (scontrol), e.g. {"0": "COMPLETED"}.
func (c *Cluster) Wait(jobID string, timeout time.Duration) map[string]string {
	c.t.Helper()
	waitFor(c.t, timeout, "job "+jobID+" to finish", func() bool {
		out, err := c.Output("squeue", "-h", "-j", jobID, "-o", "%i")
		return err == nil && strings.TrimSpace(out) == ""
	})
	out, err := c.Output("scontrol", "show", "job", "-o", jobID)
	if err != nil {
		c.t.Fatalf("%v\n%s", err, c.Logs())
	}
	states := map[string]string{}
	taskRe := regexp.MustCompile(`ArrayTaskId=(\S+)`)
	stateRe := regexp.MustCompile(`JobState=(\S+)`)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		task, state := taskRe.FindStringSubmatch(line), stateRe.FindStringSubmatch(line)
		if task != nil && state != nil {
			states[task[1]] = state[1]
		}
	}
	return states
}

// Logs returns the daemons' logs (for failure messages).
func (c *Cluster) Logs() string {
	var b strings.Builder
	for _, f := range []string{"munged.log", "slurmctld.log", "slurmd.log", "munged.out", "slurmctld.out", "slurmd.out"} {
		data, err := os.ReadFile(filepath.Join(c.Dir, f))
		if err != nil {
			continue
		}
		if len(data) > 4000 {
			data = data[len(data)-4000:]
		}
		fmt.Fprintf(&b, "--- %s\n%s\n", f, data)
	}
	return b.String()
}

func mustMkdir(t testing.TB, dir string, mode os.FileMode) {
	if err := os.MkdirAll(dir, mode); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, mode)
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitFor(t testing.TB, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
