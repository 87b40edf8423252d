package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/onecore-dev/onecore/jobs"
)

// Plan is what --dry-run reports: the work a run with the same flags would
// do, found without writing anything to the output, and the time it would
// take, estimated from a short calibration run on the first documents.
type Plan struct {
	Task    string `json:"task"`
	Model   string `json:"model"`
	Out     string `json:"out"`
	Rank    int    `json:"rank"`
	World   int    `json:"world"`
	Workers int    `json:"workers"`
	Limit   int64  `json:"limit,omitempty"`

	ShardsAssigned    int   `json:"shards_assigned"`     // this rank's share of the input files
	ShardsAlreadyDone int   `json:"shards_already_done"` // marked done by an earlier run: skipped
	ShardsToDo        int   `json:"shards_todo"`
	BytesToDo         int64 `json:"bytes_todo"` // on disk (compressed where the files are)
	// RowsKnown are the rows of the to-do shards whose format records them
	// (Parquet footers), in ShardsRowsKnown shards; RowsEstimated adds the
	// other shards' rows estimated from the calibration's bytes on disk per
	// row (0 when there was nothing to estimate from).
	RowsKnown       int64 `json:"rows_known"`
	ShardsRowsKnown int   `json:"shards_rows_known"`
	RowsEstimated   int64 `json:"rows_estimated"`

	Calibration *Calibration `json:"calibration,omitempty"`
	// EstimatedS is the estimated wall time of the run in seconds (0:
	// unknown), from RowsEstimated (or Limit) and the calibration's docs/s.
	EstimatedS float64 `json:"estimated_s,omitempty"`
	// Notes say what the run would refuse or skip, in words.
	Notes []string `json:"notes,omitempty"`
}

// Calibration is the short run a Plan's estimate comes from: the job on the
// first documents of the work, written to a temporary folder.
type Calibration struct {
	Docs        int64   `json:"docs"`
	Tokens      int64   `json:"tokens"`
	WallS       float64 `json:"wall_s"`
	DocsPerS    float64 `json:"docs_per_s"`
	TokPerS     float64 `json:"tok_per_s"`
	BytesPerRow float64 `json:"bytes_per_row,omitempty"` // on disk, in the first to-do shard
}

// DryRun plans cfg's run without touching its output: it lists this rank's
// shards, skips those an earlier run marked done, counts rows where the
// format records them, and (calibrate > 0) times the job on the first
// calibrate documents in a temporary folder to estimate the whole run.
func DryRun(ctx context.Context, cfg Config, calibrate int) (*Plan, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	out, err := resolveOutput(cfg.Out, cfg.Format, cfg.Placement)
	if err != nil {
		return nil, err
	}
	if _, _, err := newTask(cfg.Job, cfg.Model, cfg.Tokenizer); err != nil {
		return nil, err
	}
	p := &Plan{Task: string(cfg.Job.Task), Model: cfg.ModelPath, Out: cfg.Out, Rank: cfg.Placement.Rank,
		World: cfg.Placement.World, Workers: cfg.Workers, Limit: cfg.Job.Limit}
	od := jobs.OutDir{Path: out.dir, Format: out.format}
	if out.merge != stdoutName {
		p.Notes = append(p.Notes, outputNotes(cfg, out)...)
	}
	shards := excludeOutput(cfg.Shards, out, cfg.Log)
	if len(shards) == 0 {
		return nil, fmt.Errorf("no input left: every input file is inside the output %s", cfg.Out)
	}
	shards = resolveKeys(shards, od)
	var todo []Shard
	var previousRows int64
	var changed []string
	for _, i := range jobs.Assign(len(shards), cfg.Placement) {
		sh := shards[i]
		name := od.NameFor(sh.Key)
		p.ShardsAssigned++
		// Read-only version of OutDir.Done: a marker counts with its part.
		if m := od.Marked(name); m != nil && out.merge != stdoutName {
			if ok, _ := od.Exists(od.PartPath(name)); ok {
				if c := shardChange(od, name, m, sh); c != "" {
					changed = append(changed, c)
				}
				p.ShardsAlreadyDone++
				previousRows += m.RowsIn
				continue
			}
		}
		todo = append(todo, sh)
		p.BytesToDo += sh.Size
	}
	p.ShardsToDo = len(todo)
	if len(changed) > 0 {
		p.Notes = append(p.Notes, "the run would refuse: "+changedShardsError(out.dir, changed).Error())
	}

	opts := cfg.readOptions()
	var unknownBytes int64
	var unknown []Shard // shards without a recorded row count
	for _, sh := range todo {
		rd, err := cfg.Source.Open(sh, opts)
		if err != nil {
			p.Notes = append(p.Notes, fmt.Sprintf("%s cannot be read: %v", sh.Path, err))
			continue
		}
		if rc, ok := rd.(RowCounter); ok {
			if n, ok := rc.RowCount(); ok {
				p.RowsKnown += n
				p.ShardsRowsKnown++
				rd.Close()
				continue
			}
		}
		rd.Close()
		unknownBytes += sh.Size
		unknown = append(unknown, sh)
	}
	if len(todo) == 0 || calibrate <= 0 {
		return p, nil
	}

	cal, err := calibrateRun(ctx, cfg, todo, calibrate)
	if err == nil && len(unknown) > 0 {
		cal.BytesPerRow = bytesPerRow(cfg, unknown[0], calibrate)
	}
	if err != nil {
		return nil, fmt.Errorf("calibration: %w", err)
	}
	p.Calibration = cal
	p.RowsEstimated = p.RowsKnown
	if unknownBytes > 0 && cal.BytesPerRow > 0 {
		p.RowsEstimated += int64(float64(unknownBytes) / cal.BytesPerRow)
	}
	rows := p.RowsEstimated
	if lim := cfg.Job.Limit; lim > 0 {
		rows = min(max(0, lim-previousRows), rows)
		if p.RowsEstimated == 0 {
			rows = max(0, lim-previousRows)
		}
	}
	if cal.DocsPerS > 0 && rows > 0 {
		p.EstimatedS = float64(rows) / cal.DocsPerS
	}
	return p, nil
}

// bytesPerRow reads up to n rows of sh and returns the bytes on disk they
// took (0: unknown), to estimate the rows of shards of that kind.
func bytesPerRow(cfg Config, sh Shard, n int) float64 {
	opts := cfg.readOptions()
	rd, err := cfg.Source.Open(sh, opts)
	if err != nil {
		return 0
	}
	defer rd.Close()
	rows := 0
	for rows < n {
		if _, err := rd.Next(); err == io.EOF {
			break
		} else if err != nil && !errors.As(err, new(*RowError)) {
			break
		}
		rows++
	}
	if f, ok := rd.(Fractioner); ok && rows > 0 {
		return f.Fraction() * float64(sh.Size) / float64(rows)
	}
	return 0
}

// calibrateRun runs the job on the first n rows of todo into a temporary
// folder and measures it.
func calibrateRun(ctx context.Context, cfg Config, todo []Shard, n int) (*Calibration, error) {
	cal := &Calibration{}
	tmp, err := os.MkdirTemp("", "onecore-dry-run-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	job := *cfg.Job
	job.Limit = int64(n)
	c := cfg
	c.Job = &job
	c.Shards = todo
	c.Out = filepath.Join(tmp, "calibration.jsonl")
	c.Format = ""
	c.Placement = jobs.Placement{Rank: 0, World: 1, From: "dry-run"}
	c.Progress = nil
	c.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	c.Stdout = io.Discard
	sum, err := Run(ctx, c)
	if err != nil {
		return nil, err
	}
	cal.Docs, cal.Tokens, cal.WallS = sum.RowsOut, sum.Tokens, sum.WallS
	if sum.WallS > 0 {
		cal.DocsPerS = float64(sum.RowsIn) / sum.WallS
		cal.TokPerS = float64(sum.Tokens) / sum.WallS
	}
	return cal, nil
}

// outputNotes says, without writing anything, whether the run would
// refuse its output (another job's or model's) or resume it.
func outputNotes(cfg Config, out output) []string {
	m := jobs.Manifest{Job: cfg.Job, ModelPath: cfg.ModelPath, ModelID: cfg.ModelID}
	if out.merge != "" {
		if err := checkOutputFile(out, m, cfg.Force); err != nil {
			return []string{"the run would refuse: " + err.Error()}
		}
		if _, err := os.Stat(out.merge); err == nil {
			return []string{out.merge + " exists (written by this job and model): the run would compute it again and replace it"}
		}
	}
	od := jobs.OutDir{Path: out.dir, Format: out.format}
	b, err := od.ReadFile(od.Join(jobs.ManifestName))
	if err != nil {
		return nil
	}
	var old jobs.Manifest
	if err := json.Unmarshal(b, &old); err != nil {
		return []string{fmt.Sprintf("%s has a corrupt manifest: the run would refuse it without --force", out.dir)}
	}
	switch {
	case cfg.Force:
		return []string{fmt.Sprintf("%s holds results; --force: the run would recompute into it", out.dir)}
	case old.Fingerprint != cfg.Job.Fingerprint():
		return []string{fmt.Sprintf("the run would refuse %s: it holds a different job's results (fingerprint %s, this job %s); use another --out or --force", out.dir, old.Fingerprint, cfg.Job.Fingerprint())}
	case old.ModelID != cfg.ModelID:
		return []string{fmt.Sprintf("the run would refuse %s: it holds results of another model (%s); use another --out or --force", out.dir, old.ModelPath)}
	}
	return []string{fmt.Sprintf("%s holds results of this job: shards marked done there are skipped (resume)", out.dir)}
}

// readOptions are the reader settings of the job's text (the plan needs no
// passthrough fields).
func (c *Config) readOptions() ReadOptions {
	return ReadOptions{TextField: c.Job.TextField, IDField: c.Job.IDField, MaxDocBytes: c.Job.MaxDocBytes}
}
