// Package models bundles onecore's default checkpoint into the binary and
// resolves which checkpoint a command uses: an explicit --model flag, else
// $ONECORE_MODEL, else the bundled default (so `onecore extract` works on a
// fresh clone with no download).
//
// The bundled checkpoint lives in models/default/ (config.json,
// model.safetensors, tokenizer.json, generation.json; see its README.md for
// how it was trained). It is embedded with go:embed; since the engine loads
// checkpoints from a directory, DefaultDir writes it once into the user's
// cache directory under a content-addressed name and returns that path.
package models

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
)

// EnvVar names the environment variable that selects a checkpoint directory
// when no --model flag is given.
const EnvVar = "ONECORE_MODEL"

// Sources reported by Resolve.
const (
	SourceFlag    = "flag"    // --model
	SourceEnv     = "env"     // $ONECORE_MODEL
	SourceDefault = "default" // the bundled checkpoint
)

// requiredFiles must all be present for the bundle to count as a checkpoint.
var requiredFiles = []string{"config.json", "model.safetensors", "tokenizer.json"}

//go:embed default
var bundled embed.FS

// ErrNoDefault reports a build without a bundled checkpoint.
var ErrNoDefault = errors.New("models: no bundled default checkpoint in this build " +
	"(models/default lacks config.json/model.safetensors/tokenizer.json); " +
	"pass --model DIR or set " + EnvVar + ", or build one with train/recipes/default.sh")

// FS returns the bundled default checkpoint as a file system whose root is
// the checkpoint directory (config.json, model.safetensors, ...).
func FS() (fs.FS, error) { return bundleFS(bundled) }

func bundleFS(root fs.FS) (fs.FS, error) {
	sub, err := fs.Sub(root, "default")
	if err != nil {
		return nil, err
	}
	for _, name := range requiredFiles {
		if _, err := fs.Stat(sub, name); err != nil {
			return nil, ErrNoDefault
		}
	}
	return sub, nil
}

var (
	dirOnce sync.Once
	dirPath string
	dirErr  error
)

// DefaultDir returns a directory holding the bundled default checkpoint,
// writing it on first use to <user cache dir>/onecore/models/default-<hash>
// (or under os.TempDir when there is no cache dir). The name is derived from
// the content, so a new build never reuses a stale copy, and the directory
// appears atomically (temp dir + rename), so concurrent processes are safe.
func DefaultDir() (string, error) {
	dirOnce.Do(func() {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		dirPath, dirErr = materialize(bundled, filepath.Join(base, "onecore", "models"))
	})
	return dirPath, dirErr
}

// materialize copies the checkpoint in root's "default" folder to
// cacheRoot/default-<hash> unless it is already there, and returns the path.
func materialize(root fs.FS, cacheRoot string) (string, error) {
	ck, err := bundleFS(root)
	if err != nil {
		return "", err
	}
	names, sum, err := digest(ck)
	if err != nil {
		return "", err
	}
	dst := filepath.Join(cacheRoot, "default-"+sum[:16])
	if complete(dst, names) {
		return dst, nil
	}
	if err := os.MkdirAll(cacheRoot, 0o755); err != nil {
		return "", fmt.Errorf("models: %w", err)
	}
	tmp, err := os.MkdirTemp(cacheRoot, ".default-tmp-")
	if err != nil {
		return "", fmt.Errorf("models: %w", err)
	}
	defer os.RemoveAll(tmp) // no-op after a successful rename
	for _, name := range names {
		data, err := fs.ReadFile(ck, name)
		if err != nil {
			return "", fmt.Errorf("models: bundled %s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o644); err != nil {
			return "", fmt.Errorf("models: %w", err)
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", fmt.Errorf("models: %w", err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		// Another process won the race: its copy has the same content.
		if complete(dst, names) {
			return dst, nil
		}
		return "", fmt.Errorf("models: installing default checkpoint: %w", err)
	}
	return dst, nil
}

// digest lists the checkpoint's regular files (top level only) and hashes
// their names and contents.
func digest(ck fs.FS) ([]string, string, error) {
	entries, err := fs.ReadDir(ck, ".")
	if err != nil {
		return nil, "", err
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	h := sha256.New()
	for _, name := range names {
		data, err := fs.ReadFile(ck, name)
		if err != nil {
			return nil, "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(data))
		h.Write(data)
	}
	return names, hex.EncodeToString(h.Sum(nil)), nil
}

// complete reports whether dir already holds every file in names. Files are
// never modified in place (content-addressed dir, atomic rename), so
// presence is enough.
func complete(dir string, names []string) bool {
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			return false
		}
	}
	return true
}

// Resolve picks the checkpoint directory for a command: flag when non-empty,
// else $ONECORE_MODEL when set, else the bundled default (DefaultDir). It
// also says which of the three it used (SourceFlag, SourceEnv,
// SourceDefault) so commands can log it. A flag or env path that is not a
// directory is an error naming where it came from.
func Resolve(flag string) (dir, source string, err error) {
	switch {
	case flag != "":
		dir, source = flag, SourceFlag
	case os.Getenv(EnvVar) != "":
		dir, source = os.Getenv(EnvVar), SourceEnv
	default:
		dir, err = DefaultDir()
		return dir, SourceDefault, err
	}
	st, err := os.Stat(dir)
	if err != nil {
		return "", source, fmt.Errorf("model %q (from %s): %w", dir, describe(source), err)
	}
	if !st.IsDir() {
		return "", source, fmt.Errorf("model %q (from %s): not a checkpoint directory", dir, describe(source))
	}
	return dir, source, nil
}

func describe(source string) string {
	if source == SourceEnv {
		return "$" + EnvVar
	}
	return "--model"
}
