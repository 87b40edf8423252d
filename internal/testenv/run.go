package testenv

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// Run runs the onecore binary (see Binary) with extra environment and the
// given standard input, and returns its stdout, stderr and exit status:
// the exit code, −N when killed by signal N, −1 when it could not be
// started (the reason is appended to stderr).
func Run(t testing.TB, env []string, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(Binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), ExitStatus(err, &errb)
}

// ExitStatus turns the error of exec.Cmd.Run or Wait into an exit status:
// 0, the exit code, −N when killed by signal N, or −1 when the command did
// not run (the error is written to stderr when that is non-nil).
func ExitStatus(err error, stderr *bytes.Buffer) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return -int(ws.Signal())
		}
		return ee.ExitCode()
	default:
		if stderr != nil {
			stderr.WriteString("\n" + err.Error())
		}
		return -1
	}
}
