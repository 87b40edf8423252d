package readers

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// writeShard writes content to dir/name, compressed as the name says.
func writeShard(t testing.TB, dir, name string, content []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	var buf bytes.Buffer
	switch FormatOf(name) {
	case FormatJSONLGzip:
		zw := gzip.NewWriter(&buf)
		zw.Write(content)
		zw.Close()
	case FormatJSONLZstd:
		zw, _ := zstd.NewWriter(&buf)
		zw.Write(content)
		zw.Close()
	default:
		buf.Write(content)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// result is what reading one row gave.
type result struct {
	doc Document
	rej *Reject
}

// readAll reads a shard to the end, returning rows and the final error
// (nil at a clean end).
func readAll(t testing.TB, path string, opts Options) ([]result, error) {
	t.Helper()
	r, err := Open(path, opts)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []result
	for {
		doc, err := r.Next()
		if err == io.EOF {
			if r.Rows() != int64(len(out)) {
				t.Fatalf("Rows() = %d, delivered %d", r.Rows(), len(out))
			}
			return out, nil
		}
		var rej *Reject
		if errors.As(err, &rej) {
			out = append(out, result{rej: rej})
			continue
		}
		if err != nil {
			return out, err
		}
		out = append(out, result{doc: doc})
	}
}

func TestJSONLRows(t *testing.T) {
	content := strings.Join([]string{
		`{"id":"a","text":"hello","lang":"en","n":3,"meta":{"b": [1, 2], "a": "x"}}`,
		`{"text":"no id","lang":null}`,
		``,
		`   `,
		`not json`,
		`{"id":7,"text":""}`,
		`{"id":"b"}`,
		`{"id":"c","text":null}`,
		`{"id":"d","text":42}`,
		`{"id":null,"text":"null id","flag":true}`,
		"{\"id\":\"crlf\",\"text\":\"x\"}\r",
		`{"id":"last","text":"no newline at end"}`,
	}, "\n")
	opts := Options{Keep: []string{"lang", "n", "meta", "flag", "absent"}}
	type want struct {
		id, text string
		keep     []string // "" = null
		reject   string
	}
	wants := []want{
		{id: "a", text: "hello", keep: []string{"en", "3", `{"b":[1,2],"a":"x"}`, "", ""}},
		{id: "F:1", text: "no id", keep: []string{"", "", "", "", ""}},
		{reject: "want a JSON object"},
		{id: "7", text: "", keep: []string{"", "", "", "", ""}},
		{reject: `no "text" field`},
		{reject: `"text" is null`},
		{reject: `"text" is a number, want a string`},
		{id: "F:9", text: "null id", keep: []string{"", "", "", "true", ""}},
		{id: "crlf", text: "x", keep: []string{"", "", "", "", ""}},
		{id: "last", text: "no newline at end", keep: []string{"", "", "", "", ""}},
	}
	wantRows := []int64{0, 1, 4, 5, 6, 7, 8, 9, 10, 11}
	for _, name := range []string{"a.jsonl", "a.jsonl.gz", "a.jsonl.zst", "a.ndjson"} {
		t.Run(name, func(t *testing.T) {
			path := writeShard(t, t.TempDir(), name, []byte(content))
			rows, err := readAll(t, path, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != len(wants) {
				t.Fatalf("%d rows, want %d", len(rows), len(wants))
			}
			for i, w := range wants {
				got := rows[i]
				if w.reject != "" {
					if got.rej == nil || !strings.Contains(got.rej.Reason, w.reject) || got.rej.File != path || got.rej.Row != wantRows[i] {
						t.Errorf("row %d: got %+v, want reject %q at row %d", i, got, w.reject, wantRows[i])
					}
					if got.rej != nil && got.rej.Excerpt == "" {
						t.Errorf("row %d: reject without excerpt", i)
					}
					continue
				}
				if got.rej != nil {
					t.Errorf("row %d: unexpected reject %v", i, got.rej)
					continue
				}
				d := got.doc
				wantID := strings.Replace(w.id, "F:", path+":", 1)
				if d.ID != wantID || d.Text != w.text || d.Source.File != path || d.Source.Row != wantRows[i] {
					t.Errorf("row %d: got id %q text %q source %+v, want id %q text %q row %d", i, d.ID, d.Text, d.Source, wantID, w.text, wantRows[i])
				}
				for k, kv := range w.keep {
					gv := d.Keep[k]
					if (kv == "") == gv.Valid || gv.S != kv {
						t.Errorf("row %d keep %s: got %+v, want %q", i, opts.Keep[k], gv, kv)
					}
				}
			}
		})
	}
}

func TestJSONLFieldOptions(t *testing.T) {
	path := writeShard(t, t.TempDir(), "f.jsonl", []byte(`{"doc_id":"x","content":"body","text":"not this"}`+"\n"))
	rows, err := readAll(t, path, Options{TextField: "content", IDField: "doc_id", Keep: []string{"text", "doc_id"}})
	if err != nil || len(rows) != 1 || rows[0].rej != nil {
		t.Fatalf("rows %+v err %v", rows, err)
	}
	d := rows[0].doc
	if d.ID != "x" || d.Text != "body" || d.Keep[0].S != "not this" || d.Keep[1].S != "x" {
		t.Fatalf("got %+v", d)
	}
}

func TestJSONLHugeAndOverLimit(t *testing.T) {
	big := strings.Repeat("0123456789abcdé", 5<<20/16) // ~5 MB, multi-byte runes
	var buf bytes.Buffer
	buf.WriteString(`{"id":"big","text":"` + big + `"}` + "\n")
	buf.WriteString(`{"id":"small","text":"s"}` + "\n")
	buf.WriteString(`{"id":"big2","text":"` + big + big + `"}` + "\n")
	buf.WriteString(`{"id":"end","text":"e"}`)
	for _, name := range []string{"h.jsonl", "h.jsonl.zst"} {
		path := writeShard(t, t.TempDir(), name, buf.Bytes())
		// default limit (64 MiB): all fine
		rows, err := readAll(t, path, Options{})
		if err != nil || len(rows) != 4 {
			t.Fatalf("%s: %d rows, %v", name, len(rows), err)
		}
		if rows[0].doc.Text != big || rows[2].doc.Text != big+big || rows[3].doc.ID != "end" {
			t.Fatalf("%s: huge rows not read back intact", name)
		}
		// 8 MiB limit: the 10 MB row is rejected, the rest read
		rows, err = readAll(t, path, Options{MaxDocBytes: 8 << 20})
		if err != nil || len(rows) != 4 {
			t.Fatalf("%s: %d rows, %v", name, len(rows), err)
		}
		if rows[0].doc.Text != big || rows[1].doc.ID != "small" || rows[3].doc.ID != "end" {
			t.Fatalf("%s: rows around the rejected one are wrong", name)
		}
		if r := rows[2].rej; r == nil || r.Row != 2 || !strings.Contains(r.Reason, "over the limit") || !strings.HasPrefix(r.Excerpt, `{"id":"big2"`) || len(r.Excerpt) > ExcerptBytes+3 {
			t.Fatalf("%s: got %+v, want an over-limit reject of row 2", name, rows[2])
		}
	}
}

func TestJSONLSmallLimit(t *testing.T) {
	path := writeShard(t, t.TempDir(), "s.jsonl", []byte(`{"text":"short"}`+"\n"+`{"text":"`+strings.Repeat("y", 100)+`"}`+"\n"+`{"text":"ok"}`+"\n"))
	rows, err := readAll(t, path, Options{MaxDocBytes: 50})
	if err != nil || len(rows) != 3 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	if rows[0].doc.Text != "short" || rows[2].doc.Text != "ok" || rows[1].rej == nil || rows[1].rej.Row != 1 || !strings.Contains(rows[1].rej.Reason, "111 bytes, over the limit of 50") {
		t.Fatalf("got %+v", rows)
	}
}

func TestJSONLInvalidUTF8(t *testing.T) {
	content := "{\"id\":\"a\",\"text\":\"bad \xff\xfe byte\",\"k\":\"ok\"}\n{\"id\":\"b\",\"text\":\"fine\",\"k\":\"bad \xc3\"}\n{\"id\":\"c\",\"text\":\"good\"}\n"
	path := writeShard(t, t.TempDir(), "u.jsonl", []byte(content))
	rows, err := readAll(t, path, Options{Keep: []string{"k"}})
	if err != nil || len(rows) != 3 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	if rows[0].rej == nil || !strings.Contains(rows[0].rej.Reason, `"text" is not valid UTF-8`) {
		t.Errorf("row 0: %+v", rows[0])
	}
	if rows[1].rej == nil || !strings.Contains(rows[1].rej.Reason, `"k" is not valid UTF-8`) {
		t.Errorf("row 1: %+v", rows[1])
	}
	if rows[2].doc.Text != "good" {
		t.Errorf("row 2: %+v", rows[2])
	}
	rows, err = readAll(t, path, Options{Keep: []string{"k"}, UTF8: UTF8Repair})
	if err != nil || len(rows) != 3 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	if rows[0].doc.Text != "bad \uFFFD byte" || rows[1].doc.Keep[0].S != "bad \uFFFD" {
		t.Errorf("repair: %q %q", rows[0].doc.Text, rows[1].doc.Keep[0].S)
	}
}

func TestJSONLBorrow(t *testing.T) {
	content := `{"id":"a\u0041","text":"x\ty","k":"v\u00e9"}` + "\n" + `{"id":"b","text":"z","k":"w"}` + "\n"
	path := writeShard(t, t.TempDir(), "b.jsonl", []byte(content))
	r, err := Open(path, Options{Keep: []string{"k"}, Borrow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	d, err := r.Next()
	if err != nil || d.ID != "aA" || d.Text != "x\ty" || d.Keep[0].S != "vé" {
		t.Fatalf("got %+v %v", d, err)
	}
}

// Corrupt compressed files: the rows before the damage are delivered, then
// a *FileError names the file and the row where reading stopped.
func TestJSONLCorruptStreams(t *testing.T) {
	var content bytes.Buffer
	for i := 0; i < 20000; i++ {
		content.WriteString(`{"text":"row ` + strings.Repeat("x", i%50) + `"}` + "\n")
	}
	for _, name := range []string{"c.jsonl.gz", "c.jsonl.zst"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeShard(t, dir, name, content.Bytes())
			data, _ := os.ReadFile(path)
			cases := map[string][]byte{
				"truncated": data[:len(data)*2/3],
				"flipped":   flip(data, len(data)/2),
			}
			for what, bad := range cases {
				os.WriteFile(path, bad, 0o644)
				rows, err := readAll(t, path, Options{})
				var fe *FileError
				if !errors.As(err, &fe) {
					t.Fatalf("%s: got %v after %d rows, want a *FileError", what, err, len(rows))
				}
				if fe.File != path || fe.Row != int64(len(rows)) || !strings.Contains(fe.Error(), path) {
					t.Fatalf("%s: %v (file %q row %d), delivered %d rows", what, fe, fe.File, fe.Row, len(rows))
				}
				for i, r := range rows {
					if r.rej != nil && i < len(rows)-1 {
						t.Fatalf("%s: reject before the damage: %v", what, r.rej)
					}
				}
				if len(rows) == 0 && what == "truncated" {
					t.Fatalf("%s: no rows delivered before the damage", what)
				}
			}
			os.WriteFile(path, []byte("not compressed at all"), 0o644)
			_, err := readAll(t, path, Options{})
			var fe *FileError
			if !errors.As(err, &fe) || fe.File != path {
				t.Fatalf("garbage: %v", err)
			}
		})
	}
}

func flip(b []byte, at int) []byte {
	c := append([]byte(nil), b...)
	for i := at; i < at+64 && i < len(c); i++ {
		c[i] ^= 0x5a
	}
	return c
}

// FuzzJSONLReader feeds arbitrary bytes as a plain, gzip and zstd JSONL
// file: no panic, every problem a *Reject or *FileError naming the file.
func FuzzJSONLReader(f *testing.F) {
	f.Add([]byte(`{"id":"a","text":"hi","k":[1]}` + "\n" + `bad` + "\n"))
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff, 1, 2, 3})
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd, 0, 0x58, 1, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		for _, name := range []string{"z.jsonl", "z.jsonl.gz", "z.jsonl.zst"} {
			path := filepath.Join(dir, name)
			os.WriteFile(path, data, 0o644)
			r, err := Open(path, Options{Keep: []string{"k"}, MaxDocBytes: 1 << 16})
			if err != nil {
				var fe *FileError
				if !errors.As(err, &fe) || fe.File != path {
					t.Fatalf("%s: open error %v", name, err)
				}
				continue
			}
			for i := 0; ; i++ {
				_, err := r.Next()
				if err == io.EOF {
					break
				}
				var rej *Reject
				var fe *FileError
				switch {
				case err == nil:
				case errors.As(err, &rej):
					if rej.File != path || rej.Row < 0 {
						t.Fatalf("%s: bad reject %+v", name, rej)
					}
				case errors.As(err, &fe):
					if fe.File != path || fe.Row != r.Rows() {
						t.Fatalf("%s: bad file error %+v (rows %d)", name, fe, r.Rows())
					}
				default:
					t.Fatalf("%s: untyped error %v", name, err)
				}
				if fe != nil {
					break
				}
			}
			r.Close()
		}
	})
}
