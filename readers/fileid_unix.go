//go:build unix

package readers

import (
	"io/fs"
	"syscall"
)

// devIno identifies a file on unix, whatever path reached it.
type devIno struct{ dev, ino uint64 }

// fileID identifies the file info describes (from os.Stat: links
// followed), so a file reached through several paths is recognised.
func fileID(info fs.FileInfo, path string) any {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return devIno{uint64(st.Dev), uint64(st.Ino)}
	}
	return path
}
