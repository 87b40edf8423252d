package train

import (
	"context"
	"fmt"
	"log/slog"
	"math"
)

// ProbeOptions measure a checkpoint's copy probes (the induct and shift
// probes of a pretraining run's evals) over many draws of their rows: one
// eval's probe is 240 items drawn from the corpus's token frequencies by
// one seed, and which tokens it draws moves the score by more than its
// binomial noise (the bundled base scored 0.454 and 0.55 on two corpora's
// frequencies). Seeds 1…Seeds are the draws a run with --seed 1…Seeds
// would make, so seed 1 reproduces a default run's eval.
type ProbeOptions struct {
	Checkpoint string
	Tokenizer  Tokenizer // the checkpoint's, for the token cache
	// TokenizerPath is hashed into the token cache's fingerprint.
	TokenizerPath   string
	Data            []string // the corpus whose token frequencies the probes draw from
	TextField       string
	Cache           string // token cache directory (shared with pretraining runs over the same data)
	ValPermille     int    // held-out documents left out of the frequencies, as the run had
	TokenizeWorkers int
	Rows            int // rows per probe and seed (16 in a run's evals)
	Seeds           int
}

// ProbeStat is one probe's scores over the seeds.
type ProbeStat struct {
	Mean    float64   `json:"mean"`
	StdErr  float64   `json:"stderr"` // of the mean, over the seeds
	Min     float64   `json:"min"`
	Max     float64   `json:"max"`
	PerSeed []float64 `json:"per_seed"`
}

// ProbeReport is what Probe measured.
type ProbeReport struct {
	Checkpoint string    `json:"checkpoint"`
	Seeds      int       `json:"seeds"`
	Rows       int       `json:"rows"`
	Items      int       `json:"items_per_probe"` // over all seeds
	Induct     ProbeStat `json:"induct"`
	Shift      ProbeStat `json:"shift"`
}

// Probe runs the copy probes of the checkpoint for seeds 1…o.Seeds.
func Probe(ctx context.Context, o ProbeOptions, log *slog.Logger) (*ProbeReport, error) {
	if o.Rows < 1 || o.Seeds < 1 {
		return nil, fmt.Errorf("rows %d and seeds %d must be positive", o.Rows, o.Seeds)
	}
	c, p, _, err := LoadCheckpoint(o.Checkpoint)
	if err != nil {
		return nil, err
	}
	data, err := OpenTokenCache(ctx, TokenCacheOptions{Dir: o.Cache, Paths: o.Data, TextField: o.TextField,
		Tokenizer: o.Tokenizer, TokenizerPath: o.TokenizerPath, Vocab: c.VocabSize, ValPermille: o.ValPermille,
		Workers: o.TokenizeWorkers, Log: log})
	if err != nil {
		return nil, err
	}
	defer data.Close()
	counts := data.Counts
	uni := newUnigram(counts, true)
	if uni.total == 0 {
		return nil, fmt.Errorf("%v: no tokens to draw the probes from", o.Data)
	}
	mask := make([]bool, c.VocabSize)
	for id, n := range counts {
		mask[id] = n == 0 && id > eosID
	}
	m := NewModel(c, p)
	r := &ProbeReport{Checkpoint: o.Checkpoint, Seeds: o.Seeds, Rows: o.Rows, Items: o.Seeds * o.Rows * 15}
	for seed := 1; seed <= o.Seeds; seed++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s := runProbesN(m, nil, uni, mask, uint64(seed), o.Rows)
		r.Induct.PerSeed = append(r.Induct.PerSeed, s.Induct)
		r.Shift.PerSeed = append(r.Shift.PerSeed, s.Shift)
		log.Info("probe", "seed", seed, "induct", fmt.Sprintf("%.3f", s.Induct), "shift", fmt.Sprintf("%.3f", s.Shift))
	}
	r.Induct.summarize()
	r.Shift.summarize()
	return r, nil
}

func (s *ProbeStat) summarize() {
	n := float64(len(s.PerSeed))
	s.Min, s.Max = math.Inf(1), math.Inf(-1)
	for _, v := range s.PerSeed {
		s.Mean += v / n
		s.Min, s.Max = min(s.Min, v), max(s.Max, v)
	}
	if len(s.PerSeed) > 1 {
		var ss float64
		for _, v := range s.PerSeed {
			ss += (v - s.Mean) * (v - s.Mean)
		}
		s.StdErr = math.Sqrt(ss/(n-1)) / math.Sqrt(n)
	}
}
