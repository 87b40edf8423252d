package engine

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/onecore-dev/onecore/amx"
)

// Request is one document to continue.
type Request struct {
	// Prompt is the document so far (starting with <bos>); it must not be empty.
	Prompt []int32
	// MaxNew bounds the generated tokens (0: until a stop id).
	MaxNew int
	// StopIDs end the continuation (emitted, then the document leaves the
	// batch); nil takes generation.json's stop_ids, or <eos> without one.
	StopIDs []int32
	// Allow, if set, constrains every step: it receives the tokens
	// generated so far and returns the ids the next token may take (the
	// vocabulary mask still applies). An empty set ends the document
	// without a token (Token −1, Done).
	Allow func(generated []int32) []int32
	// LogProbs reports each token's log-probability under the masked (and
	// constrained) distribution at temperature 1 (costs a log-sum-exp over
	// the vocabulary per token).
	LogProbs bool
	// LogProbsBeforeAllow makes LogProbs report log p(Token) under the
	// vocabulary mask alone, before Allow narrows the choice: what a prefill
	// of prompt+continuation would report, so callers need not rescore.
	LogProbsBeforeAllow bool
	Sampling
}

// Token is one generated token.
type Token struct {
	Seq     int     // the id Add returned
	Token   int32   // the generated token (−1: Allow returned no ids)
	Done    bool    // the document left the batch (stop id, MaxNew, or nothing allowed)
	LogProb float32 // log p(Token) when the request asked for LogProbs
}

// Decoder continues many documents at once on one Instance: every Step
// feeds one token per active document as one batch (one GEMM per weight
// with M = active documents) and samples the next. Documents join (Add)
// and leave (stop id, MaxNew, Remove) independently; a document's tokens
// do not depend on which others share its steps.
type Decoder struct {
	in     *Instance
	active []*seqState
	free   []*seqState
	nextID int
	smp    sampler
	logits []float32
	out    []Token
	scores []float32  // one head's attention scores (W)
	probs  []amx.BF16 // one head's bf16 attention probabilities (W)
	att    []float32  // one document's attention output (sd)
	qkv    []amx.BF16 // one document's q, k, v in bf16 (SWA; lin: rounding scratch)
	keep   []float32
	raw    []float32 // a masked row before Allow (LogProbsBeforeAllow)
}

// NewDecoder creates a decoder on in. The decoder uses in's scratch: do
// not interleave Prefill calls on in with a Step in progress.
func (in *Instance) NewDecoder() *Decoder { return &Decoder{in: in} }

// Active is the number of documents in the batch.
func (d *Decoder) Active() int { return len(d.active) }

// Add prefills req.Prompt except its last token (which the next Step
// feeds) and adds the document to the batch; it returns the document's id.
func (d *Decoder) Add(req Request) (int, error) {
	ids, err := d.AddMany([]Request{req})
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// AddMany adds several documents at once: their prompts are prefilled
// packed together (the same results as one by one, with bigger GEMMs).
// On error nothing is added.
func (d *Decoder) AddMany(reqs []Request) ([]int, error) {
	m := d.in.m
	for i, req := range reqs {
		if len(req.Prompt) == 0 {
			return nil, fmt.Errorf("decode: request %d: empty prompt", i)
		}
		if err := d.in.checkDocs([][]int32{req.Prompt}); err != nil {
			return nil, fmt.Errorf("decode: request %d: %w", i, err)
		}
		if req.Temperature < 0 || req.TopK < 0 || req.TopP < 0 || math.IsNaN(float64(req.Temperature)) || math.IsNaN(float64(req.TopP)) {
			return nil, fmt.Errorf("decode: request %d: bad sampling parameters %+v", i, req.Sampling)
		}
	}
	ids := make([]int, len(reqs))
	states := make([]*seqState, len(reqs))
	for i, req := range reqs {
		var st *seqState
		if n := len(d.free); n > 0 {
			st, d.free = d.free[n-1], d.free[:n-1]
			st.reset()
		} else {
			st = newSeqState(m)
		}
		st.id = d.nextID
		d.nextID++
		st.req = req
		stops := req.StopIDs
		if stops == nil {
			stops = m.stopIDs
			if stops == nil {
				stops = []int32{EosID}
			}
		}
		st.stopSet = map[int32]bool{}
		for _, s := range stops {
			st.stopSet[s] = true
		}
		st.rng = rand.New(rand.NewPCG(req.Seed, 0x6f6e65636f7265))
		st.pos = len(req.Prompt) - 1
		st.next = req.Prompt[len(req.Prompt)-1]
		ids[i], states[i] = st.id, st
	}
	d.in.prefillStates(reqs, states)
	d.active = append(d.active, states...)
	return ids, nil
}

// Remove drops document id from the batch (no-op if it is not there).
func (d *Decoder) Remove(id int) {
	for i, st := range d.active {
		if st.id == id {
			d.active = append(d.active[:i], d.active[i+1:]...)
			d.free = append(d.free, st)
			return
		}
	}
}

// Step feeds every active document its next token, samples one token per
// document and returns them (in batch order). Finished documents leave the
// batch. The returned slice is reused by the next Step.
func (d *Decoder) Step() []Token {
	d.out = d.out[:0]
	if len(d.active) == 0 {
		return d.out
	}
	d.forwardStep(nil)
	in := d.in
	V := in.m.Cfg.VocabSize
	t0 := in.tick()
	keep := d.active[:0]
	for i, st := range d.active {
		row := d.logits[i*V : (i+1)*V]
		in.m.applyMask(row)
		lpRow := row
		if st.req.LogProbs && st.req.LogProbsBeforeAllow && st.req.Allow != nil {
			d.raw = growF(d.raw, V)
			lpRow = d.raw[:V]
			copy(lpRow, row)
		}
		tok, lp := int32(-1), float32(0)
		if st.req.Allow == nil || d.constrain(row, st.req.Allow(st.gen)) {
			tok = d.smp.pick(row, &st.req.Sampling, st.rng)
			if st.req.LogProbs {
				lp = in.logProb(lpRow, tok, false)
			}
		}
		st.made++
		st.next = tok
		if st.req.Allow != nil && tok >= 0 {
			st.gen = append(st.gen, tok)
		}
		done := tok < 0 || st.stopSet[tok] || (st.req.MaxNew > 0 && st.made >= st.req.MaxNew)
		d.out = append(d.out, Token{Seq: st.id, Token: tok, Done: done, LogProb: lp})
		if done {
			d.free = append(d.free, st)
		} else {
			keep = append(keep, st)
		}
	}
	clear(d.active[len(keep):])
	d.active = keep
	in.tock(OpOther, t0)
	return d.out
}

// constrain sets every logit outside allowed (and out of range) to −Inf;
// it reports whether any allowed id is still possible.
func (d *Decoder) constrain(row []float32, allowed []int32) bool {
	d.keep = growF(d.keep, len(row))
	ninf := float32(math.Inf(-1))
	for i := range d.keep[:len(row)] {
		d.keep[i] = ninf
	}
	ok := false
	for _, id := range allowed {
		if id >= 0 && int(id) < len(row) && !math.IsInf(float64(row[id]), -1) {
			d.keep[id] = row[id]
			ok = true
		}
	}
	copy(row, d.keep[:len(row)])
	return ok
}

// forwardStep runs one token per active document (st.next, or forced[i]
// when forced is non-nil) and leaves the logits in d.logits [M × V].
func (d *Decoder) forwardStep(forced []int32) {
	in := d.in
	c := &in.m.Cfg
	M := len(d.active)
	D, V := c.DModel, c.VocabSize
	in.n = M
	in.segs = in.segs[:0]
	maxPos := 0
	for _, st := range d.active {
		maxPos = max(maxPos, st.pos+1)
	}
	in.reserve(M, maxPos)
	t0 := in.tick()
	for i, st := range d.active {
		tok := st.next
		if forced != nil {
			tok = forced[i]
		}
		amx.ToFloat32(in.h[i*D:(i+1)*D], in.m.emb[int(tok)*D:(int(tok)+1)*D])
		in.pos[i] = int32(st.pos)
	}
	in.tock(OpElementwise, t0)
	for li := range in.m.layers {
		lw := &in.m.layers[li]
		in.norm(lw.norm1, false)
		if lw.kind == MixerSWA {
			d.swaStep(li, lw)
		} else {
			d.linStep(li, lw)
		}
		in.norm(lw.norm2, lw.moe)
		if lw.moe {
			d.routeStep(li)
			in.moe(li)
		} else {
			in.mlp(lw)
		}
	}
	in.norm(in.m.normG, false)
	if cap(d.logits) < M*V {
		d.logits = make([]float32, M*V, M*V+M*V/4)
	}
	d.logits = d.logits[:M*V]
	in.readout(0, M, d.logits)
	for _, st := range d.active {
		st.pos++
	}
}

// swaStep appends each document's key/value to its ring and attends over
// the last min(pos+1, W) positions (summed in ring-slot order, one
// amx.DecodeAttnBF16 call per head).
func (d *Decoder) swaStep(li int, lw *layerWeights) {
	in := d.in
	c := &in.m.Cfg
	D, H, hd, W := c.DModel, c.SWAHeads, c.SWAHeadDim, c.Window
	sd := H * hd
	P := 3 * sd
	M := in.n
	in.matmul(M, in.xb, D, lw.wqkv, in.proj, P, nil)
	t0 := in.tick()
	scale := float32(1 / math.Sqrt(float64(hd)))
	d.scores = growF(d.scores, W)
	d.probs = growB(d.probs, W)
	d.qkv = growB(d.qkv, P)
	d.att = growF(d.att, sd)
	vHead := hd * 2 * ringPairs(W) // one head's block of the value ring
	for i, st := range d.active {
		p := st.pos
		cs, sn := in.rope(p)
		row := in.proj[i*P : (i+1)*P]
		// q, k rotated and v, all rounded to bf16, as in prefill.
		qkv := d.qkv[:P]
		amx.RoPEHeadsBF16(qkv[:2*sd], row[:2*sd], hd, cs, sn)
		amx.ToBF16(qkv[2*sd:], row[2*sd:])
		// The value goes into the ring now; the key is scored and stored by
		// the kernel (kNew), after it has streamed the key ring.
		slot := p % W
		st.putV(li, W, hd, slot, qkv[2*sd:])
		// Slots 0..nk-1 hold the visible positions (all W once the ring is full).
		nk := min(p+1, W)
		out := d.att[:sd] // in.mix holds n×lin width, which may be less than sd
		K, Vr := st.k[li], st.v[li]
		for h := 0; h < H; h++ {
			amx.DecodeAttnBF16(out[h*hd:(h+1)*hd], qkv[h*hd:(h+1)*hd], K[h*hd*W:(h+1)*hd*W], W,
				Vr[h*vHead:(h+1)*vHead], nk, scale, qkv[sd+h*hd:sd+(h+1)*hd], slot, d.scores, d.probs)
		}
		amx.ToBF16(in.mixb[i*sd:(i+1)*sd], out)
	}
	in.tock(OpAttention, t0)
	ep := in.epilogue()
	ep.Accumulate = true
	in.matmul(M, in.mixb, sd, lw.wo, in.h, D, ep)
}

// roundBF16 replaces every value by its bf16 rounding (through tmp, of
// at least len(x) values: two vector passes instead of a scalar loop).
func roundBF16(x []float32, tmp []amx.BF16) {
	amx.ToBF16(tmp, x)
	amx.ToFloat32(x, tmp[:len(x)])
}

// linStep advances each document's linear-attention state by one token:
// S = e^a·S + k vᵀ, o = (q/√d_state)ᵀ S, then the per-head RMSNorm.
func (d *Decoder) linStep(li int, lw *layerWeights) {
	in := d.in
	c := &in.m.Cfg
	D, H, ds, hd := c.DModel, c.LinHeads, c.DState, c.LinHeadDim
	ld, lvw := H*ds, H*hd
	P := 2*ld + lvw + H
	M := in.n
	in.matmul(M, in.xb, D, lw.wqkv, in.proj, P, nil)
	t0 := in.tick()
	qscale := float32(1 / math.Sqrt(float64(ds)))
	eps := float32(c.NormEps)
	in.sp1 = growF(in.sp1, H)
	d.qkv = growB(d.qkv, 2*ld+lvw)
	for i, st := range d.active {
		row := in.proj[i*P : (i+1)*P]
		roundBF16(row[:2*ld+lvw], d.qkv) // q, k, v take their bf16 values, as in prefill
		out := in.mix[i*lvw : (i+1)*lvw]
		// Decays e^(−softplus(z + b)), the same kernel as prefill.
		sp := in.sp1[:H]
		for h, b := range lw.ba {
			sp[h] = row[2*ld+lvw+h] + b
		}
		amx.Softplus(sp, sp)
		for h := 0; h < H; h++ {
			decay := expf(-sp[h])
			if st.pos == 0 {
				decay = 0 // reset at the document's start, before its own update
			}
			amx.LinAttnStep(out[h*hd:(h+1)*hd], st.s[li][h*ds*hd:(h+1)*ds*hd],
				row[h*ds:(h+1)*ds], row[ld+h*ds:ld+(h+1)*ds], row[2*ld+h*hd:2*ld+(h+1)*hd], decay, qscale)
		}
		amx.RMSNormRows(nil, in.mixb[i*lvw:(i+1)*lvw], out, lw.gn, hd, eps) // per head
	}
	in.tock(OpAttention, t0)
	ep := in.epilogue()
	ep.Accumulate = true
	in.matmul(M, in.mixb, lvw, lw.wo, in.h, D, ep)
}

// routeStep sets each document's routing for this token: at a route-block
// boundary the block's experts are chosen from the mean of the previous
// block's norm2 outputs (zero input at position 0); the running sum then
// takes this token's norm2 output.
func (d *Decoder) routeStep(li int) {
	in := d.in
	c := &in.m.Cfg
	D, K, RB := c.DModel, c.TopK, c.RouteBlock
	lw := &in.m.layers[li]
	t0 := in.tick()
	in.rvec = growF(in.rvec, D)
	for i, st := range d.active {
		if st.pos%RB == 0 {
			var rin []float32
			if st.pos > 0 {
				copy(in.rvec, st.msum[li])
				meanInPlace(in.rvec[:D], RB)
				rin = in.rvec[:D]
			}
			in.route(lw, rin, st.mexp[li], st.mgate[li])
			clear(st.msum[li])
		}
		amx.Add(st.msum[li], in.xf[i*D:(i+1)*D])
		copy(in.rexp[i*K:(i+1)*K], st.mexp[li])
		copy(in.rgate[i*K:(i+1)*K], st.mgate[li])
	}
	in.tock(OpOther, t0)
}

// prefillStates runs every prompt but its last token and leaves the
// decode state in states: short prompts packed PassTokens per pass, long
// ones alone in pieces.
func (in *Instance) prefillStates(reqs []Request, states []*seqState) {
	pass := in.PassTokens
	if pass <= 0 {
		pass = DefaultPassTokens
	}
	align := in.m.Cfg.pieceAlign()
	pieceLen := max(align, pass/align*align)
	in.pieces, in.export = in.pieces[:0], in.export[:0]
	tok := 0
	flush := func() {
		if len(in.pieces) > 0 {
			in.setupPieces(in.pieces)
			in.forward()
		}
		in.pieces, in.export, tok = in.pieces[:0], in.export[:0], 0
	}
	for i, req := range reqs {
		body := req.Prompt[:len(req.Prompt)-1]
		if len(body) == 0 || len(body) > pieceLen {
			continue
		}
		if tok+len(body) > pass {
			flush()
		}
		in.pieces = append(in.pieces, piece{toks: body, final: true})
		in.export = append(in.export, states[i])
		tok += len(body)
	}
	flush()
	for i, req := range reqs {
		body := req.Prompt[:len(req.Prompt)-1]
		if len(body) <= pieceLen {
			continue
		}
		if in.carry == nil {
			in.carry = newCarry(&in.m.Cfg)
		}
		for off := 0; off < len(body); off += pieceLen {
			end := min(off+pieceLen, len(body))
			in.pieces = append(in.pieces[:0], piece{toks: body[off:end], off: off, final: end == len(body), carry: in.carry})
			in.export = in.export[:0]
			if end == len(body) {
				in.export = append(in.export, states[i])
			}
			in.setupPieces(in.pieces)
			in.forward()
		}
	}
	in.export = nil
}
