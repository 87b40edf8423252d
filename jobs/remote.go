package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/onecore-dev/onecore/internal/blobstore"
)

// An output directory in object storage (s3://bucket/prefix) keeps the
// local layout (parts at the top, _onecore.json, _done/, _rejects/,
// _locks/) with what object stores offer instead of renames and flock:
//
//   - a part is one upload, visible only once complete;
//   - the manifest and each completion marker are created with a
//     conditional put (If-None-Match: *), so of two writers exactly one
//     creates it and neither overwrites the other's;
//   - a shard is claimed with a lease object (_locks/NAME.lease), also
//     created conditionally, carrying its holder and an expiry that the
//     holder renews while it works; a lease past its expiry belongs to a
//     dead worker and is taken over.
//
// Exactly once does not rest on the leases (clocks drift, a paused worker
// may wake after its lease was taken): a part's name and bytes depend only
// on its shard, so two workers that both write it write the same object,
// and only one marker is ever created. Leases keep workers from doing the
// same work twice; the conditional marker keeps the output right when
// they do anyway.

// remote reports an output directory in object storage.
func (d OutDir) remote() bool { return blobstore.Remote(d.Path) }

// Join is a path inside the directory: filepath.Join locally, a key join
// in object storage (where filepath.Join would turn s3://b into s3:/b).
func (d OutDir) Join(elem ...string) string {
	if d.remote() {
		return blobstore.Join(d.Path, elem...)
	}
	return filepath.Join(append([]string{d.Path}, elem...)...)
}

// Exists reports whether the file or object p (a path inside the
// directory) exists.
func (d OutDir) Exists(p string) (bool, error) { return d.exists(p) }

// ReadFile reads the file or object p (a path inside the directory); a
// missing one is os.ErrNotExist.
func (d OutDir) ReadFile(p string) ([]byte, error) { return d.read(p) }

func (d OutDir) exists(p string) (bool, error) {
	if d.remote() {
		return blobstore.Exists(context.Background(), p)
	}
	_, err := os.Stat(p)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// read reads a bookkeeping file; a missing one is os.ErrNotExist.
func (d OutDir) read(p string) ([]byte, error) {
	if d.remote() {
		return blobstore.ReadAll(context.Background(), p)
	}
	return os.ReadFile(p)
}

// remove deletes a bookkeeping file; a missing one is not an error.
func (d OutDir) remove(p string) error {
	if d.remote() {
		return blobstore.Delete(context.Background(), p)
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// prepareRemote is Prepare for object storage: no folders to create, the
// manifest created with a conditional put (the workers of one output all
// try; one creates it, the others read and check it).
func (d OutDir) prepareRemote(m Manifest, force bool) error {
	ctx := context.Background()
	m.Version = 1
	m.Format = d.Format
	if m.Fingerprint == "" && m.Job != nil {
		m.Fingerprint = m.Job.Fingerprint()
	}
	path := d.Join(ManifestName)
	for attempt := 0; ; attempt++ {
		b, err := blobstore.ReadAll(ctx, path)
		switch {
		case err == nil:
			diff, err := d.compare(path, b, m)
			if err != nil || diff == "" {
				return err
			}
			if !force {
				return fmt.Errorf("output directory %s was written by %s; use another --out, or --force to recompute everything into it", d.Path, diff)
			}
			marks, err := blobstore.List(ctx, d.Join(DoneDir))
			if err != nil {
				return err
			}
			for _, o := range marks {
				if err := blobstore.Delete(ctx, o.Path); err != nil {
					return err
				}
			}
			m.Created = time.Now().UTC().Format(time.RFC3339)
			nb, _ := json.MarshalIndent(m, "", "  ")
			return blobstore.WriteAll(ctx, path, append(nb, '\n'), false)
		case !blobstore.IsNotExist(err):
			return err
		}
		m.Created = time.Now().UTC().Format(time.RFC3339)
		nb, _ := json.MarshalIndent(m, "", "  ")
		err = blobstore.WriteAll(ctx, path, append(nb, '\n'), true)
		if err == nil || !blobstore.IsPrecondition(err) || attempt > 0 {
			return err
		}
		// Another worker created it first: read and check theirs.
	}
}

// markRemote creates the completion marker with a conditional put. A
// marker already there for the same shard means the shard was finished by
// another worker (or by our own put whose reply was lost and was retried):
// the part is the same object either way, so it is not an error.
func (d OutDir) markRemote(name string, m Marker, b []byte) error {
	ctx := context.Background()
	p := d.markerPath(name)
	err := blobstore.WriteAll(ctx, p, b, true)
	if err == nil || !blobstore.IsPrecondition(err) {
		return err
	}
	ob, rerr := blobstore.ReadAll(ctx, p)
	var old Marker
	if rerr == nil && json.Unmarshal(ob, &old) == nil && old.Shard == m.Shard {
		return nil
	}
	return fmt.Errorf("completion marker %s exists for another shard (%s, this one %s): %w", p, old.Shard, m.Shard, err)
}

// DefaultLeaseTTL is how long a lease lives without renewal: a worker
// that died holding it delays its shard by at most this. The holder renews
// every third of it. $ONECORE_LEASE_TTL (a Go duration) overrides it.
const DefaultLeaseTTL = time.Minute

func leaseTTL() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("ONECORE_LEASE_TTL")); err == nil && d > 0 {
		return d
	}
	return DefaultLeaseTTL
}

// leaseGrace is added to an expiry before a lease counts as expired, for
// clocks that disagree a little between machines.
const leaseGrace = 2 * time.Second

// Lease is the content of a lease object.
type Lease struct {
	Owner   string `json:"owner"` // WorkerID of the holder
	Token   string `json:"token"` // unique per acquisition: tells our lease from a successor's
	Expires string `json:"expires"`
	// TakenFrom is the owner of the expired lease this one replaced.
	TakenFrom string `json:"taken_from,omitempty"`
}

var (
	workerOnce sync.Once
	workerID   string
)

// WorkerID names this process in leases, markers and the who-did-what
// record: $ONECORE_WORKER_ID, else host:pid.
func WorkerID() string {
	workerOnce.Do(func() {
		if v := os.Getenv("ONECORE_WORKER_ID"); v != "" {
			workerID = v
			return
		}
		h, _ := os.Hostname()
		workerID = fmt.Sprintf("%s:%d", h, os.Getpid())
	})
	return workerID
}

// lease is a held lease with its renewal loop.
type lease struct {
	path     string
	token    string
	ttl      time.Duration
	takenOf  string // previous owner when this lease took over an expired one
	stop     chan struct{}
	done     chan struct{}
	mu       sync.Mutex
	lost     bool
	released bool
}

func newToken() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (d OutDir) leasePath(name string) string { return d.Join(LockDir, name+".lease") }

// lease claims the shard named name, or returns ErrLocked while another
// worker's unexpired lease holds it.
func (d OutDir) lease(name string) (*PartLock, error) {
	ctx := context.Background()
	p := d.leasePath(name)
	ttl := leaseTTL()
	l := &lease{path: p, token: newToken(), ttl: ttl}
	body := func() []byte {
		b, _ := json.Marshal(Lease{Owner: WorkerID(), Token: l.token, Expires: time.Now().Add(ttl).UTC().Format(time.RFC3339Nano), TakenFrom: l.takenOf})
		return b
	}
	for attempt := 0; attempt < 2; attempt++ {
		err := blobstore.WriteAll(ctx, p, body(), true)
		if err == nil {
			l.start()
			return &PartLock{l: l}, nil
		}
		if !blobstore.IsPrecondition(err) {
			return nil, err
		}
		b, rerr := blobstore.ReadAll(ctx, p)
		if blobstore.IsNotExist(rerr) {
			continue // released meanwhile: try again
		}
		if rerr != nil {
			return nil, rerr
		}
		var cur Lease
		if json.Unmarshal(b, &cur) == nil {
			if cur.Token == l.token {
				// our own create, whose reply was lost and retried
				l.start()
				return &PartLock{l: l}, nil
			}
			if exp, err := time.Parse(time.RFC3339Nano, cur.Expires); err == nil && time.Now().Before(exp.Add(leaseGrace)) {
				return nil, ErrLocked
			}
		}
		// Expired (or unreadable, which no live worker writes): the holder
		// is gone. Delete it and race for a fresh one; of several workers
		// doing so, the conditional create lets one through.
		l.takenOf = cur.Owner
		if cur.Owner == "" {
			l.takenOf = "unknown"
		}
		if err := blobstore.Delete(ctx, p); err != nil {
			return nil, err
		}
	}
	return nil, ErrLocked
}

// start begins renewing the lease every third of its lifetime.
func (l *lease) start() {
	l.stop, l.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(l.done)
		t := time.NewTicker(l.ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-t.C:
				if !l.renew() {
					return
				}
			}
		}
	}()
}

// renew extends the lease if it is still ours; false once it was lost
// (taken over after this process stalled past its expiry).
func (l *lease) renew() bool {
	ctx := context.Background()
	b, err := blobstore.ReadAll(ctx, l.path)
	var cur Lease
	if err == nil && json.Unmarshal(b, &cur) == nil && cur.Token != l.token {
		l.mu.Lock()
		l.lost = true
		l.mu.Unlock()
		return false
	}
	if err != nil && !blobstore.IsNotExist(err) {
		return true // a failed read: keep the lease, try at the next tick
	}
	nb, _ := json.Marshal(Lease{Owner: WorkerID(), Token: l.token, Expires: time.Now().Add(l.ttl).UTC().Format(time.RFC3339Nano), TakenFrom: l.takenOf})
	blobstore.WriteAll(ctx, l.path, nb, false)
	return true
}

// release stops renewing and deletes the lease if it is still ours.
func (l *lease) release() error {
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return nil
	}
	l.released = true
	l.mu.Unlock()
	close(l.stop)
	<-l.done
	ctx := context.Background()
	b, err := blobstore.ReadAll(ctx, l.path)
	if err != nil {
		if blobstore.IsNotExist(err) {
			return nil
		}
		return err
	}
	var cur Lease
	if json.Unmarshal(b, &cur) == nil && cur.Token != l.token {
		return nil // taken over meanwhile: it is the successor's now
	}
	return blobstore.Delete(ctx, l.path)
}

// TakenFrom is the worker whose expired lease this lock took over, ""
// for a plain claim (and for flock locks).
func (l *PartLock) TakenFrom() string {
	if l == nil || l.l == nil {
		return ""
	}
	return l.l.takenOf
}

// Lost reports a lease taken over by another worker while this one held
// it (it stalled past the expiry). The shard's part is the same whoever
// writes it, so finishing is still correct; the summary reports it.
func (l *PartLock) Lost() bool {
	if l == nil || l.l == nil {
		return false
	}
	l.l.mu.Lock()
	defer l.l.mu.Unlock()
	return l.l.lost
}

// WorkerRecord is one run's account of its work, written under _workers/
// of an object-storage output (the who-did-what record: any number of
// workers from anywhere share one output, and each leaves its own object).
type WorkerRecord struct {
	Worker      string   `json:"worker"`
	Started     string   `json:"started"`
	Finished    string   `json:"finished"`
	Shards      []string `json:"shards"`                // shards this worker finished and marked
	TakenOver   []string `json:"taken_over,omitempty"`  // "shard from WORKER": expired leases it took over
	SkippedBusy int      `json:"skipped_busy"`          // shards another worker held a live lease on
	Retries     int64    `json:"retries"`               // object-storage requests retried
	Interrupted bool     `json:"interrupted,omitempty"` // stopped by a signal before the end
}

// WriteWorkerRecord stores rec as _workers/WORKER-STARTED.json (one object
// per run, so no two runs ever write the same object).
func (d OutDir) WriteWorkerRecord(rec WorkerRecord) error {
	if !d.remote() {
		return nil
	}
	name := strings.NewReplacer("/", "_", ":", "_", " ", "_").Replace(rec.Worker + "-" + rec.Started)
	b, _ := json.MarshalIndent(rec, "", "  ")
	return blobstore.WriteAll(context.Background(), d.Join("_workers", name+".json"), append(b, '\n'), false)
}

// Snapshot is one listing of an object-storage output, taken when a run
// plans its work: a shard whose marker is not in it is not done, which
// spares a request per shard (a corpus of 10,000 shards would otherwise
// cost 10,000 lookups before the first document is read). Claiming a
// shard still checks its marker afresh.
type Snapshot struct{ objs map[string]bool }

// Snapshot lists the output; nil (and no error) for a local directory.
func (d OutDir) Snapshot() (*Snapshot, error) {
	if !d.remote() {
		return nil, nil
	}
	objs, err := blobstore.List(context.Background(), d.Path)
	if err != nil {
		return nil, err
	}
	s := &Snapshot{objs: make(map[string]bool, len(objs))}
	for _, o := range objs {
		s.objs[o.Path] = true
	}
	return s, nil
}

// MaybeDone reports whether the shard named name may be done: false when
// the snapshot holds no marker for it (always true without a snapshot).
func (s *Snapshot) MaybeDone(d OutDir, name string) bool {
	return s == nil || s.objs[d.markerPath(name)]
}
