package blobstore

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"gocloud.dev/gcerrors"
)

// maxAttempts bounds the attempts of one request (the SDK's and ours).
const maxAttempts = 10

// maxBackoff is the longest wait between two attempts: 5s, or
// $ONECORE_RETRY_MAX_BACKOFF (a Go duration), which tests shorten.
func maxBackoff() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("ONECORE_RETRY_MAX_BACKOFF")); err == nil && d > 0 {
		return d
	}
	return 5 * time.Second
}

// RetryCounts are the process's retries so far, by cause.
type RetryCounts struct {
	Throttled int64 `json:"throttled"` // 503 SlowDown, 429, other throttling replies
	Network   int64 `json:"network"`   // connection resets, dropped connections, truncated bodies
	Other     int64 `json:"other"`     // other retryable failures (500s, timeouts)
}

// Total is the number of retries of any cause.
func (c RetryCounts) Total() int64 { return c.Throttled + c.Network + c.Other }

var throttled, network, other atomic.Int64

// Retries returns the retries this process has made so far.
func Retries() RetryCounts {
	return RetryCounts{Throttled: throttled.Load(), Network: network.Load(), Other: other.Load()}
}

// count records one retry caused by err.
func count(err error) {
	switch classify(err) {
	case causeThrottle:
		throttled.Add(1)
	case causeNetwork:
		network.Add(1)
	default:
		other.Add(1)
	}
}

type cause int

const (
	causeNone cause = iota
	causeThrottle
	causeNetwork
	causeOther
)

// classify tells why a request failed, and whether trying again can help.
func classify(err error) cause {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return causeNone
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "SlowDown", "Throttling", "ThrottlingException", "RequestLimitExceeded", "TooManyRequests", "ServiceUnavailable":
			return causeThrottle
		}
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		switch s := re.HTTPStatusCode(); {
		case s == 503 || s == 429:
			return causeThrottle
		case s >= 500:
			return causeOther
		default:
			return causeNone
		}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) {
		return causeNetwork
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return causeNetwork
	}
	msg := err.Error()
	for _, s := range []string{"connection reset", "broken pipe", "unexpected EOF", "server closed", "EOF"} {
		if strings.Contains(msg, s) {
			return causeNetwork
		}
	}
	switch gcerrors.Code(err) {
	case gcerrors.ResourceExhausted:
		return causeThrottle
	case gcerrors.Internal:
		return causeOther
	}
	return causeNone
}

// backoff is the wait before retry attempt (1-based): exponential from
// 50ms, capped at maxBackoff, with full jitter so that many workers
// throttled together do not come back together.
func backoff(attempt int) time.Duration {
	d := 50 * time.Millisecond << min(attempt, 16)
	d = min(d, maxBackoff())
	return time.Duration(rand.Int64N(int64(d)) + 1)
}

// withRetry runs f until it succeeds, fails for good, or maxAttempts is
// reached. The SDK already retries each request; this outer loop is for
// what the SDK cannot see: a body cut off after the response arrived, or a
// failure that outlived the SDK's attempts.
func withRetry(ctx context.Context, f func() error) error {
	for attempt := 1; ; attempt++ {
		err := f()
		if err == nil || attempt >= maxAttempts || classify(err) == causeNone {
			return err
		}
		count(err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff(attempt)):
		}
	}
}

// countingRetryer is the SDK's standard retryer, counting the retries it
// decides on.
type countingRetryer struct {
	*retry.Standard
}

// RetryDelay implements aws.Retryer; it is called once per retry.
func (r *countingRetryer) RetryDelay(attempt int, err error) (time.Duration, error) {
	count(err)
	return r.Standard.RetryDelay(attempt, err)
}
