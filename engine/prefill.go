package engine

import (
	"fmt"
	"math"

	"github.com/onecore-dev/onecore/amx"
)

// LogitsMode says at which positions Prefill returns logits.
type LogitsMode int

// Logits modes.
const (
	LogitsNone LogitsMode = iota
	LogitsLast            // the document's last position: [vocab]
	LogitsAll             // every position: [n × vocab]
)

// Want selects what Prefill computes per document. The body of the model
// always runs; the readout (the biggest GEMM) only where asked.
type Want struct {
	// Hidden returns the final-RMSNorm output at every position [n × D].
	Hidden bool
	// Mean returns the mean over all positions (<bos> included) of the
	// final-RMSNorm output [D] (embeddings; the classifier head's input).
	Mean bool
	// Logits returns raw readout logits (no vocabulary mask).
	Logits LogitsMode
	// LogProbs returns log p(doc[i+1] | doc[..i]) for i < n−1 [n−1]
	// (scoring). With MaskVocab the generation.json vocabulary mask is
	// applied before the softmax.
	LogProbs  bool
	MaskVocab bool
	// Classify returns the classifier head's logits [n_labels]:
	// mean · head.cls.w + head.cls.b (the checkpoint must have head.cls).
	Classify bool
	// Span returns the span head's [start, end] logits at every position
	// [n × 2] (the checkpoint must have head.span; see SpanDecode).
	Span bool
}

// Result is one document's Prefill output; fields not asked for are nil.
type Result struct {
	Hidden   []float32
	Mean     []float32
	Logits   []float32
	LogProbs []float32
	Class    []float32
	Span     []float32

	poolRows []float32 // attention pooling: the document's rows so far
}

// DefaultPassTokens is how many tokens Prefill packs into one pass by
// default: enough rows that every weight GEMM has M ≥ 256 several times
// over, small enough that the pass's activations stay in L2.
const DefaultPassTokens = 1024

// Prefill runs the model over docs and returns what want asks for, per
// document. Each docs[i] is one document (normally starting with <bos>; its
// first token is position 0 whatever it is); a <bos> inside it is an
// ordinary token — split packed streams with SplitDocs first. Documents are packed several per pass; a document longer than
// a pass is processed in pieces that carry its state, so memory stays
// bounded. A document's results are bit-identical however it is packed,
// ordered, split or spread over instances.
func (in *Instance) Prefill(docs [][]int32, want Want) ([]Result, error) {
	if err := in.checkDocs(docs); err != nil {
		return nil, err
	}
	if want.Classify && in.m.nLabels == 0 {
		return nil, fmt.Errorf("classifier output requested but the checkpoint has no %s tensor", HeadClsW)
	}
	if want.Span && in.m.spanW == nil {
		return nil, fmt.Errorf("span logits requested but the checkpoint has no %s tensor (train one with onecore train extract)", HeadSpanW)
	}
	res := make([]Result, len(docs))
	pass := in.PassTokens
	if pass <= 0 {
		pass = DefaultPassTokens
	}
	align := in.m.Cfg.pieceAlign()
	pieceLen := max(align, pass/align*align)
	in.export = nil
	var idx []int
	tok := 0
	flush := func() {
		if len(idx) == 0 {
			return
		}
		in.pieces = in.pieces[:0]
		for _, i := range idx {
			in.pieces = append(in.pieces, piece{toks: docs[i], final: true})
		}
		in.setupPieces(in.pieces)
		in.forward()
		in.collect(docs, idx, res, want)
		idx, tok = idx[:0], 0
	}
	for i, d := range docs {
		if len(d) > pieceLen {
			continue
		}
		if tok+len(d) > pass {
			flush()
		}
		idx = append(idx, i)
		tok += len(d)
	}
	flush()
	for i, d := range docs {
		if len(d) <= pieceLen {
			continue
		}
		if in.carry == nil {
			in.carry = newCarry(&in.m.Cfg)
		}
		for off := 0; off < len(d); off += pieceLen {
			end := min(off+pieceLen, len(d))
			in.pieces = append(in.pieces[:0], piece{toks: d[off:end], off: off, final: end == len(d), carry: in.carry})
			in.setupPieces(in.pieces)
			in.forward()
			in.collect(docs, []int{i}, res, want)
		}
	}
	return res, nil
}

func (in *Instance) checkDocs(docs [][]int32) error {
	V := in.m.Cfg.VocabSize
	for i, d := range docs {
		if len(d) == 0 {
			return fmt.Errorf("document %d is empty", i)
		}
		if len(d) > math.MaxInt32/2 {
			return fmt.Errorf("document %d has %d tokens", i, len(d))
		}
		for p, t := range d {
			if t < 0 || int(t) >= V {
				return fmt.Errorf("document %d position %d: token id %d out of range 0..%d", i, p, t, V-1)
			}
		}
	}
	return nil
}

// collect extracts the requested outputs of the pass just run; segment k
// of the pass is (a piece of) document idx[k].
func (in *Instance) collect(docs [][]int32, idx []int, res []Result, want Want) {
	D, V := in.m.Cfg.DModel, in.m.Cfg.VocabSize
	for k, s := range in.segs {
		di := idx[k]
		r := &res[di]
		doc := docs[di]
		if want.Hidden {
			if r.Hidden == nil {
				r.Hidden = make([]float32, 0, len(doc)*D)
			}
			r.Hidden = append(r.Hidden, in.xf[s.start*D:(s.start+s.n)*D]...)
		}
		meanHead := want.Classify && in.m.pooling == PoolMean
		if want.Mean || meanHead {
			if r.Mean == nil {
				r.Mean = make([]float32, D)
			}
			in.blockAdd(r.Mean, s.start, s.n) // running sum, in position order
			if s.final {
				meanInPlace(r.Mean, len(doc))
				if meanHead {
					r.Class = in.m.classify(r.Mean)
				}
				if !want.Mean {
					r.Mean = nil
				}
			}
		}
		if want.Classify && !meanHead {
			switch in.m.pooling {
			case PoolLast:
				if s.final {
					last := s.start + s.n - 1
					r.Class = in.m.classify(in.xf[last*D : (last+1)*D])
				}
			case PoolAttention:
				// every row is kept until the document's last piece: the
				// softmax needs all scores, and one pass over all rows at
				// the end gives the same bits however the document was cut
				r.poolRows = append(r.poolRows, in.xf[s.start*D:(s.start+s.n)*D]...)
				if s.final {
					r.Class = in.m.classify(AttentionPool(r.poolRows, in.m.clsQ))
					r.poolRows = nil
				}
			}
		}
		if want.Span {
			if r.Span == nil {
				r.Span = make([]float32, 2*len(doc))
			}
			in.spanLogits(s.start, s.n, r.Span[2*s.off:])
		}
		switch want.Logits {
		case LogitsAll:
			if r.Logits == nil {
				r.Logits = make([]float32, len(doc)*V)
			}
			in.readout(s.start, s.n, r.Logits[s.off*V:])
		case LogitsLast:
			if s.final {
				r.Logits = make([]float32, V)
				in.readout(s.start+s.n-1, 1, r.Logits)
			}
		}
		if want.LogProbs {
			if r.LogProbs == nil {
				r.LogProbs = make([]float32, len(doc)-1)
			}
			var full []float32
			if want.Logits == LogitsAll {
				full = r.Logits[s.off*V:]
			}
			in.logProbs(doc, s, full, r.LogProbs, want.MaskVocab)
		}
	}
}

// readout writes logits = xb[rows] · Eᵀ for n rows from row r0.
func (in *Instance) readout(r0, n int, dst []float32) {
	D, V := in.m.Cfg.DModel, in.m.Cfg.VocabSize
	in.matmul(n, in.xb[r0*D:], D, in.m.readT, dst, V, nil)
}

// logProbTile is how many rows of logits logProbs materialises at once.
const logProbTile = 32

// logProbs writes out[p] = log p(doc[p+1] | ..p) for the segment's
// positions p (except the document's last), from full (the segment's
// logits, when the caller computed them anyway; left unmasked) or tiles of
// readout. With mask the vocabulary mask is applied first.
func (in *Instance) logProbs(doc []int32, s segment, full []float32, out []float32, mask bool) {
	V := in.m.Cfg.VocabSize
	n := s.n
	if s.final {
		n-- // the last position has no next token
	}
	if full == nil {
		in.lpTile = growF(in.lpTile, logProbTile*V)
	}
	for i0 := 0; i0 < n; i0 += logProbTile {
		nr := min(logProbTile, n-i0)
		rows := full
		if full != nil {
			rows = full[i0*V:]
		} else {
			in.readout(s.start+i0, nr, in.lpTile)
			rows = in.lpTile
		}
		t0 := in.tick()
		for i := 0; i < nr; i++ {
			p := s.off + i0 + i
			out[p] = in.logProb(rows[i*V:(i+1)*V], doc[p+1], mask)
		}
		in.tock(OpOther, t0)
	}
}

// logProb returns log softmax(row)[t] (after the vocabulary mask when
// mask), leaving row unchanged: the vectorised amx.SoftmaxRow on a copy,
// and an exact log-sum-exp when the probability is too small for fp32.
func (in *Instance) logProb(row []float32, t int32, mask bool) float32 {
	in.lpRow = growF(in.lpRow, len(row))
	tmp := in.lpRow
	copy(tmp, row)
	if mask {
		in.m.applyMask(tmp)
	}
	amx.SoftmaxRow(tmp)
	if p := tmp[t]; p >= 1e-30 {
		return float32(math.Log(float64(p)))
	}
	copy(tmp, row)
	if mask {
		in.m.applyMask(tmp)
	}
	return tmp[t] - logSumExp(tmp)
}

// logSumExp is log Σ exp(x) computed stably.
func logSumExp(x []float32) float32 {
	m := float32(math.Inf(-1))
	for _, v := range x {
		if v > m {
			m = v
		}
	}
	if math.IsInf(float64(m), -1) {
		return m
	}
	var s float32
	for _, v := range x {
		s += expf(v - m)
	}
	return m + float32(math.Log(float64(s)))
}

// applyMask sets the logits of generation.json's masked ids to −Inf.
func (m *Model) applyMask(logits []float32) {
	if m.Gen == nil {
		return
	}
	ninf := float32(math.Inf(-1))
	for _, id := range m.Gen.VocabMask {
		logits[id] = ninf
	}
}

// classify applies the classifier head to a mean-pooled hidden state.
func (m *Model) classify(mean []float32) []float32 {
	n := m.nLabels
	out := append([]float32(nil), m.clsB...)
	for d, x := range mean {
		amx.Axpy(x, m.clsW[d*n:(d+1)*n], out)
	}
	return out
}

// AttentionPool returns Σ_t a_t·h_t with a = AttentionWeights(h, q), in
// float64 and position order. The float64 sums make the result independent
// of SIMD width; a document of one row returns that row.
func AttentionPool(h, q []float32) []float32 {
	D := len(q)
	acc := make([]float64, D)
	for t, a := range AttentionWeights(h, q) {
		for i, v := range h[t*D : (t+1)*D] {
			acc[i] += a * float64(v)
		}
	}
	out := make([]float32, D)
	for i, v := range acc {
		out[i] = float32(v)
	}
	return out
}

// AttentionWeights is softmax_t(h_t·q) over the rows h_t of h (each len(q)
// wide), in float64: attention pooling's weights, shared with the trainer
// (which also needs them for the gradient). No 1/√d on the score: the query
// starts at zero (not at a random scale the factor would tame), and with
// the factor AdamW's per-step move of q shifted the scores √d times less —
// after a 1-epoch fine-tune (100 steps, lr 3e-4) q was still ~0.005 per
// coordinate and the pooling still the mean.
func AttentionWeights[T ~float32 | ~float64](h, q []T) []float64 {
	D := len(q)
	n := len(h) / D
	a := make([]float64, n)
	mx := math.Inf(-1)
	for t := range n {
		var s float64
		for i, v := range h[t*D : (t+1)*D] {
			s += float64(v) * float64(q[i])
		}
		a[t] = s
		mx = math.Max(mx, s)
	}
	var z float64
	for t := range a {
		a[t] = math.Exp(a[t] - mx)
		z += a[t]
	}
	for t := range a {
		a[t] /= z
	}
	return a
}

// SplitDocs splits a packed stream into documents: a new document starts
// at every <bos> and at the start of the stream (even without <bos>).
func SplitDocs(stream []int32) [][]int32 {
	var docs [][]int32
	start := 0
	for i, t := range stream {
		if t == BosID && i > start {
			docs = append(docs, stream[start:i])
			start = i
		}
	}
	if len(stream) > start {
		docs = append(docs, stream[start:])
	}
	return docs
}
