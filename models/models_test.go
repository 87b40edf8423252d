package models

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
)

func fakeBundle() fstest.MapFS {
	return fstest.MapFS{
		"spam/config.json":       {Data: []byte(`{"arch":"onecore-hybrid"}`)},
		"spam/model.safetensors": {Data: []byte("weights")},
		"spam/tokenizer.json":    {Data: []byte(`{"model":{}}`)},
		"spam/generation.json":   {Data: []byte(`{"labels":["ham","spam"]}`)},
	}
}

func TestMaterializeCopiesEveryFile(t *testing.T) {
	root := t.TempDir()
	dir, err := materialize(fakeBundle(), "spam", root)
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range fakeBundle() {
		got, err := os.ReadFile(filepath.Join(dir, filepath.Base(name)))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(f.Data) {
			t.Errorf("%s: got %q, want %q", name, got, f.Data)
		}
	}
	// Second call reuses the same directory; no temp dirs are left behind.
	again, err := materialize(fakeBundle(), "spam", root)
	if err != nil || again != dir {
		t.Fatalf("second materialize = %q, %v; want %q", again, err, dir)
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 {
		t.Errorf("cache root holds %d entries, want 1", len(entries))
	}
}

func TestMaterializeContentAddressed(t *testing.T) {
	root := t.TempDir()
	a, err := materialize(fakeBundle(), "spam", root)
	if err != nil {
		t.Fatal(err)
	}
	changed := fakeBundle()
	changed["spam/model.safetensors"] = &fstest.MapFile{Data: []byte("retrained")}
	b, err := materialize(changed, "spam", root)
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatalf("different bundles share cache dir %s", a)
	}
}

func TestMaterializeConcurrent(t *testing.T) {
	root := t.TempDir()
	var wg sync.WaitGroup
	dirs := make([]string, 8)
	errs := make([]error, 8)
	for i := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dirs[i], errs[i] = materialize(fakeBundle(), "spam", root)
		}()
	}
	wg.Wait()
	for i := range dirs {
		if errs[i] != nil || dirs[i] != dirs[0] {
			t.Fatalf("goroutine %d: %q, %v; want %q", i, dirs[i], errs[i], dirs[0])
		}
	}
	got, err := os.ReadFile(filepath.Join(dirs[0], "model.safetensors"))
	if err != nil || string(got) != "weights" {
		t.Fatalf("model.safetensors = %q, %v", got, err)
	}
}

func TestMissingFilesRefused(t *testing.T) {
	for _, drop := range requiredFiles {
		b := fakeBundle()
		delete(b, "spam/"+drop)
		if _, err := materialize(b, "spam", t.TempDir()); err == nil || !strings.Contains(err.Error(), drop) {
			t.Errorf("without %s: err = %v, want one naming it", drop, err)
		}
	}
	if _, err := materialize(fakeBundle(), "nope", t.TempDir()); err == nil {
		t.Error("an unknown bundled name materialized")
	}
}

// TestBundledByName: --model base (or spam) selects the bundled model
// when no directory of that name exists, and a directory of that name wins
// when there is one.
func TestBundledByName(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv(EnvVar, "")
	for _, name := range Bundled {
		dir, src, err := Resolve(name, Spam)
		want, _ := BundledDir(name)
		if err != nil || src != SourceBundled || dir != want {
			t.Fatalf("Resolve(%q) = %q, %q, %v; want %q", name, dir, src, err, want)
		}
	}
	os.Mkdir("base", 0o755)
	if dir, src, err := Resolve("base", Spam); err != nil || src != SourceFlag || dir != "base" {
		t.Fatalf("a local directory named base: %q, %q, %v", dir, src, err)
	}
	if dir, _, _ := Resolve("", Base); !strings.Contains(dir, "base-") {
		t.Fatalf("fallback base gave %q", dir)
	}
}

// TestUnwritableCacheFallsBack: with a cache directory that cannot be
// written (read-only containers), the bundled model is written under the
// temporary directory instead (it failed with "no model available").
func TestUnwritableCacheFallsBack(t *testing.T) {
	ro := t.TempDir()
	os.Chmod(ro, 0o500)
	defer os.Chmod(ro, 0o755)
	t.Setenv("XDG_CACHE_HOME", filepath.Join(ro, "cache"))
	t.Setenv("HOME", ro)
	t.Setenv("TMPDIR", t.TempDir())
	dirMu.Lock()
	saved := dirCache
	dirCache = map[string]string{}
	dirMu.Unlock()
	defer func() { dirMu.Lock(); dirCache = saved; dirMu.Unlock() }()
	if os.Geteuid() == 0 {
		// root writes anywhere: make the cache path a file instead
		os.Chmod(ro, 0o755)
		os.WriteFile(filepath.Join(ro, "cache"), nil, 0o644)
	}
	dir, err := BundledDir(Spam)
	if err != nil || !strings.HasPrefix(dir, os.Getenv("TMPDIR")) {
		t.Fatalf("BundledDir with an unwritable cache = %q, %v; want a folder under $TMPDIR", dir, err)
	}
}

func TestResolveOrder(t *testing.T) {
	flagDir, envDir := t.TempDir(), t.TempDir()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, flag, env  string
		wantDir, wantSrc string
		wantErr          bool
	}{
		{"flag wins over env", flagDir, envDir, flagDir, SourceFlag, false},
		{"env when no flag", "", envDir, envDir, SourceEnv, false},
		{"missing flag dir", filepath.Join(flagDir, "nope"), "", "", SourceFlag, true},
		{"env names a file", "", file, "", SourceEnv, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvVar, tc.env)
			dir, src, err := Resolve(tc.flag, Spam)
			if (err != nil) != tc.wantErr || src != tc.wantSrc || dir != tc.wantDir {
				t.Fatalf("Resolve(%q) with $%s=%q = %q, %q, %v", tc.flag, EnvVar, tc.env, dir, src, err)
			}
		})
	}
}
