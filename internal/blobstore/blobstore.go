// Package blobstore is onecore's one door to object storage: it tells
// local paths from URLs (s3://, gs://, azblob://, file://), opens buckets
// through gocloud.dev's blob drivers, and gives the readers and writers
// what they need from an object: a ranged io.ReaderAt (Parquet), a
// resumable stream (JSON Lines), an upload that becomes visible only when
// committed, conditional creates (If-None-Match) for completion markers and
// leases, and retries with backoff and jitter, counted for the summary.
//
// Paths of objects are plain strings "scheme://bucket/key" everywhere in
// onecore, so the code that builds part and marker names stays the same for
// both kinds of output. Query parameters of a URL (endpoint, region,
// use_path_style, ...) configure its bucket: Normalize strips them from the
// path and remembers them per bucket, so every object of that bucket is
// opened with them.
package blobstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/aws/smithy-go"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// Schemes lists the object-storage URL schemes onecore reads and writes,
// for messages.
const Schemes = "s3://, gs://, azblob:// or file://"

var schemeRE = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*)://`)

// Scheme returns the URL scheme of p ("s3", "file", ...), lower-cased, or ""
// when p is a plain local path.
func Scheme(p string) string {
	m := schemeRE.FindStringSubmatch(p)
	if m == nil {
		return ""
	}
	return strings.ToLower(m[1])
}

// Remote reports whether p names an object in object storage (s3://,
// gs://, azblob://). Local paths and file:// URLs are not remote.
func Remote(p string) bool {
	switch Scheme(p) {
	case "s3", "gs", "azblob":
		return true
	}
	return false
}

// UsageError is a location the command line cannot accept (an unknown
// scheme, a malformed URL): the commands turn it into exit status 2.
type UsageError struct {
	Flag, Path string
	Reason     string
}

// Error names the flag, the location and what is wrong with it.
func (e *UsageError) Error() string {
	return fmt.Sprintf("%s %s: %s", e.Flag, e.Path, e.Reason)
}

// Normalize checks the location p given to flag (for messages, e.g.
// "--in") and returns it in the form the rest of onecore uses: a local path
// for a plain path or a file:// URL, and "scheme://bucket/key" without its
// query for object storage, the query being remembered as the bucket's
// configuration. An unknown scheme is a *UsageError: it must never be taken
// for a local directory named "s3:" or "hdfs:".
func Normalize(flag, p string) (string, error) {
	sch := Scheme(p)
	switch sch {
	case "":
		return p, nil
	case "file":
		u, err := url.Parse(p)
		if err != nil {
			return "", &UsageError{flag, p, "not a valid file:// URL: " + err.Error()}
		}
		if u.Host != "" && u.Host != "localhost" {
			return "", &UsageError{flag, p, fmt.Sprintf("file:// URL with host %q: want file:///absolute/path", u.Host)}
		}
		lp := u.Path
		if strings.HasSuffix(p, "/") && !strings.HasSuffix(lp, "/") {
			lp += "/"
		}
		if lp == "" {
			return "", &UsageError{flag, p, "file:// URL without a path"}
		}
		return lp, nil
	case "s3", "gs", "azblob":
		u, err := url.Parse(p)
		if err != nil {
			return "", &UsageError{flag, p, "not a valid URL: " + err.Error()}
		}
		if u.Host == "" {
			return "", &UsageError{flag, p, "no bucket: want " + sch + "://BUCKET/PREFIX"}
		}
		if err := setQuery(sch, u.Host, u.RawQuery); err != nil {
			return "", &UsageError{flag, p, err.Error()}
		}
		return sch + "://" + u.Host + u.Path, nil
	}
	return "", &UsageError{flag, p, fmt.Sprintf("unknown scheme %q (want %s, or a local path)", sch+"://", Schemes)}
}

// Loc is a parsed object location.
type Loc struct {
	Scheme, Bucket string
	Key            string // without a leading slash; "" for the bucket root
}

// Parse splits a normalized remote path into its parts.
func Parse(p string) (Loc, error) {
	sch := Scheme(p)
	if !Remote(p) {
		return Loc{}, fmt.Errorf("%s: not an object-storage URL (want %s)", p, Schemes)
	}
	rest := p[len(sch)+3:]
	bucket, key, _ := strings.Cut(rest, "/")
	if bucket == "" {
		return Loc{}, fmt.Errorf("%s: no bucket", p)
	}
	if i := strings.IndexByte(key, '?'); i >= 0 {
		key = key[:i] // a path that was not normalized: its query is ignored here
	}
	return Loc{Scheme: sch, Bucket: bucket, Key: key}, nil
}

// String returns the normalized path.
func (l Loc) String() string { return l.Scheme + "://" + l.Bucket + "/" + l.Key }

// Join appends slash-separated elements to a remote path (path.Join for
// the key, the scheme and bucket kept as they are).
func Join(base string, elem ...string) string {
	l, err := Parse(base)
	if err != nil {
		return base + "/" + strings.Join(elem, "/")
	}
	l.Key = strings.TrimPrefix(path.Join(append([]string{l.Key}, elem...)...), "/")
	return l.String()
}

var (
	mu      sync.Mutex
	queries = map[string]string{}       // "s3://bucket" → raw query
	buckets = map[string]*blob.Bucket{} // "s3://bucket" → opened bucket
)

// setQuery records the configuration query of a bucket; a second,
// different query for the same bucket is an error (which one would win?).
func setQuery(sch, bucket, q string) error {
	mu.Lock()
	defer mu.Unlock()
	k := sch + "://" + bucket
	if old, ok := queries[k]; ok && q != "" && old != "" && old != q {
		return fmt.Errorf("bucket %s given with two different settings (?%s and ?%s)", k, old, q)
	}
	if q != "" || queries[k] == "" {
		queries[k] = q
	}
	return nil
}

// Bucket returns the opened bucket of loc, opening it once per process.
func Bucket(ctx context.Context, loc Loc) (*blob.Bucket, error) {
	k := loc.Scheme + "://" + loc.Bucket
	mu.Lock()
	defer mu.Unlock()
	if b, ok := buckets[k]; ok {
		return b, nil
	}
	q, _ := url.ParseQuery(queries[k])
	var (
		b   *blob.Bucket
		err error
	)
	switch loc.Scheme {
	case "s3":
		b, err = openS3(ctx, loc.Bucket, q)
	default:
		b, err = openOther(ctx, loc.Scheme, loc.Bucket, q)
	}
	if err != nil {
		return nil, fmt.Errorf("open bucket %s: %w", k, err)
	}
	buckets[k] = b
	return b, nil
}

// open resolves a normalized remote path to its bucket and key.
func open(ctx context.Context, p string) (*blob.Bucket, string, error) {
	l, err := Parse(p)
	if err != nil {
		return nil, "", err
	}
	b, err := Bucket(ctx, l)
	return b, l.Key, err
}

// IsNotExist reports an error for a missing object.
func IsNotExist(err error) bool {
	return errors.Is(err, os.ErrNotExist) || gcerrors.Code(err) == gcerrors.NotFound
}

// IsPrecondition reports a conditional create that found the object there.
func IsPrecondition(err error) bool {
	var ae smithy.APIError // from s3Upload, which calls the SDK directly
	return gcerrors.Code(err) == gcerrors.FailedPrecondition || (errors.As(err, &ae) && ae.ErrorCode() == "PreconditionFailed")
}

// ReadAll reads a whole (small) object; a missing one is an error for which
// IsNotExist (and errors.Is(err, os.ErrNotExist)) is true.
func ReadAll(ctx context.Context, p string) ([]byte, error) {
	b, key, err := open(ctx, p)
	if err != nil {
		return nil, err
	}
	var data []byte
	err = withRetry(ctx, func() error {
		var err error
		data, err = b.ReadAll(ctx, key)
		return err
	})
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, fmt.Errorf("%s: %w", p, os.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return data, nil
}

// WriteAll writes a whole (small) object. With ifNotExist it is a
// conditional create (If-None-Match: *): when the object is already there
// the error satisfies IsPrecondition and the object is left as it was.
func WriteAll(ctx context.Context, p string, data []byte, ifNotExist bool) error {
	b, key, err := open(ctx, p)
	if err != nil {
		return err
	}
	err = withRetry(ctx, func() error {
		return b.WriteAll(ctx, key, data, &blob.WriterOptions{IfNotExist: ifNotExist, ContentType: "application/json"})
	})
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	return nil
}

// Exists reports whether the object p exists.
func Exists(ctx context.Context, p string) (bool, error) {
	b, key, err := open(ctx, p)
	if err != nil {
		return false, err
	}
	var ok bool
	err = withRetry(ctx, func() error {
		var err error
		ok, err = b.Exists(ctx, key)
		return err
	})
	return ok, err
}

// Size returns the size of the object p.
func Size(ctx context.Context, p string) (int64, error) {
	n, _, err := Stat(ctx, p)
	return n, err
}

// Stat returns the size and modification time (Unix nanoseconds, 0 when
// the store gives none) of the object p; a missing object is an error for
// which IsNotExist is true.
func Stat(ctx context.Context, p string) (size, modNS int64, err error) {
	b, key, err := open(ctx, p)
	if err != nil {
		return 0, 0, err
	}
	err = withRetry(ctx, func() error {
		a, err := b.Attributes(ctx, key)
		if err == nil {
			size, modNS = a.Size, unixNano(a.ModTime)
		}
		return err
	})
	if gcerrors.Code(err) == gcerrors.NotFound {
		return 0, 0, fmt.Errorf("%s: %w", p, os.ErrNotExist)
	}
	return size, modNS, err
}

// unixNano is a store's modification time in Unix nanoseconds, 0 when it
// gives none.
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// Delete removes the object p; a missing object is not an error.
func Delete(ctx context.Context, p string) error {
	b, key, err := open(ctx, p)
	if err != nil {
		return err
	}
	err = withRetry(ctx, func() error { return b.Delete(ctx, key) })
	if err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return fmt.Errorf("delete %s: %w", p, err)
	}
	return nil
}

// Object is one listed object.
type Object struct {
	Path string // normalized remote path
	Rel  string // key relative to the listed prefix
	Size int64
	// ModNS is the last modification time in Unix nanoseconds (0 when the
	// store gives none): with Size, what a cache keyed by content uses.
	ModNS int64
}

// List returns every object whose key starts with prefix+"/" (or every
// object of the bucket for a bucket root), recursively, sorted by key.
func List(ctx context.Context, prefix string) ([]Object, error) {
	b, key, err := open(ctx, prefix)
	if err != nil {
		return nil, err
	}
	l, _ := Parse(prefix)
	if key != "" && !strings.HasSuffix(key, "/") {
		key += "/"
	}
	var out []Object
	err = withRetry(ctx, func() error {
		out = out[:0]
		it := b.List(&blob.ListOptions{Prefix: key})
		for {
			o, err := it.Next(ctx)
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			if o.IsDir {
				continue
			}
			out = append(out, Object{Path: Loc{l.Scheme, l.Bucket, o.Key}.String(), Rel: strings.TrimPrefix(o.Key, key), Size: o.Size, ModNS: unixNano(o.ModTime)})
		}
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", prefix, err)
	}
	return out, nil
}
