package jobs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestParseNormalize(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		wantErr string
		check   func(*testing.T, *Job)
	}{
		{name: "empty gets defaults", yaml: "", check: func(t *testing.T, j *Job) {
			if j.Task != TaskClassify || j.TextField != "text" || j.IDField != "id" || j.MaxTokens != DefaultMaxTokens || j.Truncate != TruncateHead || j.ClassifyBy != ClassifyAuto {
				t.Errorf("defaults: %+v", j)
			}
		}},
		{name: "extract", yaml: "task: extract\ntemplate: 'Q: {question}\\n{text}\\nA:'\nquestion_field: q\nextractive: true\nkeep: [url, lang]\n", check: func(t *testing.T, j *Job) {
			if j.MaxNewTokens != DefaultMaxNewTokens || j.MaxSpan != DefaultMaxSpan || !j.Extractive || len(j.Keep) != 2 {
				t.Errorf("%+v", j)
			}
		}},
		{name: "unknown field", yaml: "task: score\nmax_token: 5\n", wantErr: "max_token"},
		{name: "bad task", yaml: "task: summarize\n", wantErr: `task "summarize"`},
		{name: "labels on score", yaml: "task: score\nlabels: [a]\n", wantErr: "labels/classify_by apply"},
		{name: "duplicate label", yaml: "labels: [a, a]\n", wantErr: `"a" listed twice`},
		{name: "keep collides", yaml: "task: score\nkeep: [perplexity]\n", wantErr: "collides"},
		{name: "keep collides with offsets", yaml: "task: extract\nkeep: [answer_start]\n", wantErr: "collides"},
		{name: "keep renames", yaml: "keep: [label:gold, url, 'a:b:a_b', url:link]\n", check: func(t *testing.T, j *Job) {
			if got, want := strings.Join(j.KeepFields(), ","), "label,url,a:b,url"; got != want {
				t.Errorf("fields %q, want %q", got, want)
			}
			if got, want := strings.Join(j.KeepColumns(), ","), "gold,url,a_b,link"; got != want {
				t.Errorf("columns %q, want %q", got, want)
			}
			s := SchemaFor(j, []string{"ham", "spam"}, "")
			if f := s.Field(s.NumFields() - 4); f.Name != "gold" || !f.Nullable {
				t.Errorf("first keep column %+v, want nullable gold", f)
			}
		}},
		{name: "keep alias collides with task column", yaml: "keep: [gold:label]\n", wantErr: `column "label" collides`},
		{name: "keep collides with multilabel column", yaml: "keep: [tags:labels]\n", wantErr: `column "labels" collides`},
		{name: "keep collides with regression column", yaml: "keep: [value]\n", wantErr: `column "value" collides`},
		{name: "keep alias collides with common column", yaml: "task: embed\nkeep: [url:id]\n", wantErr: `column "id" collides`},
		{name: "keep alias collides with kept column", yaml: "keep: [url, link:url]\n", wantErr: `column "url" listed twice`},
		{name: "keep duplicate aliases", yaml: "keep: [a:gold, b:gold]\n", wantErr: `column "gold" listed twice`},
		{name: "keep empty alias", yaml: "keep: ['label:']\n", wantErr: "empty field or column"},
		{name: "keep empty field", yaml: "keep: [':gold']\n", wantErr: "empty field or column"},
		{name: "keep empty spec", yaml: "keep: ['']\n", wantErr: "empty field or column"},
		{name: "extractive on score", yaml: "task: score\nextractive: true\n", wantErr: "extractive applies"},
		{name: "span settings", yaml: "task: extract\nmax_span: 12\nspan_threshold: -1.5\n", check: func(t *testing.T, j *Job) {
			if j.MaxSpan != 12 || j.SpanThreshold != -1.5 {
				t.Errorf("%+v", j)
			}
		}},
		{name: "max_span on classify", yaml: "max_span: 3\n", wantErr: "max_span/span_threshold/window apply"},
		{name: "window on score", yaml: "task: score\nwindow: 100\n", wantErr: "window apply to task extract"},
		{name: "window default", yaml: "task: extract\n", check: func(t *testing.T, j *Job) {
			if j.Window != 0 {
				t.Errorf("window %d, want 0 (whole documents)", j.Window)
			}
		}},
		{name: "window set", yaml: "task: extract\nwindow: 1024\n", check: func(t *testing.T, j *Job) {
			if j.Window != 1024 {
				t.Errorf("window %d", j.Window)
			}
		}},
		{name: "tiny window", yaml: "task: extract\nwindow: 3\n", wantErr: "window 3"},
		{name: "negative max_span", yaml: "task: extract\nmax_span: -2\n", wantErr: "max_span -2"},
		{name: "nan threshold", yaml: "task: extract\nspan_threshold: .nan\n", wantErr: "span_threshold"},
		{name: "bad truncate", yaml: "truncate: middle\n", wantErr: "truncate"},
		{name: "tiny max tokens", yaml: "max_tokens: 1\n", wantErr: "max_tokens 1"},
		{name: "template on embed", yaml: "task: embed\ntemplate: x\n", wantErr: "template applies"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j, err := Parse([]byte(tc.yaml))
			if err == nil {
				err = j.Normalize()
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, j)
		})
	}
}

func TestFingerprint(t *testing.T) {
	a := &Job{Task: TaskScore, In: "x", Out: "y", Model: "m1"}
	b := &Job{Task: TaskScore, In: "z", Out: "w", Model: "m2"}
	if a.Fingerprint() != b.Fingerprint() {
		t.Error("fingerprint depends on where, not only what")
	}
	c := &Job{Task: TaskScore, MaxTokens: 7}
	if a.Fingerprint() == c.Fingerprint() {
		t.Error("fingerprint ignores max_tokens")
	}
	// label:gold writes another column than label: an output of one must
	// not be resumed by the other.
	k1 := &Job{Task: TaskClassify, Keep: []string{"label:gold"}}
	k2 := &Job{Task: TaskClassify, Keep: []string{"label"}}
	k3 := &Job{Task: TaskClassify, Keep: []string{"gold"}}
	if k1.Fingerprint() == k2.Fingerprint() || k1.Fingerprint() == k3.Fingerprint() {
		t.Error("fingerprint ignores a --keep rename")
	}
}

func TestSplitTemplate(t *testing.T) {
	b, a, err := SplitTemplate("Q: {question}\n{text}\nA:", "who?")
	if err != nil || b != "Q: who?\n" || a != "\nA:" {
		t.Fatalf("%q %q %v", b, a, err)
	}
	if _, _, err := SplitTemplate("{text}{text}", ""); err == nil {
		t.Fatal("double {text} accepted")
	}
	b, a, _ = SplitTemplate("Answer:", "")
	if b != "" || a != "Answer:" {
		t.Fatalf("%q %q", b, a)
	}
}

func TestResolvePlacement(t *testing.T) {
	tests := []struct {
		name        string
		rank, world int
		env         map[string]string
		want        Placement
		wantErr     string
	}{
		{name: "default", rank: -1, want: Placement{0, 1, "default"}},
		{name: "flags", rank: 2, world: 4, want: Placement{2, 4, "flags"}},
		{name: "flags beat env", rank: 1, world: 2, env: map[string]string{"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "4"}, want: Placement{1, 2, "flags"}},
		{name: "slurm array", rank: -1, env: map[string]string{"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "4"}, want: Placement{3, 4, "slurm array"}},
		{name: "slurm array offset", rank: -1, env: map[string]string{"SLURM_ARRAY_TASK_ID": "11", "SLURM_ARRAY_TASK_MIN": "10", "SLURM_ARRAY_TASK_COUNT": "2"}, want: Placement{1, 2, "slurm array"}},
		{name: "slurm procid", rank: -1, env: map[string]string{"SLURM_PROCID": "1", "SLURM_NTASKS": "2"}, want: Placement{1, 2, "slurm tasks"}},
		{name: "k8s", rank: -1, world: 5, env: map[string]string{"JOB_COMPLETION_INDEX": "4"}, want: Placement{4, 5, "kubernetes indexed job"}},
		{name: "k8s needs world", rank: -1, env: map[string]string{"JOB_COMPLETION_INDEX": "4"}, wantErr: "needs --world"},
		{name: "rank without world", rank: 1, wantErr: "without --world"},
		{name: "world without rank", rank: -1, world: 3, wantErr: "without --rank"},
		{name: "rank out of range", rank: 4, world: 4, wantErr: "need 0 ≤ rank < world"},
		{name: "garbage env", rank: -1, env: map[string]string{"SLURM_ARRAY_TASK_ID": "x"}, wantErr: "not an integer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ResolvePlacement(tc.rank, tc.world, func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || p != tc.want {
				t.Fatalf("got %+v %v, want %+v", p, err, tc.want)
			}
		})
	}
}

func TestAssignPartitions(t *testing.T) {
	for n := 0; n < 20; n++ {
		for w := 1; w < 7; w++ {
			seen := make([]int, n)
			for r := 0; r < w; r++ {
				idx := Assign(n, Placement{Rank: r, World: w})
				if len(idx) < n/w || len(idx) > n/w+1 {
					t.Fatalf("n=%d w=%d r=%d: unbalanced %v", n, w, r, idx)
				}
				for _, i := range idx {
					seen[i]++
				}
			}
			for i, c := range seen {
				if c != 1 {
					t.Fatalf("n=%d w=%d: shard %d assigned %d times", n, w, i, c)
				}
			}
		}
	}
}

func TestOutDirManifest(t *testing.T) {
	d := OutDir{Path: filepath.Join(t.TempDir(), "out"), Format: "parquet"}
	job := &Job{Task: TaskScore}
	job.Normalize()
	m := Manifest{Job: job, ModelID: "aaa", ModelPath: "m"}
	if err := d.Prepare(m, false); err != nil {
		t.Fatal(err)
	}
	if err := d.Prepare(m, false); err != nil {
		t.Fatalf("same job refused: %v", err)
	}
	os.WriteFile(d.PartPath("p1"), []byte("{}\n"), 0o644) // a marker counts only with its part
	d.MarkDone("p1", Marker{Shard: "s"})
	m2 := m
	m2.ModelID = "bbb"
	if err := d.Prepare(m2, false); err == nil || !strings.Contains(err.Error(), "different model") {
		t.Fatalf("different model: %v", err)
	}
	job2 := &Job{Task: TaskEmbed}
	job2.Normalize()
	if err := d.Prepare(Manifest{Job: job2, ModelID: "aaa"}, false); err == nil || !strings.Contains(err.Error(), "different job") {
		t.Fatalf("different job: %v", err)
	}
	if _, done, _ := d.Done("p1"); !done {
		t.Fatal("marker lost")
	}
	if err := d.Prepare(m2, true); err != nil {
		t.Fatal(err)
	}
	if _, done, _ := d.Done("p1"); done {
		t.Fatal("--force kept old completion markers")
	}
	if err := d.Prepare(m2, false); err != nil {
		t.Fatalf("after force: %v", err)
	}
}

func TestPartName(t *testing.T) {
	a, b := PartName("a/b.jsonl"), PartName("a_b.jsonl")
	if a == b {
		t.Fatal("sanitized names collide")
	}
	if strings.ContainsAny(a, "/ ") || !strings.HasPrefix(a, "part-") {
		t.Fatal(a)
	}
	if PartName(strings.Repeat("x/", 200)) == "" || len(PartName(strings.Repeat("x/", 200))) > 100 {
		t.Fatal("long key")
	}
}

func TestLockExcludes(t *testing.T) {
	d := OutDir{Path: t.TempDir(), Format: "parquet"}
	os.MkdirAll(filepath.Join(d.Path, LockDir), 0o755)
	l1, err := d.Lock("p")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Lock("p"); err != ErrLocked {
		t.Fatalf("second lock: %v", err)
	}
	// Another process can't take it either.
	out, err := exec.Command("flock", "-n", filepath.Join(d.Path, LockDir, "p.lock"), "true").CombinedOutput()
	if err == nil {
		t.Fatalf("flock(1) got a held lock: %s", out)
	}
	l1.Unlock()
	l2, err := d.Lock("p")
	if err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	l2.Unlock()
}

func TestRender(t *testing.T) {
	o := RenderOptions{JobFile: "/jobs/spam it.yaml", JobYAML: []byte("task: classify\nlabels: [spam, ham]\n"), In: "/data/in", Out: "/data/out", World: 4, CPUs: 8, Image: "reg/onecore:1"}
	s, err := RenderSlurm(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"#SBATCH --array=0-3", "--cpus-per-task=8", "'/jobs/spam it.yaml'", "--workers 8"} {
		if !strings.Contains(s, want) {
			t.Errorf("slurm script lacks %q:\n%s", want, s)
		}
	}
	if out, err := exec.Command("bash", "-n", "-c", s).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v %s", err, out)
	}
	k, err := RenderK8s(o)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(strings.NewReader(k))
	var docs []map[string]any
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			break
		}
		docs = append(docs, m)
	}
	if len(docs) != 2 || docs[0]["kind"] != "ConfigMap" || docs[1]["kind"] != "Job" {
		t.Fatalf("manifest docs: %v", docs)
	}
	spec := docs[1]["spec"].(map[string]any)
	if spec["completionMode"] != "Indexed" || spec["completions"] != 4 {
		t.Fatalf("spec %v", spec)
	}
	if got := docs[0]["data"].(map[string]any)["job.yaml"]; got != string(o.JobYAML) {
		t.Fatalf("configmap job %q", got)
	}
	if !strings.Contains(k, "--world") || !strings.Contains(k, "spam-it") {
		t.Fatalf("k8s manifest:\n%s", k)
	}
	if _, err := RenderK8s(RenderOptions{In: "a", Out: "b", World: 1}); err == nil {
		t.Fatal("k8s without image accepted")
	}
	if _, err := RenderSlurm(RenderOptions{In: "a", Out: "b", World: 0}); err == nil {
		t.Fatal("world 0 accepted")
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("task: extract\ntemplate: x\n"))
	f.Add([]byte("labels: [a, b]\nkeep: [x]\n"))
	f.Add([]byte(":::"))
	f.Fuzz(func(t *testing.T, b []byte) {
		j, err := Parse(b)
		if err != nil {
			return
		}
		if j.Normalize() == nil {
			_ = SchemaFor(j, j.Labels, "")
			_ = j.Fingerprint()
		}
	})
}

// TestMarkerNeedsPart: a completion marker whose part is missing (a cleanup
// killed between the two, a part deleted by hand) does not count as done,
// and is removed so the shard is redone.
func TestMarkerNeedsPart(t *testing.T) {
	d := OutDir{Path: t.TempDir(), Format: "parquet"}
	if err := d.Prepare(Manifest{ModelID: "m"}, false); err != nil {
		t.Fatal(err)
	}
	if err := d.MarkDone("p", Marker{Shard: "s", Path: "/in/s"}); err != nil {
		t.Fatal(err)
	}
	if m := d.Marked("p"); m == nil || m.Path != "/in/s" {
		t.Fatalf("Marked: %+v", m)
	}
	if _, done, err := d.Done("p"); done || err != nil {
		t.Fatalf("marker without part counted as done (%v)", err)
	}
	if d.Marked("p") != nil {
		t.Fatal("stale marker kept")
	}
	os.WriteFile(d.PartPath("p"), []byte("x"), 0o644)
	d.MarkDone("p", Marker{Shard: "s"})
	if _, done, _ := d.Done("p"); !done {
		t.Fatal("marker with part not done")
	}
}

func TestPartNameReadable(t *testing.T) {
	for key, want := range map[string]string{
		"part-0000.parquet":   "part-0000-",
		"a/b.jsonl.zst":       "part-a_b-",
		"s00.jsonl.gz":        "part-s00-",
		"part-.parquet":       "part-",
		"weird name.JSONL":    "part-weird_name-",
		"data/part-00001.bin": "part-data_part-00001.bin-",
	} {
		if got := PartName(key); !strings.HasPrefix(got, want) || len(got) != len(want)+8 {
			t.Errorf("PartName(%q) = %q, want %q + 8 hex digits", key, got, want)
		}
	}
	if PartName("x.jsonl") == PartName("x.parquet") {
		t.Error("keys differing only in extension share a part name")
	}
	if got := LegacyPartName("part-0000.parquet"); got != "part-part-0000.parquet-"+PartName("part-0000.parquet")[len("part-0000-"):] {
		t.Errorf("LegacyPartName = %q", got)
	}
}

// TestManifestColumns: a directory whose parts have other output columns
// (written by another onecore version: score gained bits_per_byte) is
// refused without --force, so one output never mixes schemas; a manifest
// that predates the column list is accepted for tasks whose columns did
// not change.
func TestManifestColumns(t *testing.T) {
	for _, tc := range []struct {
		task     Task
		old, new []string
		ok       bool
	}{
		{TaskScore, []string{"id:utf8", "mean_logprob:float64"}, []string{"id:utf8", "mean_logprob:float64"}, true},
		{TaskScore, []string{"id:utf8", "mean_logprob:float64"}, []string{"id:utf8", "mean_logprob:float64", "bits_per_byte:float64"}, false},
		{TaskScore, nil, []string{"id:utf8", "bits_per_byte:float64"}, false},
		{TaskClassify, nil, []string{"id:utf8", "label:utf8"}, true},
	} {
		d := OutDir{Path: t.TempDir(), Format: "parquet"}
		job := &Job{Task: tc.task}
		if tc.task == TaskClassify {
			job.Labels = []string{"a", "b"}
		}
		if err := job.Normalize(); err != nil {
			t.Fatal(err)
		}
		if err := d.Prepare(Manifest{Job: job, ModelID: "m", Columns: tc.old}, false); err != nil {
			t.Fatal(err)
		}
		err := d.Prepare(Manifest{Job: job, ModelID: "m", Columns: tc.new}, false)
		if (err == nil) != tc.ok {
			t.Errorf("%s %v -> %v: %v", tc.task, tc.old, tc.new, err)
		}
		if err != nil && !strings.Contains(err.Error(), "other output columns") {
			t.Errorf("error does not say why: %v", err)
		}
		if err != nil && d.Prepare(Manifest{Job: job, ModelID: "m", Columns: tc.new}, true) != nil {
			t.Error("--force does not recover")
		}
	}
}
