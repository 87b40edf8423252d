// Package models bundles onecore's trained checkpoints into the binary and
// resolves which checkpoint a command uses: an explicit --model flag (a
// directory, or the name of a bundled model), else $ONECORE_MODEL, else the
// bundled model the task calls for (so `onecore extract` works on a fresh
// clone with no download).
//
// Bundled models (each a checkpoint directory under models/: config.json,
// model.safetensors, tokenizer.json, generation.json, README.md on how it
// was trained):
//
//   - base: the pretrained language model (train/recipes/base.sh), the
//     default for score, embed and extract, and the starting point for
//     `train classify|sft --from base`;
//   - base-small: a narrow pretrained language model
//     (train/recipes/base_small.sh, d_model 128, 4 layers), a starting point
//     for `train extract|classify --from base-small` when documents/s
//     matter more than the last points of accuracy;
//   - base-tiny: the tiniest pretrained language model
//     (train/recipes/base_tiny.sh, d_model 64, 2 layers), a starting point
//     for `train extract --from base-tiny` when documents/s matter most
//     (about 2× the documents/s of base-small's 2-layer span head at 512
//     tokens, for some of its abstention on the hardest family);
//   - spam: a spam/ham email classifier fine-tuned on SpamAssassin
//     (train/recipes/default.sh), the default for classify.
//
// They are embedded with go:embed; since the engine loads checkpoints from a
// directory, BundledDir writes one once into the user's cache directory (or
// a temporary directory when that is not writable) under a
// content-addressed name and returns that path.
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
	"slices"
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
	SourceDefault = "default" // a bundled checkpoint, chosen by the task
	SourceBundled = "bundled" // a bundled checkpoint named by --model or $ONECORE_MODEL
)

// Names of the bundled checkpoints.
const (
	Base      = "base"       // the pretrained language model
	BaseSmall = "base-small" // the narrow pretrained language model
	BaseTiny  = "base-tiny"  // the tiniest pretrained language model (2 layers)
	Spam      = "spam"       // the spam/ham classifier
)

// Bundled lists the bundled checkpoints' names.
var Bundled = []string{Base, BaseSmall, BaseTiny, Spam}

// requiredFiles must all be present for a bundle to count as a checkpoint.
var requiredFiles = []string{"config.json", "model.safetensors", "tokenizer.json"}

//go:embed base base-small base-tiny spam
var bundled embed.FS

// FS returns the bundled checkpoint name as a file system whose root is the
// checkpoint directory (config.json, model.safetensors, ...).
func FS(name string) (fs.FS, error) { return bundleFS(bundled, name) }

func bundleFS(root fs.FS, name string) (fs.FS, error) {
	if !slices.Contains(Bundled, name) {
		return nil, fmt.Errorf("models: no bundled model %q (bundled: %v)", name, Bundled)
	}
	sub, err := fs.Sub(root, name)
	if err != nil {
		return nil, err
	}
	for _, f := range requiredFiles {
		if _, err := fs.Stat(sub, f); err != nil {
			return nil, fmt.Errorf("models: the bundled model %q lacks %s in this build; pass --model DIR or set %s", name, f, EnvVar)
		}
	}
	return sub, nil
}

var (
	dirMu    sync.Mutex
	dirCache = map[string]string{}
)

// BundledDir returns a directory holding the bundled checkpoint name,
// writing it on first use to <user cache dir>/onecore/models/<name>-<hash>,
// or under the temporary directory when the cache directory cannot be
// written (read-only containers). The directory name is derived from the
// content, so a new build never reuses a stale copy, and it appears
// atomically (temp dir + rename), so concurrent processes are safe.
func BundledDir(name string) (string, error) {
	dirMu.Lock()
	defer dirMu.Unlock()
	if d, ok := dirCache[name]; ok {
		return d, nil
	}
	var roots []string
	if base, err := os.UserCacheDir(); err == nil {
		roots = append(roots, filepath.Join(base, "onecore", "models"))
	}
	roots = append(roots, filepath.Join(os.TempDir(), fmt.Sprintf("onecore-models-%d", os.Getuid())))
	var errs []error
	for _, root := range roots {
		d, err := materialize(bundled, name, root)
		if err == nil {
			dirCache[name] = d
			return d, nil
		}
		errs = append(errs, err)
	}
	return "", errors.Join(errs...)
}

// DefaultDir is BundledDir(Spam), the classifier the README's first
// command runs.
func DefaultDir() (string, error) { return BundledDir(Spam) }

// materialize copies the checkpoint in root's folder name to
// cacheRoot/<name>-<hash> unless it is already there, and returns the path.
func materialize(root fs.FS, name, cacheRoot string) (string, error) {
	ck, err := bundleFS(root, name)
	if err != nil {
		return "", err
	}
	names, sum, err := digest(ck)
	if err != nil {
		return "", err
	}
	dst := filepath.Join(cacheRoot, name+"-"+sum[:16])
	if complete(dst, names) {
		return dst, nil
	}
	if err := os.MkdirAll(cacheRoot, 0o755); err != nil {
		return "", fmt.Errorf("models: %w", err)
	}
	tmp, err := os.MkdirTemp(cacheRoot, "."+name+"-tmp-")
	if err != nil {
		return "", fmt.Errorf("models: %w", err)
	}
	defer os.RemoveAll(tmp) // no-op after a successful rename
	for _, f := range names {
		data, err := fs.ReadFile(ck, f)
		if err != nil {
			return "", fmt.Errorf("models: bundled %s/%s: %w", name, f, err)
		}
		if err := os.WriteFile(filepath.Join(tmp, f), data, 0o644); err != nil {
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
		return "", fmt.Errorf("models: installing bundled model %s: %w", name, err)
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

// Resolve picks the checkpoint directory for a command: flag when
// non-empty, else $ONECORE_MODEL when set, else the bundled model named
// fallback. A flag or env value that names a bundled model (base,
// base-small, base-tiny, spam) and is not an existing directory selects that
// bundled model. It also says where the choice came from (SourceFlag,
// SourceEnv, SourceDefault, SourceBundled) so commands can log it. A value
// that is neither a directory nor a bundled name is an error naming where it
// came from.
func Resolve(flag, fallback string) (dir, source string, err error) {
	switch {
	case flag != "":
		dir, source = flag, SourceFlag
	case os.Getenv(EnvVar) != "":
		dir, source = os.Getenv(EnvVar), SourceEnv
	default:
		dir, err = BundledDir(fallback)
		return dir, SourceDefault, err
	}
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) && slices.Contains(Bundled, dir) {
		d, err := BundledDir(dir)
		return d, SourceBundled, err
	}
	if err != nil {
		return "", source, fmt.Errorf("model %q (from %s): %w (bundled models: %v)", dir, describe(source), err, Bundled)
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
