package pipeline

import (
	"fmt"
	"sync"
	"time"

	"github.com/onecore-dev/onecore/internal/blobstore"
	"github.com/onecore-dev/onecore/jobs"
)

// Summary is the final report of a run (printed as JSON).
type Summary struct {
	Task    string `json:"task"`
	Out     string `json:"out"`
	Rank    int    `json:"rank"`
	World   int    `json:"world"`
	Workers int    `json:"workers"`
	// Int8 says the model ran with int8 weights (--int8): its docs/s are
	// not comparable with an exact run's.
	Int8 bool `json:"int8,omitempty"`

	// Row counts cover the shards this run finished (marked done): rows of
	// a shard dropped part-way (interrupt, disk full, a failed read) are in
	// no part and are not counted.
	RowsIn   int64 `json:"rows_in"`   // rows read (documents + rejected rows)
	RowsOut  int64 `json:"rows_out"`  // result rows written
	Rejected int64 `json:"rejected"`  // rows sent to the rejects files
	Files    int64 `json:"files"`     // input files opened this run
	BadFiles int64 `json:"bad_files"` // unreadable files accepted with --skip-bad-files (marked done)
	Tokens   int64 `json:"tokens"`    // tokens of the written rows (<bos> included)

	ShardsAssigned    int `json:"shards_assigned"`     // this rank's share of the input
	ShardsAlreadyDone int `json:"shards_already_done"` // finished by an earlier run: skipped
	ShardsLocked      int `json:"shards_locked"`       // being written by another live run: skipped
	ShardsToDo        int `json:"shards_todo"`
	ShardsDone        int `json:"shards_done"` // finished (marked complete) by this run
	// ShardsFailed could not be read (open or read error): not marked, so
	// the next run retries them; Failed says which and why.
	ShardsFailed int           `json:"shards_failed"`
	Failed       []FailedShard `json:"failed,omitempty"`
	// ShardsBeyondLimit were not read because the job's --limit was reached
	// before them (a trial run): in no part, and not marked.
	ShardsBeyondLimit int `json:"shards_beyond_limit,omitempty"`
	// Limit is the job's --limit (0: none): the output holds the first
	// Limit input rows, not the corpus.
	Limit int64 `json:"limit,omitempty"`

	// Previous totals the skipped, already finished shards (from their markers).
	Previous Totals `json:"previous"`

	WallS    float64            `json:"wall_s"`
	TokPerS  float64            `json:"tok_per_s"`
	DocsPerS float64            `json:"docs_per_s"`
	BusyS    map[string]float64 `json:"busy_s"` // per stage, summed over its goroutines
	// CPUS is CPU time: "engine" (the workers' threads inside the model),
	// "process" (every thread, GC included) and "plumbing" (the difference:
	// reading, tokenizing, collecting, writing, scheduling, GC). Without
	// "process" (unknown on this OS) only "engine" is given.
	CPUS        map[string]float64 `json:"cpu_s"`
	Interrupted bool               `json:"interrupted"`
	Rejects     string             `json:"rejects,omitempty"` // where the rejects are

	// Object storage only (absent for local runs):
	// Retries counts the requests retried after throttling (503 SlowDown)
	// or a dropped connection, with backoff and jitter.
	Retries *blobstore.RetryCounts `json:"retries,omitempty"`
	// Claim is how shards were claimed: "flock" or "lease".
	Claim string `json:"claim,omitempty"`
	// Worker names this process in leases and in the who-did-what record
	// (OUT/_workers/), when shards are claimed by leases.
	Worker string `json:"worker,omitempty"`
	// TakenOver lists "SHARD from WORKER" for each expired lease of a dead
	// worker this run took over and finished.
	TakenOver []string `json:"taken_over,omitempty"`
	// LeasesLost counts shards whose lease another worker took while this
	// one still worked on them (it stalled past the expiry); the part is
	// the same whoever writes it.
	LeasesLost int `json:"leases_lost,omitempty"`
}

// FailedShard is a shard whose file could not be opened or read to the end.
type FailedShard struct {
	Shard string `json:"shard"`
	File  string `json:"file"`
	Error string `json:"error"`
}

// Totals are row counts from completion markers.
type Totals struct {
	RowsIn   int64 `json:"rows_in"`
	RowsOut  int64 `json:"rows_out"`
	Rejected int64 `json:"rejected"`
	BadFiles int64 `json:"bad_files"`
	Tokens   int64 `json:"tokens"`
}

func (t *Totals) add(m jobs.Marker) {
	t.RowsIn += m.RowsIn
	t.RowsOut += m.RowsOut
	t.Rejected += m.Rejected
	t.Tokens += m.Tokens
	if m.BadFile != "" {
		t.BadFiles++
	}
}

// committedTotals sums the markers this run wrote (several collectors'
// worth of shards may finish concurrently in future; a mutex keeps it
// simple).
type committedTotals struct {
	mu sync.Mutex
	t  Totals
}

func (c *committedTotals) add(m jobs.Marker) {
	c.mu.Lock()
	c.t.add(m)
	c.mu.Unlock()
}

func (c *committedTotals) get() Totals {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func newSummary(c Config) *Summary {
	return &Summary{Task: string(c.Job.Task), Out: c.Out, Rank: c.Placement.Rank, World: c.Placement.World, Workers: c.Workers, Int8: c.Job.Int8, Limit: c.Job.Limit}
}

func (s *Summary) finish(wall time.Duration, st *stats) {
	ct := st.committed.get()
	s.RowsIn, s.RowsOut, s.Rejected = ct.RowsIn, ct.RowsOut, ct.Rejected
	s.Files, s.BadFiles, s.Tokens = st.files.Load(), ct.BadFiles, ct.Tokens
	s.ShardsDone = int(st.shardsDone.Load())
	s.ShardsLocked = int(st.locked.Load())
	s.ShardsAlreadyDone += int(st.doneMeanwhile.Load())
	s.ShardsToDo -= s.ShardsLocked + int(st.doneMeanwhile.Load())
	s.WallS = wall.Seconds()
	if s.WallS > 0 { // rates of the work done, committed or not
		s.TokPerS = float64(st.tokens.Load()) / s.WallS
		s.DocsPerS = float64(st.rowsOut.Load()) / s.WallS
	}
	s.BusyS = map[string]float64{}
	for i, n := range stageNames {
		s.BusyS[n] = time.Duration(st.busy[i].Load()).Seconds()
	}
	eng := time.Duration(st.engineCPU.Load())
	s.CPUS = map[string]float64{"engine": eng.Seconds()}
	if st.processCPU > 0 {
		s.CPUS["process"] = st.processCPU.Seconds()
		s.CPUS["plumbing"] = max(0, st.processCPU-eng).Seconds()
	}
}

// Partial reports whether rows or files were rejected (exit code 3).
func (s *Summary) Partial() bool {
	return s.Rejected > 0 || s.BadFiles > 0
}

// Complete reports whether every assigned shard is finished.
func (s *Summary) Complete() bool {
	return !s.Interrupted && s.ShardsLocked == 0 && s.ShardsFailed == 0 && s.ShardsDone == s.ShardsToDo
}

// String is a one-line human summary.
func (s *Summary) String() string {
	str := fmt.Sprintf("%d rows in, %d out, %d rejected, %d bad files; %d tokens in %.1fs (%.0f tok/s); shards: %d done, %d already done, %d locked, %d failed",
		s.RowsIn, s.RowsOut, s.Rejected, s.BadFiles, s.Tokens, s.WallS, s.TokPerS, s.ShardsDone, s.ShardsAlreadyDone, s.ShardsLocked, s.ShardsFailed)
	// Object storage: what the retries and leases did, so a log line alone
	// tells a throttled or contended run from a clean one.
	if s.Retries != nil {
		str += fmt.Sprintf("; object storage retries: %d throttled, %d network, %d other", s.Retries.Throttled, s.Retries.Network, s.Retries.Other)
	}
	if s.Claim == "lease" {
		str += fmt.Sprintf("; worker %s, %d lease(s) taken over, %d lost", s.Worker, len(s.TakenOver), s.LeasesLost)
	}
	return str
}
