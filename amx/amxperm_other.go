//go:build amd64 && !purego && !linux

package amx

import "errors"

// requestAMXPermission: only Linux has the arch_prctl permission protocol
// this package knows, so AMX stays off elsewhere.
func requestAMXPermission() error {
	return errors.New("AMX permission request is implemented for Linux only")
}
