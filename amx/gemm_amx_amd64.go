//go:build amd64 && !purego

package amx

import (
	"unsafe"
)

// The AMX kernel: TDPBF16PS on 16×16 fp32 tiles. B is packed per 64-column
// panel as two 32-column sub-panels; each sub-panel is a run of K tiles
// (32 K-rows each, zero-padded), each K tile two 16×16-pair B tiles
// (columns 0-15 and 16-31 of the sub-panel): 16 rows of K-pairs × 16
// columns × 2 bf16 = the VNNI layout TDPBF16PS wants, 1 KiB, loaded with
// a 64-byte stride. A is tile-loaded in place (row stride lda) when K is
// a multiple of 32, otherwise from a zero-padded copy; a ragged last block
// of rows always comes from a padded copy, so no tile load reads past A.
// The tiles' fp32 sums go to a scratch block and the AVX-512 epilogue of
// dpbf16Panel (with no K-pairs, fLoadAcc) finishes them into C.
const (
	nrAMX = 64 // columns per packed panel
	kAMX  = 32 // K per tile step
	mAMX  = 32 // rows per block (two A tiles)

	chunkAMX = 8 // row blocks per tile call: 256×64 fp32 sums = 64 KiB
)

// amxArgs is amxTiles' argument block (offsets in amx/_gen/amx.go).
type amxArgs struct {
	a      unsafe.Pointer // first row of the A blocks, bf16
	lda    uintptr        // A row stride, bytes
	blocks int            // 32-row blocks
	b      unsafe.Pointer // packed panel
	kt     int            // K tiles (≥ 1)
	nsub   int            // 32-column sub-panels to compute (1 or 2)
	out    unsafe.Pointer // fp32 sums, 64 per row
	ldo    uintptr        // out row stride, bytes (256)
	cfg    unsafe.Pointer // 64-byte tile configuration
}

//go:noescape
func amxTiles(p *amxArgs)

//go:noescape
func amxPeak(cfg *byte, n int)

// amxTilesSim, set only by tests, replaces the tile program with the
// software model (amx_model_test.go) that cannot fault on a CPU without
// AMX. It takes the arguments by value so that the hardware path's
// argument block stays on the stack (a pointer passed to a function
// variable escapes: one allocation per panel).
var amxTilesSim func(amxArgs)

// runTiles runs the tile program on x.
func runTiles(x *amxArgs) {
	if amxTilesSim != nil {
		amxTilesSim(*x)
		return
	}
	amxTiles(x)
}

// amxSimulated, set only by tests, makes KernelAMX available with the
// software tile model in place of the hardware.
var amxSimulated bool

// tileConfig is palette 1 with tiles 0-7 all 16 rows × 64 bytes.
var tileConfig = func() (c [64]byte) {
	c[0] = 1
	for t := 0; t < 8; t++ {
		c[16+2*t] = 64
		c[48+t] = 16
	}
	return c
}()

func init() {
	packImpl[KernelAMX] = packAMX
	matmulImpl[KernelAMX] = matmulAMX
	// 4 TDPBF16PS × 16×16 outputs × 32 K × 2 FLOPs per iteration.
	peakImpl[KernelAMX] = func(iters int) float64 {
		amxPeak(&tileConfig[0], iters)
		return float64(iters) * 4 * 16 * 16 * 32 * 2
	}
}

// packAMXFast says the AVX-512 pack kernels can run (always, where AMX
// can; the software-simulated AMX of the tests may lack AVX-512).
var packAMXFast = func() bool { c := CPU(); return c.AVX512F && c.AVX512BW && c.OSAVX512 }()

// packAMXReference, set only by tests, forces the scalar pack loops.
var packAMXReference bool

// amxPanelLen is the packed size (bf16) of one 64-column panel.
func amxPanelLen(k int) int { return 2 * ((k + kAMX - 1) / kAMX) * 1024 }

// packAMX writes b in the layout above. A K-pair of one column is one
// uint32 (low half the even K row), so a tile row is 16 uint32s: the
// non-transposed case interleaves two B rows, the transposed case reads
// each pair as one 32-bit load. Only a ragged matrix needs the clear.
func packAMX(dst *Matrix, b []BF16, ldb int, transposed bool) {
	k, n := dst.K, dst.N
	kt := (k + kAMX - 1) / kAMX
	panels := (n + nrAMX - 1) / nrAMX
	plen := amxPanelLen(k)
	size := panels * plen
	if cap(dst.bf16) < size {
		dst.bf16 = make([]BF16, size)
	}
	dst.bf16 = dst.bf16[:size]
	dst.f32 = dst.f32[:0]
	if size == 0 {
		return
	}
	if k%kAMX != 0 || n%nrAMX != 0 {
		clear(dst.bf16)
	}
	out := unsafe.Slice((*uint32)(unsafe.Pointer(&dst.bf16[0])), size/2)
	kp := k / 2 // whole K-pairs
	groups := (n + 15) / 16
	// groupBase is the uint32 offset of 16-column group g's first tile.
	groupBase := func(g int) int { return (g/4)*plen/2 + (g%4/2)*kt*512 + g%2*256 }
	pairOff := func(p int) int { return p/16*512 + p%16*16 }
	fast := packAMXFast && !packAMXReference
	if transposed {
		for g := 0; g < groups; g++ {
			gb := groupBase(g)
			if fast && g*16+16 <= n {
				// Whole 32-row K tiles of whole 16-column groups: one
				// 16×16 dword transpose per tile (tile rows 64 bytes apart).
				for t := 0; t < k/kAMX; t++ {
					transpose16x16F32((*float32)(unsafe.Pointer(&out[gb+t*512])),
						(*float32)(unsafe.Pointer(&b[g*16*ldb+t*kAMX])), 64, ldb*2, 1, 1)
				}
				if k%kAMX == 0 {
					continue
				}
			}
			for c := 0; c < min(16, n-g*16); c++ {
				row := b[(g*16+c)*ldb:]
				row = row[:k]
				p0 := 0
				if fast && g*16+16 <= n {
					p0 = k / kAMX * kAMX / 2 // the pairs the transposes wrote
				}
				for p := p0; p < kp; p++ {
					out[gb+pairOff(p)+c] = uint32(row[2*p]) | uint32(row[2*p+1])<<16
				}
				if k%2 != 0 {
					out[gb+pairOff(kp)+c] = uint32(row[k-1])
				}
			}
		}
		return
	}
	for p := 0; p < (k+1)/2; p++ {
		r0 := b[2*p*ldb:]
		r0 = r0[:n]
		var r1 []BF16
		if 2*p+1 < k {
			r1 = b[(2*p+1)*ldb:]
			r1 = r1[:n]
		}
		po := pairOff(p)
		g0 := 0
		if fast && r1 != nil && n >= 32 {
			// Whole 32-column sub-panels: sub-panel s's tiles are kt·2 KiB apart.
			interleaveAMX(&out[po], &r0[0], ldb*2, n/32, kt*2048)
			g0 = n / 32 * 2
		}
		for g := g0; g < groups; g++ {
			j0 := g * 16
			w := min(16, n-j0)
			o := out[groupBase(g)+po:]
			o = o[:w]
			a := r0[j0 : j0+w]
			if r1 == nil {
				for c := range o {
					o[c] = uint32(a[c])
				}
				continue
			}
			bb := r1[j0 : j0+w]
			for c := range o {
				o[c] = uint32(a[c]) | uint32(bb[c])<<16
			}
		}
	}
}

func matmulAMX(m int, a []BF16, lda int, b *Matrix, c []float32, ldc int, ep *Epilogue) {
	k, n := b.K, b.N
	kt := (k + kAMX - 1) / kAMX
	kpad := kt * kAMX
	blocks := (m + mAMX - 1) / mAMX
	full := m / mAMX
	// A in place when K tiles exactly; else a zero-padded copy.
	aIn, ldaIn := unsafe.Pointer(nil), uintptr(lda)*2
	var acopy []BF16
	var abuf *[]float32
	if kt > 0 && k%kAMX != 0 {
		full = 0
	}
	if pad := blocks - full; pad > 0 && kt > 0 {
		abuf = getF32((pad*mAMX*kpad + 1) / 2)
		defer f32Pool.Put(abuf)
		acopy = unsafe.Slice((*BF16)(unsafe.Pointer(&(*abuf)[0])), pad*mAMX*kpad)
		clear(acopy)
		for i := full * mAMX; i < m; i++ {
			copy(acopy[(i-full*mAMX)*kpad:], a[i*lda:i*lda+k])
		}
	}
	if full > 0 && kt > 0 {
		// With K=0 there is nothing to read (A may be empty) and no tile
		// runs: the epilogue alone writes C.
		aIn = unsafe.Pointer(&a[0])
	}
	// Row chunks of chunkAMX blocks: the tiles' sums for one chunk and
	// panel (64 KiB) stay in cache until the epilogue reads them, where one
	// pass over all rows per panel streams M×256 B out and back in.
	obuf := getF32(min(blocks, chunkAMX) * mAMX * nrAMX)
	defer f32Pool.Put(obuf)
	sums := *obuf
	var tmpl dpArgs
	tmpl.ldc = uintptr(ldc) * 4
	epilogueFlags(&tmpl, ep, c)
	var ldo int
	if ep != nil {
		ldo = ep.ldOut(n)
		tmpl.ldo = uintptr(ldo) * 2
	}
	tmpl.flags |= fLoadAcc
	tmpl.acc = unsafe.Pointer(&sums[0])
	// Plain products (C = A·B, nothing else) of whole 32-row blocks and
	// 32-column sub-panels are tile-stored straight into C: the same
	// values the epilogue would copy there, without the round trip.
	direct := c != nil && kt > 0 && full > 0 && tmpl.flags&^fLoadAcc == fStoreC
	plen := amxPanelLen(k)
	for b0 := 0; b0 < blocks; b0 += chunkAMX {
		b1 := min(blocks, b0+chunkAMX)
		r0 := b0 * mAMX
		for pn := 0; pn*nrAMX < n; pn++ {
			j0 := pn * nrAMX
			cols := min(nrAMX, n-j0)
			e0 := b0 // first block the epilogue finishes
			if kt == 0 {
				clear(sums)
			} else {
				x := amxArgs{b: unsafe.Pointer(&b.bf16[pn*plen]), kt: kt, nsub: (cols + 31) / 32,
					ldo: nrAMX * 4, cfg: unsafe.Pointer(&tileConfig[0])}
				if f := min(full, b1); f > b0 { // blocks read in place
					x.a = unsafe.Add(aIn, uintptr(r0)*ldaIn)
					x.lda, x.blocks, x.out = ldaIn, f-b0, unsafe.Pointer(&sums[0])
					if direct && cols%32 == 0 {
						x.out, x.ldo = unsafe.Pointer(&c[r0*ldc+j0]), uintptr(ldc)*4
						e0 = f
					}
					runTiles(&x)
				}
				if p0 := max(full, b0); b1 > p0 { // blocks from the padded copy
					x.a = unsafe.Pointer(&acopy[(p0-full)*mAMX*kpad])
					x.lda, x.blocks = uintptr(kpad)*2, b1-p0
					x.out = unsafe.Pointer(&sums[(p0-e0)*mAMX*nrAMX])
					x.ldo = nrAMX * 4
					runTiles(&x)
				}
			}
			if e0 == b1 {
				continue
			}
			p := tmpl
			er0 := e0 * mAMX
			p.m = min(m, b1*mAMX) - er0
			if cols == nrAMX {
				p.mask = ^uint64(0)
			} else {
				p.mask = 1<<cols - 1
			}
			if c != nil {
				p.c = unsafe.Pointer(&c[er0*ldc+j0])
			}
			if p.flags&fBias != 0 {
				p.bias = unsafe.Pointer(&ep.Bias[j0])
			}
			if p.flags&fColScale != 0 {
				p.cs = unsafe.Pointer(&ep.ColScale[j0])
			}
			if p.flags&fBF16 != 0 {
				p.out = unsafe.Pointer(&ep.OutBF16[er0*ldo+j0])
			}
			dpbf16Panel(&p)
		}
	}
}
