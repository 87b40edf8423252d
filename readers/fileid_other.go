//go:build !unix

package readers

import (
	"io/fs"
	"path/filepath"
)

// fileID identifies the file at path by its path with every link
// resolved, where the file system offers no device and inode numbers.
func fileID(_ fs.FileInfo, path string) any {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		if abs, err := filepath.Abs(real); err == nil {
			return abs
		}
	}
	return path
}
