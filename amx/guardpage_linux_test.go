//go:build linux

package amx

import (
	"syscall"
	"testing"
	"unsafe"
)

// guarded32 returns n float32s that end exactly at an inaccessible page,
// so a kernel that reads or writes even one element past the end faults.
func guarded32(t testing.TB, n int) []float32 {
	return unsafe.Slice((*float32)(guardedBytes(t, 4*n)), n)
}

// guarded16 is guarded32 for bf16.
func guarded16(t testing.TB, n int) []BF16 {
	return unsafe.Slice((*BF16)(guardedBytes(t, 2*n)), n)
}

// guardedBytes maps size bytes (rounded up to pages) plus one PROT_NONE
// page and returns a pointer size bytes before that page.
func guardedBytes(t testing.TB, size int) unsafe.Pointer {
	ps := syscall.Getpagesize()
	body := (size + ps - 1) / ps * ps
	mem, err := syscall.Mmap(-1, 0, body+ps, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	if err := syscall.Mprotect(mem[body:], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	return unsafe.Pointer(unsafe.SliceData(mem[body-size:]))
}
