package train

import (
	"log/slog"
	"math"
	"sync"
	"sync/atomic"

	"github.com/onecore-dev/onecore/amx"
	"github.com/onecore-dev/onecore/engine"
)

// Synchronous data parallelism (issue 13). Each step's batch is cut into
// micro-batches whose number and contents depend only on the batch (one
// row, or a fixed group of rows or documents), never on the number of
// workers. Every micro-batch has its own gradient buffer; workers — one
// locked OS thread pinned to its own core, each with its own Model
// (activation caches) over the shared weights — take micro-batches in any
// order, and the buffers are then summed in micro-batch order (in parallel
// over slices of the parameters) into the master gradient, before one
// AdamW step (also parallel over slices, element-wise). Floating-point sums
// then happen in the same order whatever the number of workers, so the
// weights after any number of steps are bit-identical for --workers 1, 2,
// 3, …, and a run may be resumed with a different --workers.

// dpSpan is the number of gradient elements a worker reduces or updates
// per task: large enough that dispatch costs nothing, small enough to
// balance the workers. A multiple of gradBlock.
const dpSpan = 64 * gradBlock

// gradBlock is the block length of GradNorm's sums.
const gradBlock = 1024

// microGrad is one micro-batch's gradient buffer.
type microGrad struct {
	g []float32
	// rows marks the embedding rows the micro-batch wrote (its ids, targets
	// and sampled negatives); with dense set, every row may be non-zero
	// (the full-vocabulary loss). Only marked rows are summed and cleared.
	rows  []bool
	dense bool
}

// dpWorker is one training thread: a Model whose Params share the master
// weights but whose Grad is the buffer of the micro-batch it is running.
type dpWorker struct {
	m   *Model[float32]
	p   *Params[float32]
	mb  *microGrad
	job chan func(*dpWorker)
}

// touch marks embedding rows ids as written by the current micro-batch.
func (w *dpWorker) touch(ids []int32) {
	for _, id := range ids {
		w.mb.rows[id] = true
	}
}

// touchAll marks every embedding row as written.
func (w *dpWorker) touchAll() { w.mb.dense = true }

// dataParallel runs training steps on a fixed set of worker threads.
type dataParallel struct {
	p       *Params[float32] // master weights; Grad receives the reduced gradient
	mbs     []*microGrad
	workers []*dpWorker
	wg      sync.WaitGroup
	embOff  int // the embedding's element range [embOff, embEnd)
	embEnd  int
	d       int       // d_model: elements per embedding row
	blockSq []float64 // per gradBlock block: the sum of squares (GradNorm's terms)
	chunks  []adamChunk
}

// adamChunk is a slice [a, b) of one tensor for the parallel AdamW step.
type adamChunk struct {
	a, b  int
	decay bool
	// With scaled set, lrScale multiplies the learning rate of this chunk:
	// the span trainer gives its fresh head a larger rate than the body,
	// and a frozen body a rate of exactly zero (weight decay included).
	scaled  bool
	lrScale float64
}

// newDataParallel starts workers threads, worker i pinned to the i-th CPU
// this process may use (wrapping around), each with a Model of config c
// over p's weights; auxCoef is the MoE balance weight of one micro-batch.
func newDataParallel(c *Config, p *Params[float32], workers int, auxCoef float64, log *slog.Logger) *dataParallel {
	dp := &dataParallel{p: p, d: c.DModel, embOff: p.Off["emb"]}
	dp.embEnd = dp.embOff + c.VocabSize*c.DModel
	dp.blockSq = make([]float64, (len(p.Grad)+gradBlock-1)/gradBlock)
	for _, s := range p.Specs {
		off := p.Off[s.Name]
		for a := 0; a < s.Size(); a += dpSpan {
			dp.chunks = append(dp.chunks, adamChunk{a: off + a, b: off + min(a+dpSpan, s.Size()), decay: Decayed(s)})
		}
	}
	cpus := engine.AllowedCPUs()
	ready := make(chan struct{})
	for i := 0; i < max(workers, 1); i++ {
		w := &dpWorker{p: &Params[float32]{Specs: p.Specs, Off: p.Off, Data: p.Data}, job: make(chan func(*dpWorker))}
		dp.workers = append(dp.workers, w)
		go func(cpu int) {
			// Locked for good: the pinned thread exits with the goroutine
			// (close), instead of returning to the runtime's pool still
			// pinned to one core.
			if err := engine.PinThread(cpu); err != nil {
				log.Warn("could not pin training worker", "cpu", cpu, "err", err)
			}
			w.m = NewModel(c, w.p)
			w.m.AuxCoef = auxCoef
			ready <- struct{}{}
			for f := range w.job {
				f(w)
				dp.wg.Done()
			}
		}(cpus[i%len(cpus)])
		<-ready
	}
	return dp
}

// close stops the workers; their threads exit.
func (dp *dataParallel) close() {
	for _, w := range dp.workers {
		close(w.job)
	}
	dp.workers = nil
}

// all runs f on every worker and waits for them.
func (dp *dataParallel) all(f func(*dpWorker)) {
	dp.wg.Add(len(dp.workers))
	for _, w := range dp.workers {
		w.job <- f
	}
	dp.wg.Wait()
}

// micro runs fn for micro-batches 0…n−1 on the workers, micro-batch k
// accumulating into its own zeroed gradient buffer (w.p.Grad). fn must mark
// the embedding rows it writes (touch, touchAll).
func (dp *dataParallel) micro(n int, fn func(w *dpWorker, k int)) {
	for len(dp.mbs) < n {
		dp.mbs = append(dp.mbs, &microGrad{g: make([]float32, len(dp.p.Grad)), rows: make([]bool, (dp.embEnd-dp.embOff)/dp.d)})
	}
	var next atomic.Int64
	dp.all(func(w *dpWorker) {
		w.m.reusePacks = false // the weights changed since the last step
		for {
			k := int(next.Add(1) - 1)
			if k >= n {
				return
			}
			w.mb = dp.mbs[k]
			clear(w.mb.rows)
			w.mb.dense = false
			w.p.Grad = w.mb.g
			fn(w, k)
			w.m.reusePacks = true // same weights until the step ends
		}
	})
}

// reduce writes the sum of the first n micro-batch gradients, added in
// micro-batch order, into p.Grad, clears them for the next step, and
// returns the global gradient norm, bit-identical to GradNorm(p).
func (dp *dataParallel) reduce(n int) float64 {
	total := len(dp.p.Grad)
	spans := (total + dpSpan - 1) / dpSpan
	var next atomic.Int64
	dp.all(func(*dpWorker) {
		for {
			s := int(next.Add(1) - 1)
			if s >= spans {
				return
			}
			a, b := s*dpSpan, min((s+1)*dpSpan, total)
			dp.reduceRange(n, a, b)
			for x := a; x < b; x += gradBlock {
				blk := dp.p.Grad[x:min(x+gradBlock, b)]
				dp.blockSq[x/gradBlock] = float64(amx.Dot(blk, blk))
			}
		}
	})
	var s float64
	for _, v := range dp.blockSq {
		s += v
	}
	return math.Sqrt(s)
}

// reduceRange reduces elements [a, b): dense outside the embedding, row by
// row (marked rows only) inside it.
func (dp *dataParallel) reduceRange(n, a, b int) {
	if x, y := max(a, dp.embOff), min(b, dp.embEnd); x < y {
		if a < x {
			dp.sumDense(n, a, x)
		}
		for x < y {
			r := (x - dp.embOff) / dp.d
			e := min(y, dp.embOff+(r+1)*dp.d)
			dp.sumRow(n, r, x, e)
			x = e
		}
		if y < b {
			dp.sumDense(n, y, b)
		}
		return
	}
	dp.sumDense(n, a, b)
}

func (dp *dataParallel) sumDense(n, a, b int) {
	acc := dp.p.Grad[a:b]
	copy(acc, dp.mbs[0].g[a:b])
	clear(dp.mbs[0].g[a:b])
	for k := 1; k < n; k++ {
		g := dp.mbs[k].g[a:b]
		amx.Axpy(1, g, acc)
		clear(g)
	}
}

// sumRow reduces elements [a, b) of embedding row r over the micro-batches
// that wrote it.
func (dp *dataParallel) sumRow(n, r, a, b int) {
	acc := dp.p.Grad[a:b]
	first := true
	for k := 0; k < n; k++ {
		mb := dp.mbs[k]
		if !mb.dense && !mb.rows[r] {
			continue
		}
		g := mb.g[a:b]
		if first {
			copy(acc, g)
			first = false
		} else {
			amx.Axpy(1, g, acc)
		}
		clear(g)
	}
	if first {
		clear(acc)
	}
}

// update applies one AdamW step (as opt.Update) on the workers.
func (dp *dataParallel) update(opt *AdamW, lr, gradScale float64) {
	k, wd := opt.begin(lr, gradScale)
	var next atomic.Int64
	p := dp.p
	dp.all(func(*dpWorker) {
		kc := k
		for {
			i := int(next.Add(1) - 1)
			if i >= len(dp.chunks) {
				return
			}
			c := dp.chunks[i]
			kc.Decay = 1
			if c.decay {
				kc.Decay = wd
			}
			if c.scaled {
				kc.StepSize = k.StepSize * float32(c.lrScale)
				if c.decay {
					kc.Decay = float32(1 - lr*c.lrScale*opt.WeightDecay)
				}
			}
			amx.AdamWStep(p.Data[c.a:c.b], p.Grad[c.a:c.b], opt.M[c.a:c.b], opt.V[c.a:c.b], &kc)
		}
	})
}

// setLRScale multiplies the learning rate of parameter elements from
// offset from onwards (the heads, last in the specs) by head, and of
// those before it (the body) by body; a scale of 0 freezes.
func (dp *dataParallel) setLRScale(from int, body, head float64) {
	for i := range dp.chunks {
		c := &dp.chunks[i]
		c.scaled, c.lrScale = true, body
		if c.a >= from {
			c.lrScale = head
		}
	}
}

// maxMicroBatches is the number of micro-batches per step by default: the
// most workers a step can use, and the most gradient buffers it holds.
const maxMicroBatches = 16

// microRows returns the rows per micro-batch: rows if positive, else the
// fewest that cut batch rows into at most maxMicroBatches micro-batches
// (1 row for a batch of up to 16). It depends on the batch alone, never on
// the number of workers.
func microRows(rows, batch int) int {
	if rows > 0 {
		return rows
	}
	return max(1, (batch+maxMicroBatches-1)/maxMicroBatches)
}

// defaultWorkers is the number of CPUs this process may use.
func defaultWorkers() int { return max(1, len(engine.AllowedCPUs())) }

// resolveWorkers returns the worker count for a run whose steps have at
// most micro micro-batches: n (default: the usable CPUs), no more than
// there are micro-batches to run.
func resolveWorkers(n, micro int, log *slog.Logger) int {
	if n <= 0 {
		n = defaultWorkers()
	}
	if micro > 0 && n > micro {
		log.Info("fewer micro-batches per step than workers: using fewer workers", "workers", micro, "asked", n)
		n = micro
	}
	return max(n, 1)
}
