package readers

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/onecore-dev/onecore/internal/blobstore"
)

// FormatOf returns the shard format implied by a file name, or
// FormatUnknown. Recognised: .parquet, .jsonl/.ndjson/.json, each of the
// JSON ones optionally followed by .gz/.gzip or .zst/.zstd.
func FormatOf(name string) Format {
	n := strings.ToLower(name)
	comp := FormatJSONL
	switch {
	case strings.HasSuffix(n, ".parquet"):
		return FormatParquet
	case strings.HasSuffix(n, ".gz"), strings.HasSuffix(n, ".gzip"):
		comp = FormatJSONLGzip
		n = strings.TrimSuffix(strings.TrimSuffix(n, ".gz"), ".gzip")
	case strings.HasSuffix(n, ".zst"), strings.HasSuffix(n, ".zstd"):
		comp = FormatJSONLZstd
		n = strings.TrimSuffix(strings.TrimSuffix(n, ".zst"), ".zstd")
	}
	for _, ext := range []string{".jsonl", ".ndjson", ".json"} {
		if strings.HasSuffix(n, ext) {
			return comp
		}
	}
	return FormatUnknown
}

// Expand is ExpandLog with warnings on slog.Default().
func Expand(inputs []string) ([]Shard, error) {
	return ExpandLog(inputs, nil)
}

// ExpandLog turns inputs (files, directories, glob patterns) into shards.
// Directories are walked recursively and contribute only files with a known
// extension (hidden files and directories, names starting with "." or "_",
// are skipped, as Spark and Hive do); a file named explicitly must have a
// known extension. An object-storage URL (s3://bucket/prefix, see
// expandRemote) is listed like a directory. Shards are sorted by path and duplicates removed, so the
// order does not depend on the order of inputs or of the file system. An
// input that matches nothing is an error.
//
// Symbolic links are followed, to files and to directories. What cannot
// be read is never skipped silently: each of these is skipped with a
// warning on log (slog.Default() when nil): a dangling link, a link cycle
// (a link to a directory that holds it), and a non-regular file (named
// pipe, socket, device) with a shard's extension, in a directory or
// matched by a glob. Named explicitly, a dangling link or a non-regular
// file is an error instead: onecore sizes, resumes and may reread every
// shard, which a pipe cannot offer, and opening a FIFO with no writer
// would block forever.
//
// A file reached through several paths (links, hard links, overlapping
// inputs) is one shard, read once: the path reached without a directory
// or file link when there is one, else the first in byte order, so a
// shard's name (and the output part derived from it) does not change when
// a link to it is added or removed. A warning names the paths when they
// differ.
func ExpandLog(inputs []string, log *slog.Logger) ([]Shard, error) {
	if log == nil {
		log = slog.Default()
	}
	e := &expander{log: log, byID: map[any]int{}, linked: map[int]bool{}, also: map[int][]string{}}
	for _, in := range inputs {
		if blobstore.Remote(in) {
			if err := e.expandRemote(in); err != nil {
				return nil, err
			}
			continue
		}
		matches := []string{in}
		isGlob := strings.ContainsAny(in, "*?[")
		if isGlob {
			m, err := filepath.Glob(in)
			if err != nil {
				return nil, fmt.Errorf("input %q: %v", in, err)
			}
			if len(m) == 0 {
				return nil, fmt.Errorf("input %q: no file matches", in)
			}
			matches = m
		}
		e.found = 0
		for _, p := range matches {
			if isGlob && hiddenName(filepath.Base(p)) {
				continue // as a shell glob would, and as directory walks do
			}
			st, err := os.Stat(p)
			if err != nil {
				if _, lerr := os.Lstat(p); isGlob && lerr == nil {
					e.skipLink(p, err) // the glob matched the link itself
					continue
				}
				return nil, fmt.Errorf("input %q: %w", in, err)
			}
			if st.IsDir() {
				if err := e.walk(p, "", []any{fileID(st, p)}, false); err != nil {
					return nil, fmt.Errorf("input %q: %w", in, err)
				}
				continue
			}
			if FormatOf(p) == FormatUnknown {
				if isGlob {
					continue
				}
				return nil, fmt.Errorf("input %q: unknown format (want .parquet, .jsonl, .jsonl.gz or .jsonl.zst)", p)
			}
			if !st.Mode().IsRegular() {
				if isGlob {
					e.warn(p, "not a regular file ("+kindOf(st.Mode())+"): skipped")
					continue
				}
				return nil, fmt.Errorf("input %q: not a regular file (%s): onecore reads shards from regular files only (it sizes, resumes and may reread them); copy the stream to a file first", p, kindOf(st.Mode()))
			}
			e.add(p, filepath.Base(p), st, false)
		}
		if e.found == 0 {
			return nil, fmt.Errorf("input %q: no .parquet or .jsonl[.gz|.zst] files found", in)
		}
	}
	e.warnAlso()
	sort.Slice(e.shards, func(i, j int) bool { return e.shards[i].Path < e.shards[j].Path })
	return e.shards, nil
}

// expandRemote adds the shards of an object-storage input: the object
// itself when the URL names one with a shard's extension, else every object
// under the prefix taken as a folder, with the rules of a directory walk (a
// known extension; no path component hidden, i.e. starting with "." or
// "_"). Globs are not expanded in object URLs (a listing is by prefix).
func (e *expander) expandRemote(in string) error {
	ctx := context.Background()
	if strings.ContainsAny(in, "*?[") {
		return fmt.Errorf("input %q: globs are not supported in object-storage URLs; give the prefix (a folder) instead", in)
	}
	l, err := blobstore.Parse(in)
	if err != nil {
		return fmt.Errorf("input %q: %w", in, err)
	}
	if l.Key != "" && !strings.HasSuffix(l.Key, "/") && FormatOf(l.Key) != FormatUnknown {
		if n, mod, err := blobstore.Stat(ctx, in); err == nil {
			e.shards = append(e.shards, Shard{Path: in, Rel: path.Base(l.Key), Size: n, ModNS: mod, Format: FormatOf(l.Key)})
			return nil
		} else if !blobstore.IsNotExist(err) {
			return fmt.Errorf("input %q: %w", in, err)
		}
	}
	objs, err := blobstore.List(ctx, in)
	if err != nil {
		return fmt.Errorf("input %q: %w", in, err)
	}
	found := 0
	for _, o := range objs {
		if hiddenPath(o.Rel) || FormatOf(o.Rel) == FormatUnknown {
			continue
		}
		found++
		if e.remote[o.Path] {
			continue // overlapping inputs: one shard
		}
		if e.remote == nil {
			e.remote = map[string]bool{}
		}
		e.remote[o.Path] = true
		e.shards = append(e.shards, Shard{Path: o.Path, Rel: o.Rel, Size: o.Size, ModNS: o.ModNS, Format: FormatOf(o.Rel)})
	}
	if found == 0 {
		return fmt.Errorf("input %q: no .parquet or .jsonl[.gz|.zst] objects found under it", in)
	}
	return nil
}

// hiddenPath reports a relative object key with a hidden component.
func hiddenPath(rel string) bool {
	for _, c := range strings.Split(rel, "/") {
		if hiddenName(c) {
			return true
		}
	}
	return false
}

// expander accumulates the shards of ExpandLog's inputs.
type expander struct {
	log    *slog.Logger
	shards []Shard
	byID   map[any]int      // fileID → index in shards
	linked map[int]bool     // shards whose path goes through a link
	also   map[int][]string // the other paths of shards reached more than once
	found  int              // files the current input matched, duplicates included
	remote map[string]bool  // object paths added (objects have no links to resolve)
}

func (e *expander) warn(path, reason string) {
	e.log.Warn("input skipped", "path", path, "reason", reason)
}

// add records the file at path (info from os.Stat), once per file.
func (e *expander) add(path, rel string, info fs.FileInfo, viaLink bool) {
	e.found++
	clean := filepath.Clean(path)
	id := fileID(info, clean)
	sh := Shard{Path: clean, Rel: filepath.ToSlash(rel), Size: info.Size(), ModNS: info.ModTime().UnixNano(), Format: FormatOf(clean)}
	i, dup := e.byID[id]
	if !dup {
		e.byID[id] = len(e.shards)
		e.linked[len(e.shards)] = viaLink
		e.shards = append(e.shards, sh)
		return
	}
	old := e.shards[i]
	if old.Path == clean {
		return // the same path named twice (overlapping inputs)
	}
	// Prefer the path without links, then the first in byte order: the
	// choice depends on the files, not on the order of inputs or walks.
	if e.linked[i] && !viaLink || e.linked[i] == viaLink && clean < old.Path {
		e.shards[i] = sh
		e.linked[i] = viaLink
		sh = old
	}
	if !slices.Contains(e.also[i], sh.Path) {
		e.also[i] = append(e.also[i], sh.Path)
	}
}

// warnAlso warns once per file reached through several paths, naming the
// path read and the others, in path order.
func (e *expander) warnAlso() {
	var idx []int
	for i := range e.also {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(a, b int) bool { return e.shards[idx[a]].Path < e.shards[idx[b]].Path })
	for _, i := range idx {
		also := e.also[i]
		sort.Strings(also)
		e.log.Warn("input reached through several paths: read once", "path", e.shards[i].Path, "also", strings.Join(also, ", "))
	}
}

// skipLink warns about the symbolic link at path whose os.Stat failed.
func (e *expander) skipLink(path string, err error) {
	target, _ := os.Readlink(path)
	if errors.Is(err, syscall.ELOOP) {
		e.warn(path, "symbolic link cycle (-> "+target+"): not followed")
		return
	}
	e.warn(path, "dangling symbolic link (-> "+target+"): skipped")
}

// walk adds the files under dir, following links; ancestors holds the
// fileIDs of dir and the directories above it in this walk, so a link
// back to one of them (a cycle) is reported instead of followed forever.
func (e *expander) walk(dir, rel string, ancestors []any, viaLink bool) error {
	ents, err := os.ReadDir(dir) // sorted by name: a deterministic walk
	if err != nil {
		return err
	}
	for _, d := range ents {
		name := d.Name()
		if hiddenName(name) {
			continue
		}
		path, r := filepath.Join(dir, name), filepath.Join(rel, name)
		link := d.Type()&fs.ModeSymlink != 0
		var info fs.FileInfo
		if link {
			if info, err = os.Stat(path); err != nil {
				if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ELOOP) {
					e.skipLink(path, err)
					continue
				}
				return err
			}
		} else if info, err = d.Info(); err != nil {
			return err
		}
		switch {
		case info.IsDir():
			id := fileID(info, path)
			if slices.Contains(ancestors, id) {
				target, _ := os.Readlink(path)
				e.warn(path, "symbolic link cycle (-> "+target+", a directory above it): not followed")
				continue
			}
			if err := e.walk(path, r, append(ancestors[:len(ancestors):len(ancestors)], id), viaLink || link); err != nil {
				return err
			}
		case FormatOf(name) == FormatUnknown:
		case !info.Mode().IsRegular():
			e.warn(path, "not a regular file ("+kindOf(info.Mode())+"): skipped")
		default:
			e.add(path, r, info, viaLink || link)
		}
	}
	return nil
}

// kindOf names a non-regular file's type for messages.
func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "mode " + m.String()
}

// hiddenName reports names that directory walks and globs skip: hidden
// files, and Spark/Hive markers and staging folders (_SUCCESS, _temporary),
// which also covers the writers' own .*.tmp-* files.
func hiddenName(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}
