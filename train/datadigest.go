package train

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
)

// dataDigest fingerprints what a run trains on, as read and parsed (each
// record's fields, or a corpus's token statistics), and goes into its
// train_state so that --resume can tell that the data changed. The options'
// fingerprint covers the data's paths only: a training file regenerated or
// edited in place between a run and its resume would otherwise be mixed
// into the run silently, half the steps on one dataset and half on another,
// with the packer's cursor pointing into data it was not computed for.
type dataDigest struct{ h hash.Hash }

func newDataDigest() *dataDigest { return &dataDigest{h: sha256.New()} }

// add feeds one record's fields, each length-prefixed so that ("ab", "c")
// and ("a", "bc") differ.
func (d *dataDigest) add(fields ...string) {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(fields)))
	d.h.Write(n[:])
	for _, f := range fields {
		binary.LittleEndian.PutUint64(n[:], uint64(len(f)))
		d.h.Write(n[:])
		d.h.Write([]byte(f))
	}
}

// addInts feeds a list of numbers (a corpus's document offsets and token
// counts), length-prefixed, through a fixed buffer: a corpus of millions
// of documents is not copied whole.
func (d *dataDigest) addInts(v ...int64) {
	var buf [8 * 512]byte
	binary.LittleEndian.PutUint64(buf[:], uint64(len(v)))
	d.h.Write(buf[:8])
	for len(v) > 0 {
		n := min(len(v), 512)
		for i, x := range v[:n] {
			binary.LittleEndian.PutUint64(buf[8*i:], uint64(x))
		}
		d.h.Write(buf[:8*n])
		v = v[n:]
	}
}

// String is the digest as saved in TrainState.Data.
func (d *dataDigest) String() string { return hex.EncodeToString(d.h.Sum(nil)[:12]) }

// corpusDigest fingerprints a tokenized corpus by its documents' lengths
// in order and its token counts: reading a multi-GB token file again on
// every resume to hash it would cost minutes, while a real change to a
// corpus (a document added, dropped, edited or moved, another tokenizer)
// changes these.
func corpusDigest(train, val *Corpus, counts []int64) string {
	d := newDataDigest()
	d.addInts(train.Offs...)
	d.addInts(val.Offs...)
	d.addInts(counts...)
	return d.String()
}

// checkResume refuses to resume the state st (read from statePath) into a
// run whose fresh state is now: with other options (their fingerprint), or
// with data that differ from those st was written with (the digest). A
// state from before the digest existed (Data empty) is resumed as before
// and carries the digest from then on.
func checkResume(statePath string, st, now *TrainState) error {
	if st.Options != now.Options {
		return fmt.Errorf("resume: %s was written with different options (fingerprint %s, now %s); use the same flags", statePath, st.Options, now.Options)
	}
	if st.Data != "" && st.Data != now.Data {
		return fmt.Errorf("resume: the training data differ from those %s was written with (data digest %s, now %s): "+
			"resuming would train one run on two datasets; resume with the original data, or start a new run in another --out",
			statePath, st.Data, now.Data)
	}
	st.Data = now.Data
	return nil
}
