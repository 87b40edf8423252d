package train

import (
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"time"
)

// maxWarmupFrac caps warmup at this fraction of a run's steps: a default
// warmup meant for long runs (e.g. 200 steps) would otherwise never reach
// the peak learning rate on a small corpus.
const maxWarmupFrac = 10

// capWarmup returns the warmup for a run of total steps: at most a tenth
// of them (at least 1 when warmup > 0), logged when it is cut.
func capWarmup(warmup, total int64, log *slog.Logger) int64 {
	limit := max(1, total/maxWarmupFrac)
	if warmup > limit {
		log.Info("warmup capped at 10% of the run", "warmup", limit, "asked", warmup, "steps", total)
		return limit
	}
	return warmup
}

// textHash is the hash that assigns documents to the held-out split.
func textHash(text string) uint64 {
	h := fnv.New64a()
	io.WriteString(h, text)
	return h.Sum64()
}

// heldOutSplit decides the held-out items among items with hashes hs:
// those with hash mod 1000 below permille, or, when that selects none of
// two or more items and permille > 0, the one with the smallest
// (hash mod 1000, hash), so a small corpus still gets a validation split.
// The choice depends on the texts alone, not on their order.
func heldOutSplit(hs []uint64, permille int) []bool {
	held := make([]bool, len(hs))
	any, best := false, -1
	for i, h := range hs {
		held[i] = h%1000 < uint64(permille)
		any = any || held[i]
		if best < 0 || h%1000 < hs[best]%1000 || (h%1000 == hs[best]%1000 && h < hs[best]) {
			best = i
		}
	}
	if !any && permille > 0 && len(hs) >= 2 {
		held[best] = true
	}
	return held
}

// pace tracks a run's speed for its log lines and progress bar.
type pace struct {
	start     time.Time
	steps     int64 // steps run by this invocation
	tokens    int64 // tokens trained by this invocation
	total     int64 // steps of the whole run
	winT      time.Time
	winCPU    float64
	winTokens int64
}

func newPace(total int64) *pace {
	now := time.Now()
	return &pace{start: now, total: total, winT: now, winCPU: cpuSeconds()}
}

// step records one step of tokens.
func (p *pace) step(tokens int64) {
	p.steps++
	p.tokens += tokens
	p.winTokens += tokens
}

// tokPerSec is the throughput since the run (this invocation) started.
func (p *pace) tokPerSec() float64 { return float64(p.tokens) / time.Since(p.start).Seconds() }

// eta is the time left at this invocation's pace, done steps of total.
func (p *pace) eta(done int64) time.Duration {
	if p.steps == 0 {
		return 0
	}
	left := float64(p.total - done)
	return time.Duration(float64(time.Since(p.start)) / float64(p.steps) * left).Round(time.Second)
}

// window returns tokens/s and tokens per CPU-second (0 when unknown)
// since the last call, and starts a new window.
func (p *pace) window() (tps, tpc float64) {
	now, cpu := time.Now(), cpuSeconds()
	tps = float64(p.winTokens) / now.Sub(p.winT).Seconds()
	if d := cpu - p.winCPU; d > 0 {
		tpc = float64(p.winTokens) / d
	}
	p.winT, p.winCPU, p.winTokens = now, cpu, 0
	return tps, tpc
}

// barText is the progress bar's description: what a person follows.
func (p *pace) barText(loss, lr float64) string {
	return fmt.Sprintf("loss %.3f lr %.2g %.0f tok/s", loss, lr, p.tokPerSec())
}
