package models

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/fstest"
)

func fakeBundle() fstest.MapFS {
	return fstest.MapFS{
		"default/config.json":       {Data: []byte(`{"arch":"onecore-hybrid"}`)},
		"default/model.safetensors": {Data: []byte("weights")},
		"default/tokenizer.json":    {Data: []byte(`{"model":{}}`)},
		"default/generation.json":   {Data: []byte(`{"labels":["ham","spam"]}`)},
	}
}

func TestMaterializeCopiesEveryFile(t *testing.T) {
	root := t.TempDir()
	dir, err := materialize(fakeBundle(), root)
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
	again, err := materialize(fakeBundle(), root)
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
	a, err := materialize(fakeBundle(), root)
	if err != nil {
		t.Fatal(err)
	}
	changed := fakeBundle()
	changed["default/model.safetensors"] = &fstest.MapFile{Data: []byte("retrained")}
	b, err := materialize(changed, root)
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
			dirs[i], errs[i] = materialize(fakeBundle(), root)
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

func TestMissingFilesIsErrNoDefault(t *testing.T) {
	for _, drop := range requiredFiles {
		b := fakeBundle()
		delete(b, "default/"+drop)
		if _, err := materialize(b, t.TempDir()); !errors.Is(err, ErrNoDefault) {
			t.Errorf("without %s: err = %v, want ErrNoDefault", drop, err)
		}
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
			dir, src, err := Resolve(tc.flag)
			if (err != nil) != tc.wantErr || src != tc.wantSrc || dir != tc.wantDir {
				t.Fatalf("Resolve(%q) with $%s=%q = %q, %q, %v", tc.flag, EnvVar, tc.env, dir, src, err)
			}
		})
	}
}
