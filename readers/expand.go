package readers

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
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

// Expand turns inputs (files, directories, glob patterns) into shards.
// Directories are walked recursively and contribute only files with a known
// extension (hidden files and directories, names starting with "." or "_",
// are skipped, as Spark and Hive do); a file named explicitly must have a
// known extension. Shards are sorted by path and duplicates removed, so the
// order does not depend on the order of inputs or of the file system. An
// input that matches nothing is an error.
func Expand(inputs []string) ([]Shard, error) {
	var shards []Shard
	seen := map[string]bool{}
	found := 0 // files the current input matched, duplicates included
	add := func(path, rel string, size int64) {
		found++
		clean := filepath.Clean(path)
		if seen[clean] {
			return
		}
		seen[clean] = true
		shards = append(shards, Shard{Path: clean, Rel: filepath.ToSlash(rel), Size: size, Format: FormatOf(clean)})
	}
	for _, in := range inputs {
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
		found = 0
		for _, p := range matches {
			st, err := os.Stat(p)
			if err != nil {
				return nil, fmt.Errorf("input %q: %w", in, err)
			}
			if isGlob && hiddenName(filepath.Base(p)) {
				continue // as a shell glob would, and as directory walks do
			}
			if !st.IsDir() {
				if FormatOf(p) == FormatUnknown {
					if isGlob {
						continue
					}
					return nil, fmt.Errorf("input %q: unknown format (want .parquet, .jsonl, .jsonl.gz or .jsonl.zst)", p)
				}
				add(p, filepath.Base(p), st.Size())
				continue
			}
			root := p
			err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				name := d.Name()
				if path != root && hiddenName(name) {
					if d.IsDir() {
						return filepath.SkipDir
					}
					return nil
				}
				if d.IsDir() || FormatOf(name) == FormatUnknown {
					return nil
				}
				info, err := d.Info()
				if err != nil {
					return err
				}
				if !info.Mode().IsRegular() && info.Mode()&fs.ModeSymlink == 0 {
					return nil
				}
				rel, err := filepath.Rel(root, path)
				if err != nil {
					return err
				}
				if info.Mode()&fs.ModeSymlink != 0 {
					if info, err = os.Stat(path); err != nil || !info.Mode().IsRegular() {
						return nil
					}
				}
				add(path, rel, info.Size())
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("input %q: %w", in, err)
			}
		}
		if found == 0 {
			return nil, fmt.Errorf("input %q: no .parquet or .jsonl[.gz|.zst] files found", in)
		}
	}
	sort.Slice(shards, func(i, j int) bool { return shards[i].Path < shards[j].Path })
	return shards, nil
}

// hiddenName reports names that directory walks and globs skip: hidden
// files, and Spark/Hive markers and staging folders (_SUCCESS, _temporary),
// which also covers the writers' own .*.tmp-* files.
func hiddenName(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}
