package writers

import (
	"math/bits"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Allocator is an Arrow memory allocator that recycles large buffers.
//
// Building record batches with memory.DefaultAllocator allocates fresh
// buffers for every batch; at tens of MB/s that is page faults, zeroing and
// garbage collection, measured at about a third of a JSONL → Parquet
// conversion's CPU time. Released record batches return their buffers
// here and the next batch reuses them while they are hot. Use it for
// builders whose records are released (rec.Release()) once written.
var Allocator memory.Allocator = pool

var pool = &poolAllocator{}

// poolMin is the smallest buffer worth pooling; smaller ones go to the Go
// allocator, where they are cheap.
const poolMin = 64 << 10

// poolMaxBytes caps the memory kept for reuse. A sync.Pool would be emptied
// by every garbage collection, which at these allocation rates is several
// times a second.
const poolMaxBytes = 96 << 20

type poolAllocator struct {
	mu    sync.Mutex
	free  [64][][]byte // by log2 of the capacity
	bytes int
}

func (a *poolAllocator) Allocate(size int) []byte {
	if size < poolMin {
		return memory.DefaultAllocator.Allocate(size)
	}
	b, reused := a.get(size)
	if reused {
		clear(b) // callers expect zeroed memory, as from make
	}
	return b
}

// allocateDirty is Allocate without zeroing a reused buffer, for callers
// that write every byte they use. Sizes below poolMin are not pooled.
func (a *poolAllocator) allocateDirty(size int) []byte {
	if size < poolMin {
		return make([]byte, size)
	}
	b, _ := a.get(size)
	return b
}

// get returns a buffer of len size and a power-of-two capacity, reused
// from the pool when one is free.
func (a *poolAllocator) get(size int) ([]byte, bool) {
	c := bits.Len(uint(size - 1)) // capacity class: 1<<c >= size
	a.mu.Lock()
	if n := len(a.free[c]); n > 0 {
		b := a.free[c][n-1]
		a.free[c] = a.free[c][:n-1]
		a.bytes -= cap(b)
		a.mu.Unlock()
		return b[:size], true
	}
	a.mu.Unlock()
	return make([]byte, size, 1<<c), false
}

func (a *poolAllocator) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		old := len(b)
		b = b[:size]
		if size > old {
			clear(b[old:])
		}
		return b
	}
	nb := a.Allocate(size)
	copy(nb, b)
	a.Free(b)
	return nb
}

func (a *poolAllocator) Free(b []byte) {
	c := cap(b)
	if c < poolMin || c&(c-1) != 0 {
		return // not one of ours (or too small to matter): leave it to the GC
	}
	a.mu.Lock()
	if a.bytes+c <= poolMaxBytes {
		a.free[bits.Len(uint(c-1))] = append(a.free[bits.Len(uint(c-1))], b[:c])
		a.bytes += c
	}
	a.mu.Unlock()
}
