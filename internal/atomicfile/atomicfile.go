// Package atomicfile writes files so that readers see either the old file
// or the complete new one, never a partial write: the data goes to a
// temporary file in the same directory, which is synced and renamed over
// the target, and then the directory is synced so the rename survives a
// crash.
package atomicfile

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Write creates path atomically with mode 0644 from what write produces.
// On any error the temporary file is removed and path is left untouched.
func Write(path string, write func(w io.Writer) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	if err = write(bw); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = bw.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	SyncDir(filepath.Dir(path))
	return nil
}

// WriteFile creates path atomically with mode 0644 holding data.
func WriteFile(path string, data []byte) error {
	return Write(path, func(w io.Writer) error { _, err := w.Write(data); return err })
}

// SyncDir makes a rename in dir durable. Errors are ignored: some file
// systems cannot sync directories, and the rename itself already succeeded.
func SyncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
