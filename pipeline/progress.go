package pipeline

import (
	"fmt"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progressBytes estimates the input bytes consumed. With readers that know
// their position (Fractioner: Parquet rows of the row count, JSON Lines
// bytes on disk) it is the shards read to the end plus the current shard's
// fraction of its size — so a Parquet/zstd input no longer shows 100 % with
// a tenth of its rows read. Otherwise finished shards count fully and, for
// the rest, text bytes seen are scaled by the finished shards' bytes on disk
// per text byte. The estimate never goes back and never passes the total.
func (r *runner) progressBytes() int64 {
	var est int64
	if cur := r.st.reading.Load(); cur != nil || r.st.readBytes.Load() > 0 {
		est = r.st.readBytes.Load()
		if cur != nil {
			est += int64(cur.f.Fraction() * float64(cur.size))
		}
	} else {
		done, doneText := r.st.doneBytes.Load(), r.st.doneText.Load()
		ratio := 1.0
		if doneText > 0 {
			ratio = float64(done) / float64(doneText)
		}
		est = done + int64(float64(r.st.textSeen.Load()-doneText)*ratio)
	}
	if lim := r.cfg.Job.Limit; lim > 0 {
		// a trial run ends at its row limit, usually long before the input
		rows := r.sum.Previous.RowsIn + r.st.rowsIn.Load()
		est = max(est, int64(float64(r.total)*min(1, float64(rows)/float64(lim))))
	}
	est = min(est, r.total)
	for {
		prev := r.st.progressMax.Load()
		if est <= prev {
			return prev
		}
		if r.st.progressMax.CompareAndSwap(prev, est) {
			return est
		}
	}
}

// startProgress draws a progress bar on a terminal, or logs a line every
// LogEvery otherwise. The returned func stops it.
func (r *runner) startProgress() func() {
	stop := make(chan struct{})
	finished := make(chan struct{})
	start := time.Now()
	rates := func() (docs, toks float64) {
		el := time.Since(start).Seconds()
		if el <= 0 {
			return 0, 0
		}
		return float64(r.st.rowsOut.Load()) / el, float64(r.st.tokens.Load()) / el
	}
	if r.cfg.Progress != nil {
		bar := progressbar.NewOptions64(max(r.total, 1),
			progressbar.OptionSetWriter(r.cfg.Progress),
			progressbar.OptionShowBytes(true),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionSetWidth(30),
			progressbar.OptionShowDescriptionAtLineEnd(),
			progressbar.OptionSetDescription("starting"),
		)
		go func() {
			defer close(finished)
			t := time.NewTicker(250 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stop:
					d, k := rates()
					bar.Describe(fmt.Sprintf("%d docs %.0f docs/s %.0f tok/s %d rejected", r.st.rowsOut.Load(), d, k, r.st.rejected.Load()))
					bar.Set64(r.progressBytes())
					bar.Finish()
					fmt.Fprintln(r.cfg.Progress)
					return
				case <-t.C:
					d, k := rates()
					bar.Describe(fmt.Sprintf("%d docs %.0f docs/s %.0f tok/s %d rejected", r.st.rowsOut.Load(), d, k, r.st.rejected.Load()))
					bar.Set64(r.progressBytes())
				}
			}
		}()
	} else {
		go func() {
			defer close(finished)
			t := time.NewTicker(r.cfg.LogEvery)
			defer t.Stop()
			for {
				// A last line at the end, so even a run shorter than the
				// interval logs its progress once (like the bar's finish).
				final := false
				select {
				case <-stop:
					final = true
				case <-t.C:
				}
				d, k := rates()
				done := r.progressBytes()
				args := []any{"docs", r.st.rowsOut.Load(), "rejected", r.st.rejected.Load(), "docs_per_s", int(d), "tok_per_s", int(k),
					"shards_done", r.st.shardsDone.Load(), "shards_todo", r.sum.ShardsToDo}
				if done > 0 && r.total > 0 {
					el := time.Since(start)
					eta := time.Duration(float64(el) * float64(r.total-done) / float64(done)).Round(time.Second)
					args = append(args, "pct", fmt.Sprintf("%.1f", 100*float64(done)/float64(r.total)), "eta", eta.String())
				}
				r.cfg.Log.Info("progress", args...)
				if final {
					return
				}
			}
		}()
	}
	return func() { close(stop); <-finished }
}
