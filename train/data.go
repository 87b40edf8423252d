package train

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/onecore-dev/onecore/internal/blobstore"
	"github.com/onecore-dev/onecore/readers"
)

// Tokenizer is what training needs from a tokenizer: text to ids without
// special tokens, and ids back to text for printed generations.
type Tokenizer interface {
	Encode(text string) []int32
	Decode(ids []int32) string
}

// ReadDocuments calls fn for every document under paths: Parquet and JSON
// Lines files (.parquet, .jsonl/.ndjson/.json, optionally .gz/.zst) give one
// document per row, its text in textField (read by the readers package;
// malformed rows are skipped and counted in the returned rejects); any other
// file is one document; a directory contributes every such file below it
// (binary files and dot-directories skipped). Glob patterns are expanded.
func ReadDocuments(paths []string, textField string, fn func(text string) error) (rejects int, err error) {
	files, err := listInputs(paths)
	if err != nil {
		return 0, err
	}
	for _, f := range files {
		n, err := readFile(f.Path, textField, f.Explicit, fn)
		rejects += n
		if err != nil {
			return rejects, err
		}
	}
	return rejects, nil
}

// inputFile is one file ReadDocuments reads, with what the token cache
// fingerprints (size and modification time stand in for the content, so a
// multi-GB corpus is not hashed on every start).
type inputFile struct {
	Path     string `json:"path"`
	Explicit bool   `json:"explicit"` // named on the command line, not found by a walk
	Size     int64  `json:"size"`
	ModNS    int64  `json:"mtime_ns"`
}

// listInputs expands paths (globs, directory walks in sorted order) into
// the files ReadDocuments reads, in reading order.
func listInputs(paths []string) ([]inputFile, error) {
	var out []inputFile
	add := func(path string, st fs.FileInfo, explicit bool) {
		out = append(out, inputFile{Path: path, Explicit: explicit, Size: st.Size(), ModNS: st.ModTime().UnixNano()})
	}
	for _, p := range paths {
		if blobstore.Remote(p) {
			objs, err := listRemote(p)
			if err != nil {
				return nil, err
			}
			out = append(out, objs...)
			continue
		}
		matches := []string{p}
		if strings.ContainsAny(p, "*?[") {
			m, err := filepath.Glob(p)
			if err != nil {
				return nil, fmt.Errorf("data %q: %w", p, err)
			}
			if len(m) == 0 {
				return nil, fmt.Errorf("data %q: no file matches", p)
			}
			matches = m
		}
		for _, path := range matches {
			st, err := os.Stat(path)
			if err != nil {
				return nil, fmt.Errorf("data: %w", err)
			}
			if !st.IsDir() {
				add(path, st, true)
				continue
			}
			var files []string
			err = filepath.WalkDir(path, func(q string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if d.IsDir() && q != path && strings.HasPrefix(d.Name(), ".") {
					return filepath.SkipDir
				}
				if d.Type().IsRegular() {
					files = append(files, q)
				}
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("data: %w", err)
			}
			sort.Strings(files)
			for _, f := range files {
				st, err := os.Stat(f)
				if err != nil {
					return nil, fmt.Errorf("data: %w", err)
				}
				add(f, st, false)
			}
		}
	}
	return out, nil
}

// listRemote is listInputs for an object-storage URL: the object itself
// when the URL names one (explicit, like a file named on the command line),
// else every object under it taken as a folder, sorted by key, with a
// directory walk's rule (no component of the key below the prefix, but the
// object's own name, starting with "."). Globs are not expanded: a listing
// is by prefix.
func listRemote(p string) ([]inputFile, error) {
	ctx := context.Background()
	if strings.ContainsAny(p, "*?[") {
		return nil, fmt.Errorf("data %q: globs are not supported in object-storage URLs; give the prefix (a folder) instead", p)
	}
	l, err := blobstore.Parse(p)
	if err != nil {
		return nil, fmt.Errorf("data %q: %w", p, err)
	}
	if l.Key != "" && !strings.HasSuffix(l.Key, "/") {
		size, mod, err := blobstore.Stat(ctx, p)
		if err == nil {
			return []inputFile{{Path: p, Explicit: true, Size: size, ModNS: mod}}, nil
		}
		if !blobstore.IsNotExist(err) {
			return nil, fmt.Errorf("data %q: %w", p, err)
		}
	}
	objs, err := blobstore.List(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("data %q: %w", p, err)
	}
	var out []inputFile
	for _, o := range objs {
		parts := strings.Split(o.Rel, "/")
		hidden := false
		for _, c := range parts[:len(parts)-1] {
			hidden = hidden || strings.HasPrefix(c, ".")
		}
		if !hidden && !strings.HasSuffix(o.Rel, "/") {
			out = append(out, inputFile{Path: o.Path, Size: o.Size, ModNS: o.ModNS})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("data %q: no objects found under it", p)
	}
	return out, nil
}

// readAll reads a whole local file or object-storage object.
func readAll(path string) ([]byte, error) {
	if blobstore.Remote(path) {
		return blobstore.ReadAll(context.Background(), path)
	}
	return os.ReadFile(path)
}

// openStream opens a local file or an object-storage object for one
// sequential read (an object is streamed, resumed after a dropped
// connection, never held whole in memory).
func openStream(path string) (io.ReadCloser, error) {
	if blobstore.Remote(path) {
		return blobstore.OpenStream(context.Background(), path, -1)
	}
	return os.Open(path)
}

// readRows streams the rows of a Parquet/JSONL shard: fn gets the text
// field and the keep fields (ok false when missing or null). Malformed rows
// are counted and skipped; an unreadable file is an error.
func readRows(path, textField string, keep []string, fn func(row int64, text string, vals []readers.Value) error) (rejects int, err error) {
	r, err := readers.Open(path, readers.Options{TextField: textField, Keep: keep, UTF8: readers.UTF8Repair})
	if err != nil {
		return 0, fmt.Errorf("data: %w", err)
	}
	defer r.Close()
	for {
		doc, err := r.Next()
		if err == io.EOF {
			return rejects, nil
		}
		var rej *readers.Reject
		if errors.As(err, &rej) {
			rejects++
			continue
		}
		if err != nil {
			return rejects, fmt.Errorf("data: %w", err)
		}
		if err := fn(doc.Source.Row, doc.Text, doc.Keep); err != nil {
			return rejects, err
		}
	}
}

// readFile reads one file; explicit files must be text, files found by a
// directory walk are skipped when they look binary.
func readFile(path, textField string, explicit bool, fn func(string) error) (int, error) {
	if readers.FormatOf(path) != readers.FormatUnknown {
		return readRows(path, textField, nil, func(_ int64, text string, _ []readers.Value) error { return fn(text) })
	}
	b, err := readAll(path)
	if err != nil {
		return 0, fmt.Errorf("data: %w", err)
	}
	if bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(b) {
		if explicit {
			return 0, fmt.Errorf("data %s: not UTF-8 text (structured data must end in .parquet, .jsonl, .jsonl.gz or .jsonl.zst)", path)
		}
		return 0, nil
	}
	if len(b) == 0 {
		return 0, nil
	}
	return 0, fn(string(b))
}

// Corpus is a tokenized document collection: document i is tokens
// Offs[i]:Offs[i+1] (<bos> … <eos>). The tokens are either in memory
// (Tokens) or, for a corpus opened from a token cache, in a file read on
// demand, so that memory does not grow with the corpus.
type Corpus struct {
	Tokens []int32
	Offs   []int64
	// Learn, when set (post-training), marks the tokens the model is
	// trained to predict (answers and their <eos>); nil = every token.
	Learn []bool
	file  *tokenFile // set: the tokens live in this file, Tokens is nil
}

// Docs is the number of documents.
func (c *Corpus) Docs() int { return len(c.Offs) - 1 }

// Len is the number of tokens.
func (c *Corpus) Len() int64 {
	if len(c.Offs) == 0 {
		return 0
	}
	return c.Offs[len(c.Offs)-1]
}

// Doc returns document i (a fresh copy for a file-backed corpus).
func (c *Corpus) Doc(i int) []int32 {
	if c.file == nil {
		return c.Tokens[c.Offs[i]:c.Offs[i+1]]
	}
	d := make([]int32, c.Offs[i+1]-c.Offs[i])
	var buf []byte
	c.copyTokens(d, c.Offs[i], &buf)
	return d
}

// copyTokens fills dst with the tokens from position from on; buf is
// scratch space for file reads, kept by the caller so a packer allocates
// nothing per row.
func (c *Corpus) copyTokens(dst []int32, from int64, buf *[]byte) {
	if c.file == nil {
		copy(dst, c.Tokens[from:])
		return
	}
	if err := c.file.read(dst, from, buf); err != nil {
		// The cache was validated when it was opened; a failing read means
		// the file changed or the disk failed under a running job, which no
		// caller of Packer.Next can recover from.
		panic(fmt.Sprintf("token cache: %v", err))
	}
}

func (c *Corpus) add(ids []int32) {
	if len(c.Offs) == 0 {
		c.Offs = []int64{0}
	}
	c.Tokens = append(c.Tokens, bosID)
	c.Tokens = append(c.Tokens, ids...)
	c.Tokens = append(c.Tokens, eosID)
	c.Offs = append(c.Offs, int64(len(c.Tokens)))
}

// remove deletes document i.
func (c *Corpus) remove(i int) {
	a, b := c.Offs[i], c.Offs[i+1]
	c.Tokens = append(c.Tokens[:a], c.Tokens[b:]...)
	if c.Learn != nil {
		c.Learn = append(c.Learn[:a], c.Learn[b:]...)
	}
	offs := c.Offs[:i+1]
	for _, o := range c.Offs[i+2:] {
		offs = append(offs, o-(b-a))
	}
	c.Offs = offs
}

// LoadCorpus reads and tokenizes every document (rejects counts malformed
// rows skipped), sending about valPermille/1000 of them (chosen by a hash
// of the text, so the split does not depend on file order or seed) to the
// held-out split, and at least one when there are two or more documents
// and valPermille > 0 (the one whose hash is the smallest mod 1000).
func LoadCorpus(paths []string, textField string, tok Tokenizer, valPermille int) (train, val *Corpus, rejects int, err error) {
	train, val = &Corpus{Offs: []int64{0}}, &Corpus{Offs: []int64{0}}
	var batch []string
	// the training document that would be held out first: moved to the
	// held-out split if nothing else is (a small corpus)
	best, bestHash := -1, uint64(0)
	flush := func() {
		var ids [][]int32
		if be, ok := tok.(BatchEncoder); ok {
			ids = be.EncodeBatch(batch)
		} else {
			for _, t := range batch {
				ids = append(ids, tok.Encode(t))
			}
		}
		for i, text := range batch {
			h := textHash(text)
			if h%1000 < uint64(valPermille) {
				val.add(ids[i])
				continue
			}
			if best < 0 || h%1000 < bestHash%1000 || (h%1000 == bestHash%1000 && h < bestHash) {
				best, bestHash = train.Docs(), h
			}
			train.add(ids[i])
		}
		batch = batch[:0]
	}
	rejects, err = ReadDocuments(paths, textField, func(text string) error {
		batch = append(batch, text)
		if len(batch) == 256 {
			flush()
		}
		return nil
	})
	flush()
	if val.Docs() == 0 && valPermille > 0 && train.Docs() >= 2 {
		val.add(train.Doc(best)[1 : len(train.Doc(best))-1])
		train.remove(best)
	}
	if err == nil && train.Docs() == 0 {
		err = fmt.Errorf("data: no training documents in %v", paths)
	}
	return train, val, rejects, err
}

// BatchEncoder is implemented by tokenizers that encode many texts in
// parallel (same ids as Encode).
type BatchEncoder interface {
	EncodeBatch(texts []string) [][]int32
}

// Counts returns how often each id occurs in c (vocab entries).
func (c *Corpus) Counts(vocab int) ([]int64, error) {
	n := make([]int64, vocab)
	var chunk []int32
	var buf []byte
	for from := int64(0); from < c.Len(); from += int64(len(chunk)) {
		if c.file == nil {
			chunk = c.Tokens
		} else {
			chunk = make([]int32, min(c.Len()-from, 1<<16))
			c.copyTokens(chunk, from, &buf)
		}
		for _, t := range chunk {
			if t < 0 || int(t) >= vocab {
				return nil, errVocab(t, vocab)
			}
			n[t]++
		}
	}
	return n, nil
}

func errVocab(id int32, vocab int) error {
	return fmt.Errorf("token id %d out of the model's vocabulary (%d): tokenizer and config disagree", id, vocab)
}

// Cursor is the packer's position in the data stream, saved for --resume.
type Cursor struct {
	Epoch int   `json:"epoch"`
	Pos   int   `json:"pos"` // index into the epoch's document order
	Off   int64 `json:"off"` // tokens of that document already emitted
}

// Packer cuts training rows of RowLen tokens out of a corpus: documents in
// a seeded random order per epoch, whole documents packed greedily, padding
// when the next document would not fit; a document longer than a row is
// split (its continuation starts the next row, which the model treats as a
// document start).
type Packer struct {
	C      *Corpus
	RowLen int
	Seed   uint64
	Cur    Cursor
	order  []int
	ordEp  int
	buf    []byte // read scratch for a file-backed corpus
}

func (p *Packer) epochOrder() []int {
	if p.order == nil || p.ordEp != p.Cur.Epoch {
		rng := rand.New(rand.NewPCG(p.Seed, uint64(p.Cur.Epoch)+0x9e3779b9))
		p.order = rng.Perm(p.C.Docs())
		p.ordEp = p.Cur.Epoch
	}
	return p.order
}

// Next fills row (len RowLen) with the next tokens, padding with <pad>;
// learn, if non-nil, receives the corpus's Learn flags (false for padding).
func (p *Packer) Next(row []int32, learn []bool) {
	n := 0
	for n < len(row) {
		ord := p.epochOrder()
		if p.Cur.Pos >= len(ord) {
			p.Cur = Cursor{Epoch: p.Cur.Epoch + 1}
			continue
		}
		d := ord[p.Cur.Pos]
		start := p.C.Offs[d] + p.Cur.Off
		doc := int(p.C.Offs[d+1] - start) // tokens of the document still to emit
		space := len(row) - n
		if doc <= space || n == 0 || doc > len(row) {
			k := min(doc, space)
			p.C.copyTokens(row[n:n+k], start, &p.buf)
			if learn != nil {
				copy(learn[n:n+k], p.C.Learn[start:start+int64(k)])
			}
			n += k
			if k == doc {
				p.Cur.Pos++
				p.Cur.Off = 0
			} else {
				p.Cur.Off += int64(k)
			}
			continue
		}
		break // whole document fits in the next row: pad this one
	}
	clear(row[n:])
	if learn != nil {
		clear(learn[n:])
	}
}

// Targets writes the next-token targets of rows (−1 where there is none:
// the last position of a row, before <bos> or <pad>, and, when learn is
// non-nil, before a token not marked to be learned).
func Targets(ids []int32, rowLen int, dst []int32, learn []bool) {
	for t := range ids {
		dst[t] = -1
		if (t+1)%rowLen != 0 && ids[t+1] != bosID && ids[t+1] != padID && (learn == nil || learn[t+1]) {
			dst[t] = ids[t+1]
		}
	}
}
