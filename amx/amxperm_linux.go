//go:build amd64 && !purego && linux

package amx

import "golang.org/x/sys/unix"

// requestAMXPermission asks Linux for the AMX tile data state
// (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)); without it the
// first tile instruction faults.
func requestAMXPermission() error {
	_, _, errno := unix.Syscall(unix.SYS_ARCH_PRCTL, archReqXcompPerm, xfeatureXTileData, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
