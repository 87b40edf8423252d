package jobs

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/onecore-dev/onecore/internal/atomicfile"
)

// Names inside an output directory. Parts sit at the top so `dir/*.parquet`
// globs see exactly the results; bookkeeping lives in folders starting with
// an underscore, which Spark/DuckDB-style readers ignore.
const (
	ManifestName = "_onecore.json"
	DoneDir      = "_done"
	LockDir      = "_locks"
	RejectsDir   = "_rejects"
)

// Manifest records, in the output directory, which job and which model wrote
// it; a rerun with a different job or model into the same directory is
// refused unless forced, so one directory never mixes two computations.
type Manifest struct {
	Version     int    `json:"version"`
	Job         *Job   `json:"job"`
	Fingerprint string `json:"job_fingerprint"`
	ModelPath   string `json:"model_path"`
	ModelID     string `json:"model_id"`
	Format      string `json:"format"`
	// Columns lists the output columns ("name:type", schema order): parts of
	// one directory must share them (a newer onecore may add one, as score's
	// bits_per_byte).
	Columns []string `json:"columns,omitempty"`
	Created string   `json:"created"`
}

// OutDir is an output directory of per-shard parts.
type OutDir struct {
	Path   string
	Format string // file extension of the parts: parquet, arrow, jsonl
}

// Prepare creates the directory (and its bookkeeping folders) and checks or
// writes its manifest. A manifest from a different job or model is an error
// unless force is set, in which case it is replaced and every completion
// marker is removed (so the new job recomputes everything).
func (d OutDir) Prepare(m Manifest, force bool) error {
	if d.remote() {
		return d.prepareRemote(m, force)
	}
	for _, sub := range []string{"", DoneDir, LockDir, RejectsDir} {
		if err := os.MkdirAll(filepath.Join(d.Path, sub), 0o755); err != nil {
			return err
		}
	}
	// Ranks of an array start together: one at a time checks and writes the
	// manifest, and may then clear temporaries a killed run left of it.
	ml, err := os.OpenFile(filepath.Join(d.Path, LockDir, "_manifest.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer ml.Close()
	if err := unix.Flock(int(ml.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", ml.Name(), err)
	}
	stale, _ := filepath.Glob(filepath.Join(d.Path, "."+ManifestName+".tmp-*"))
	for _, f := range stale {
		os.Remove(f)
	}
	m.Version = 1
	m.Format = d.Format
	if m.Fingerprint == "" && m.Job != nil {
		m.Fingerprint = m.Job.Fingerprint()
	}
	path := filepath.Join(d.Path, ManifestName)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		diff, err := d.compare(path, b, m)
		if err != nil || diff == "" {
			return err
		}
		if !force {
			return fmt.Errorf("output directory %s was written by %s; use another --out, or --force to recompute everything into it", d.Path, diff)
		}
		if err := os.RemoveAll(filepath.Join(d.Path, DoneDir)); err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(d.Path, DoneDir), 0o755); err != nil {
			return err
		}
	case errors.Is(err, os.ErrNotExist):
	default:
		return err
	}
	m.Created = time.Now().UTC().Format(time.RFC3339)
	nb, _ := json.MarshalIndent(m, "", "  ")
	return atomicfile.WriteFile(path, append(nb, '\n'))
}

// compare returns how the manifest b (read at path) differs from m, ""
// when it is the same computation.
func (d OutDir) compare(path string, b []byte, m Manifest) (string, error) {
	var old Manifest
	if err := json.Unmarshal(b, &old); err != nil {
		return "", fmt.Errorf("%s: corrupt manifest (%v); remove it or pass --force", path, err)
	}
	switch {
	case old.Fingerprint != m.Fingerprint:
		return fmt.Sprintf("a different job (fingerprint %s, this run %s)", old.Fingerprint, m.Fingerprint), nil
	case old.ModelID != m.ModelID:
		return fmt.Sprintf("a different model (%s id %s, this run %s id %s)", old.ModelPath, old.ModelID, m.ModelPath, m.ModelID), nil
	case old.Format != m.Format:
		return fmt.Sprintf("a different format (%s, this run %s)", old.Format, m.Format), nil
	case len(m.Columns) > 0 && !slices.Equal(old.Columns, m.Columns) && (len(old.Columns) > 0 || m.Job == nil || m.Job.Task == TaskScore):
		// A manifest without columns predates them: its columns are
		// today's for every task but score, which gained bits_per_byte.
		return fmt.Sprintf("another version of onecore with other output columns (%v, this run %v)", old.Columns, m.Columns), nil
	}
	return "", nil
}

// PartName is the stable file stem of a shard's part: "part-", the shard
// key made readable (its input extension and a leading "part-" dropped, so
// part-0000.parquet gives part-0000-68a9940f, not
// part-part-0000.parquet-68a9940f) and filename-safe, then a short hash of
// the whole key, which keeps distinct keys distinct whatever was dropped.
// Outputs written before this naming keep their names: see NameFor.
func PartName(key string) string {
	stem := stripInputExt(key)
	s := sanitizeKey(stem)
	for _, p := range []string{"part-", "part_"} {
		s = strings.TrimPrefix(s, p)
	}
	s = strings.Trim(s, "._-")
	h := sha256.Sum256([]byte(key))
	if s == "" {
		return "part-" + hex.EncodeToString(h[:4])
	}
	return "part-" + s + "-" + hex.EncodeToString(h[:4])
}

// LegacyPartName is the part name of outputs written before PartName
// dropped the input extension (the whole key, sanitized).
func LegacyPartName(key string) string {
	s := strings.Trim(sanitizeKey(key), "._")
	if len(s) > 80 {
		s = s[len(s)-80:]
	}
	h := sha256.Sum256([]byte(key))
	return "part-" + s + "-" + hex.EncodeToString(h[:4])
}

// sanitizeKey replaces what is not a letter, digit, '-' or '.' by '_' and
// keeps the last 80 bytes (the file name end is the telling part).
func sanitizeKey(key string) string {
	var b strings.Builder
	for _, r := range key {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > 80 {
		s = s[len(s)-80:]
	}
	return s
}

// stripInputExt drops a compression suffix and then an input format
// extension from key.
func stripInputExt(key string) string {
	lower := strings.ToLower(key)
	for _, ext := range []string{".gz", ".zst", ".zstd"} {
		if strings.HasSuffix(lower, ext) {
			key, lower = key[:len(key)-len(ext)], lower[:len(lower)-len(ext)]
			break
		}
	}
	for _, ext := range []string{".parquet", ".jsonl", ".ndjson", ".json"} {
		if strings.HasSuffix(lower, ext) {
			return key[:len(key)-len(ext)]
		}
	}
	return key
}

// NameFor is the part name of the shard keyed key in this directory: the
// legacy name when an earlier onecore left that shard's part or marker
// under it (finished, or renamed into place before a kill: a rerun must
// find the marker, and must not write the same rows a second time under
// another name), else PartName.
func (d OutDir) NameFor(key string) string {
	name, old := PartName(key), LegacyPartName(key)
	if name == old || d.remote() {
		// Object-storage outputs are newer than the legacy names: none
		// can hold one, and two lookups per shard would cost requests.
		return name
	}
	for _, p := range []string{d.markerPath(old), d.PartPath(old)} {
		if ok, _ := d.exists(p); ok {
			return old
		}
	}
	return name
}

// PartPath is where the part of the shard named name is written.
func (d OutDir) PartPath(name string) string {
	return d.Join(name + "." + d.Format)
}

// RejectsPath is where the rejects (JSONL: file, row, reason) of a part go.
func (d OutDir) RejectsPath(name string) string {
	return d.Join(RejectsDir, name+".jsonl")
}

// RejectsDirPath is the folder of the parts' rejects files.
func (d OutDir) RejectsDirPath() string { return d.Join(RejectsDir) }

// Marker is a part's completion record, written after the part's atomic
// rename; its presence means the shard is finished.
type Marker struct {
	Shard string `json:"shard"`
	// Path is the input file the shard was read from, so a later run can
	// tell which of two inputs with the same relative path owns the key.
	Path     string `json:"path,omitempty"`
	Part     string `json:"part"`
	RowsIn   int64  `json:"rows_in"`
	RowsOut  int64  `json:"rows_out"`
	Rejected int64  `json:"rejected"`
	Tokens   int64  `json:"tokens"`
	BadFile  string `json:"bad_file,omitempty"` // why the file could not be read (to the end)
	// Input is the shard's size and modification time when it was read
	// (absent in markers written before 2026-12-06): a later run into the
	// same output refuses to go on when a finished shard has changed since.
	Input *InputStat `json:"input,omitempty"`
	// Worker is the WorkerID of the process that finished the shard, for
	// outputs claimed by leases (the who-did-what of elastic workers, which
	// survives a worker killed before it could write its own record).
	Worker   string `json:"worker,omitempty"`
	Finished string `json:"finished"`
}

// InputStat identifies the content a shard had when it was processed,
// without reading it again: its size, and its modification time in Unix
// nanoseconds (0 when the source gave none).
type InputStat struct {
	Size  int64 `json:"size"`
	ModNS int64 `json:"mtime_ns,omitempty"`
}

// Changed says how the shard now at size/modNS differs from the one s
// describes, "" when it looks the same (a time unknown on either side is
// not compared).
func (s *InputStat) Changed(size, modNS int64) string {
	switch {
	case s == nil:
		return ""
	case s.Size != size:
		return fmt.Sprintf("%d bytes then, %d now", s.Size, size)
	case s.ModNS != 0 && modNS != 0 && s.ModNS != modNS:
		return fmt.Sprintf("modified %s then, %s now", time.Unix(0, s.ModNS).UTC().Format(time.RFC3339Nano), time.Unix(0, modNS).UTC().Format(time.RFC3339Nano))
	}
	return ""
}

func (d OutDir) markerPath(name string) string {
	return d.Join(DoneDir, name+".json")
}

// MarkerPath is where the completion marker of the shard named name is
// (removing it by hand makes the next run redo that shard).
func (d OutDir) MarkerPath(name string) string { return d.markerPath(name) }

// Done reports whether the shard named name has a completion marker whose
// part is in place, and returns the marker. A marker without its part (a
// cleanup killed half-way, or a part removed by hand) does not count: the
// marker is removed and the shard is redone, so an output never refers to a
// part that is not there.
func (d OutDir) Done(name string) (Marker, bool, error) {
	b, err := d.read(d.markerPath(name))
	if errors.Is(err, os.ErrNotExist) {
		return Marker{}, false, nil
	}
	if err != nil {
		return Marker{}, false, err
	}
	var m Marker
	if err := json.Unmarshal(b, &m); err != nil {
		// A marker is written atomically, so this is outside damage:
		// treat the shard as unfinished and redo it.
		return Marker{}, false, nil
	}
	if ok, err := d.exists(d.PartPath(name)); err != nil {
		return Marker{}, false, err
	} else if !ok {
		if err := d.remove(d.markerPath(name)); err != nil {
			return Marker{}, false, err
		}
		return Marker{}, false, nil
	}
	return m, true, nil
}

// Marked returns the marker of the shard named name as written, without
// checking its part (nil when there is none or it is unreadable).
func (d OutDir) Marked(name string) *Marker {
	b, err := d.read(d.markerPath(name))
	if err != nil {
		return nil
	}
	var m Marker
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return &m
}

// MarkDone writes the completion marker of a shard (atomically, after its
// part and rejects are in place).
func (d OutDir) MarkDone(name string, m Marker) error {
	m.Finished = time.Now().UTC().Format(time.RFC3339)
	b, _ := json.Marshal(m)
	if d.remote() {
		return d.markRemote(name, m, append(b, '\n'))
	}
	return atomicfile.WriteFile(d.markerPath(name), append(b, '\n'))
}

// PartLock is an exclusive, non-blocking flock on one part. The kernel drops
// it when the process dies (SIGKILL included), so a stale lock never blocks
// a rerun, while two live runs (overlapping cron jobs, a misconfigured
// array) can never write the same part.
type PartLock struct {
	f *os.File
	l *lease // object storage: a lease object instead of a flock
}

// ErrLocked means another live process holds the part's lock.
var ErrLocked = errors.New("part is locked by another running onecore")

// Lock takes the lock of the part named name, or returns ErrLocked.
func (d OutDir) Lock(name string) (*PartLock, error) {
	if d.remote() {
		return d.lease(name)
	}
	f, err := os.OpenFile(filepath.Join(d.Path, LockDir, name+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, ErrLocked
		}
		return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return &PartLock{f: f}, nil
}

// LeasePath is the lease object's path for a lock in object storage ("" for
// a local flock): what a cleanup of the output prefix must leave to Unlock.
func (l *PartLock) LeasePath() string {
	if l == nil || l.l == nil {
		return ""
	}
	return l.l.path
}

// Unlock releases the lock.
func (l *PartLock) Unlock() error {
	if l != nil && l.l != nil {
		err := l.l.release()
		l.l = nil
		return err
	}
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the descriptor releases the flock
	l.f = nil
	return err
}

// ModelID hashes a checkpoint's files (config, weights, tokenizer,
// generation settings): the identity recorded in the manifest. Two copies
// of the same model in different places have the same id.
func ModelID(dir string) (string, error) {
	h := sha256.New()
	for _, name := range []string{"config.json", "model.safetensors", "tokenizer.json", "generation.json"} {
		f, err := os.Open(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00", name)
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", fmt.Errorf("model id: %s: %w", name, err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:12]), nil
}
