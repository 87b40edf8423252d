package pipeline

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// Crash points let the tests SIGKILL a real onecore process at exact moments
// (mid-write, between a part's rename and its marker, ...) on top of the
// random kills: ONECORE_TEST_CRASH=point:n kills the process the n-th time
// it reaches point. Unset (always, outside tests) it costs one atomic load.
var crashAt = parseCrash(os.Getenv("ONECORE_TEST_CRASH"))

type crashSpec struct {
	point string
	n     int64
	hits  atomic.Int64
}

func parseCrash(s string) *crashSpec {
	p, n, ok := strings.Cut(s, ":")
	if !ok {
		return nil
	}
	k, err := strconv.ParseInt(n, 10, 64)
	if err != nil || k < 1 {
		return nil
	}
	return &crashSpec{point: p, n: k}
}

// crashPoint kills the process here if the test asked for it.
func crashPoint(point string) {
	c := crashAt
	if c == nil || c.point != point {
		return
	}
	if c.hits.Add(1) == c.n {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // never returns
	}
}
