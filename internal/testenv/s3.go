package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// VersityGWVersion is the versitygw release scripts/test-deps.sh installs.
const VersityGWVersion = "v1.8.0"

// VersityGW returns the versitygw binary (an S3 server over a local
// folder, Apache-2.0): on $PATH, else in $GOBIN or $(go env GOPATH)/bin,
// where `go install` puts it. Missing, it fails the test (never skips).
func VersityGW(t testing.TB) string {
	t.Helper()
	return GoTool(t, "versitygw", "github.com/versity/versitygw/cmd/versitygw@"+VersityGWVersion)
}

// GoTool returns the program name that scripts/test-deps.sh installs with
// `go install pkg`: on $PATH, else in $GOBIN, $(go env GOPATH)/bin or
// ~/go/bin. Missing, it fails the test (never skips).
func GoTool(t testing.TB, name, pkg string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	var dirs []string
	if d := os.Getenv("GOBIN"); d != "" {
		dirs = append(dirs, d)
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		for _, d := range filepath.SplitList(strings.TrimSpace(string(out))) {
			dirs = append(dirs, filepath.Join(d, "bin"))
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, "go", "bin"))
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	t.Fatalf("%s not found on $PATH or in %v: run `make deps` (scripts/test-deps.sh), or go install %s", name, dirs, pkg)
	return ""
}

// S3 is a real S3 server for a test: versitygw serving a temporary folder
// on loopback, stopped when the test ends.
type S3 struct {
	Endpoint             string // http://127.0.0.1:PORT
	Dir                  string // the folder it serves: one subfolder per bucket
	AccessKey, SecretKey string
}

// StartS3 starts versitygw for the test.
func StartS3(t testing.TB) *S3 {
	t.Helper()
	bin := VersityGW(t)
	addr := freeAddr(t)
	s := &S3{Endpoint: "http://" + addr, Dir: t.TempDir(), AccessKey: "onecoretest", SecretKey: "onecoretestsecret"}
	cmd := exec.Command(bin, "--port", addr, "posix", s.Dir)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+s.AccessKey, "ROOT_SECRET_KEY="+s.SecretKey)
	startServer(t, "versitygw", addr, cmd)
	return s
}

// freeAddr returns a loopback address with a port nobody listens on now.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// startServer starts a test server's command with its output in a log
// file, stops it when the test ends, and waits until it listens on addr.
func startServer(t testing.TB, what, addr string, cmd *exec.Cmd) {
	t.Helper()
	logf, err := os.CreateTemp(t.TempDir(), "server-*.log")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", what, err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		logf.Close()
	})
	waitListening(t, what, addr, logf.Name())
}

// waitListening waits up to a minute for a server to accept connections
// on addr, failing the test with its log otherwise.
func waitListening(t testing.TB, what, addr, logPath string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logPath)
			t.Fatalf("%s did not listen on %s within 60s:\n%s", what, addr, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Bucket creates a bucket with a name unique to this call (onecore opens
// each bucket once per process, so tests never share one) and returns its
// URL, s3://NAME.
func (s *S3) Bucket(t testing.TB) string {
	t.Helper()
	name := bucketName()
	if err := os.Mkdir(filepath.Join(s.Dir, name), 0o755); err != nil {
		t.Fatal(err)
	}
	return "s3://" + name
}

// Env is the environment that points onecore (the AWS SDK) at the server.
func (s *S3) Env() []string {
	return s.EnvFor(s.Endpoint)
}

// EnvFor is Env with another endpoint (a fault-injecting proxy in front of
// the server, say).
func (s *S3) EnvFor(endpoint string) []string {
	return []string{
		"AWS_ACCESS_KEY_ID=" + s.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + s.SecretKey,
		"AWS_ENDPOINT_URL=" + endpoint,
		"AWS_REGION=us-east-1",
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=/dev/null",
		"AWS_SHARED_CREDENTIALS_FILE=/dev/null",
	}
}

// Setenv sets Env in this test process (for code that runs in it).
func (s *S3) Setenv(t testing.TB) { s.SetenvFor(t, s.Endpoint) }

// SetenvFor is Setenv with another endpoint.
func (s *S3) SetenvFor(t testing.TB, endpoint string) {
	t.Helper()
	setenv(t, s.EnvFor(endpoint))
}

// bucketName is a bucket name unique to this call: onecore opens each
// bucket once per process, so tests never share one.
func bucketName() string {
	var b [4]byte
	rand.Read(b[:])
	return "t" + hex.EncodeToString(b[:])
}

// setenv sets each KEY=VALUE of env for the test.
func setenv(t testing.TB, env []string) {
	t.Helper()
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// String describes the server for messages.
func (s *S3) String() string { return fmt.Sprintf("versitygw at %s serving %s", s.Endpoint, s.Dir) }

// FaultProxy is an HTTP proxy in front of an S3 server that fails some
// requests on purpose, to exercise retries: every Every-th request is
// answered 503 SlowDown, dropped (the connection closed without a reply),
// or, for a GET, cut off halfway through its body, in turn.
type FaultProxy struct {
	URL   string
	Every int64 // 0: no faults
	n     atomic.Int64
	// Injected counts the faults injected, by kind.
	Slow, Dropped, Cut atomic.Int64
}

// StartFaultProxy starts a proxy to target (http://host:port), stopped
// when the test ends.
func StartFaultProxy(t testing.TB, target string, every int64) *FaultProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &FaultProxy{Every: every}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := p.n.Add(1)
		if p.Every <= 0 || i%p.Every != 0 {
			rp.ServeHTTP(w, r)
			return
		}
		switch (i / p.Every) % 3 {
		case 0:
			p.Slow.Add(1)
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
		case 1:
			p.Dropped.Add(1)
			if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
				c.Close()
			}
		default:
			if r.Method != http.MethodGet {
				rp.ServeHTTP(w, r)
				return
			}
			p.Cut.Add(1)
			rec := httptest.NewRecorder()
			rp.ServeHTTP(rec, r)
			body := rec.Body.Bytes()
			c, bw, err := w.(http.Hijacker).Hijack()
			if err != nil {
				return
			}
			defer c.Close()
			fmt.Fprintf(bw, "HTTP/1.1 %d %s\r\n", rec.Code, http.StatusText(rec.Code))
			for k, vs := range rec.Header() {
				for _, v := range vs {
					fmt.Fprintf(bw, "%s: %s\r\n", k, v)
				}
			}
			if rec.Header().Get("Content-Length") == "" {
				fmt.Fprintf(bw, "Content-Length: %d\r\n", len(body))
			}
			bw.WriteString("\r\n")
			bw.Write(body[:len(body)/2])
			bw.Flush()
		}
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// Injected is the number of faults injected so far.
func (p *FaultProxy) Injected() int64 { return p.Slow.Load() + p.Dropped.Load() + p.Cut.Load() }
