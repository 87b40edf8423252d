package engine

import (
	"math/rand/v2"

	"github.com/onecore-dev/onecore/amx"
)

// seqState is one document's decode state: everything the next token
// needs from the tokens before it.
type seqState struct {
	id  int
	pos int // tokens consumed so far = position of the next token

	// per SWA layer: ring of the last `window` keys (post-RoPE) and values
	// in bf16 (slot = position mod W), per head in amx.DecodeAttnBF16's
	// layouts (see putKV) so one kernel call streams a head's
	// whole cache: half the bytes of fp32, and no per-feature calls.
	k, v  [][]amx.BF16
	s     [][]float32 // per linear layer: state [lin_heads × d_state × lin_head_dim]
	msum  [][]float32 // per MoE layer: Σ norm2 outputs over the current route block so far
	mexp  [][]int32   // per MoE layer: the current block's experts (ascending)
	mgate [][]float32 // per MoE layer: their gates

	next    int32 // the token the next step feeds
	req     Request
	made    int     // tokens generated
	gen     []int32 // the generated tokens (kept for Request.Allow)
	rng     *rand.Rand
	stopSet map[int32]bool
}

// newSeqState allocates the state for m.
func newSeqState(m *Model) *seqState {
	c := &m.Cfg
	L := len(c.Layers)
	st := &seqState{
		k: make([][]amx.BF16, L), v: make([][]amx.BF16, L), s: make([][]float32, L),
		msum: make([][]float32, L), mexp: make([][]int32, L), mgate: make([][]float32, L),
	}
	sd := c.SWAHeads * c.SWAHeadDim
	for i, kind := range c.Layers {
		if kind == MixerSWA {
			st.k[i] = make([]amx.BF16, c.Window*sd)
			st.v[i] = make([]amx.BF16, ringPairs(c.Window)*2*sd)
		} else {
			st.s[i] = make([]float32, c.LinHeads*c.DState*c.LinHeadDim)
		}
		if c.IsMoE(i) {
			st.msum[i] = make([]float32, c.DModel)
			st.mexp[i] = make([]int32, c.TopK)
			st.mgate[i] = make([]float32, c.TopK)
		}
	}
	return st
}

// reset clears the state for a new document (no reallocation).
func (st *seqState) reset() {
	st.pos, st.made, st.next = 0, 0, 0
	st.gen = st.gen[:0]
	for i := range st.s {
		clear(st.k[i])
		clear(st.v[i])
		clear(st.s[i])
		clear(st.msum[i])
	}
}

// exportSWA stores the keys (post-RoPE) and values of the document's last
// min(len, W) positions (bf16 values) into the ring at slots position mod W.
func (in *Instance) exportSWA(st *seqState, li int, s segment) {
	c := &in.m.Cfg
	W, sd := c.Window, c.SWAHeads*c.SWAHeadDim
	P := 3 * sd
	if s.off > 0 && s.n < W {
		// The window reaches back into the previous piece's last chunk.
		for q := s.off + s.n - W; q < s.off; q++ {
			i := q - (s.off - W)
			st.putKV(li, W, c.SWAHeadDim, q%W, s.carry.k[li][i*sd:(i+1)*sd], s.carry.v[li][i*sd:(i+1)*sd])
		}
	}
	for p := max(0, s.n-W); p < s.n; p++ {
		r := s.start + p
		st.putKV(li, W, c.SWAHeadDim, (s.off+p)%W, in.prjb[r*P+sd:r*P+2*sd], in.prjb[r*P+2*sd:r*P+3*sd])
	}
}

// putKV writes one position's bf16 key and value (heads·hd values each)
// into ring slot slot, in amx.DecodeAttnBF16's layouts. Keys are
// feature-pair-major with pair rows W slots long (feature f of slot j at
// (f/2)·2W + 2j + f%2; head h's block starts at h·hd·W, ldk = W).
func (st *seqState) putKV(li, W, hd, slot int, k, v []amx.BF16) {
	K := st.k[li]
	for i, o := 0, 2*slot; i < len(k); i, o = i+2, o+2*W {
		K[o], K[o+1] = k[i], k[i+1]
	}
	st.putV(li, W, hd, slot, v)
}

// putV writes one position's bf16 value into ring slot slot. Values are,
// per head, ringPairs(W) slot-pair rows of hd dwords (feature f of head h,
// slot j at h·hd·2·ringPairs(W) + 2·((j/2)·hd + f) + j%2).
func (st *seqState) putV(li, W, hd, slot int, v []amx.BF16) {
	V := st.v[li]
	vh, vo := hd*2*ringPairs(W), 2*(slot/2)*hd+slot%2
	for h := 0; h*hd < len(v); h++ {
		dst := V[h*vh+vo:]
		for f, x := range v[h*hd : (h+1)*hd] {
			dst[2*f] = x
		}
	}
}

// ringPairs is the number of slot pairs of a ring of W slots (the value
// ring is stored in pairs of slots; an odd W leaves its last pair half used).
func ringPairs(W int) int { return (W + 1) / 2 }

// exportLin stores the linear-attention state after the document's last token.
func (in *Instance) exportLin(st *seqState, li int, state []float32) {
	copy(st.s[li], state)
}

// exportFor is the decode state segment si exports to, or nil.
func (in *Instance) exportFor(si int) *seqState {
	if si < len(in.export) {
		return in.export[si]
	}
	return nil
}
