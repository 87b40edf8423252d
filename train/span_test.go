package train

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/onecore-dev/onecore/engine/tokenizer"
)

// TestSpanLossGradFD holds SpanLoss's logit gradient against central
// finite differences, for a null target and for a document span.
func TestSpanLossGradFD(t *testing.T) {
	start := []float64{0.3, -1.2, 2.0, 0.5, -0.7}
	end := []float64{-0.4, 0.9, 0.1, 1.7, -2.2}
	for _, tg := range [][2]int{{SpanNull, SpanNull}, {1, 2}, {0, 3}} {
		gs, ge := make([]float64, 5), make([]float64, 5)
		SpanLoss(start, end, tg[0], tg[1], gs, ge)
		tmp1, tmp2 := make([]float64, 5), make([]float64, 5)
		for _, side := range []struct {
			z []float64
			g []float64
		}{{start, gs}, {end, ge}} {
			for i := range side.z {
				const h = 1e-5
				o := side.z[i]
				side.z[i] = o + h
				lp := SpanLoss(start, end, tg[0], tg[1], tmp1, tmp2)
				side.z[i] = o - h
				lm := SpanLoss(start, end, tg[0], tg[1], tmp1, tmp2)
				side.z[i] = o
				if fd := (lp - lm) / (2 * h); math.Abs(fd-side.g[i]) > 1e-7 {
					t.Errorf("target %v logit %d: grad %g, fd %g", tg, i, side.g[i], fd)
				}
			}
		}
	}
}

// TestSpanTargets maps answers to the tokens holding their first and last
// bytes, and turns answers beyond the kept tokens into null.
func TestSpanTargets(t *testing.T) {
	// "the code is AB12": tokens "the"," code"," is"," AB","12"
	offs := TokenByteOffsets([]int{3, 5, 3, 3, 2})
	cases := []struct {
		as, ae, ts, te int
		ok             bool
	}{
		{12, 16, 3, 4, true}, // "AB12" starts inside " AB"
		{4, 8, 1, 1, true},   // "code"
		{0, 3, 0, 0, true},
		{12, 20, SpanNull, SpanNull, false}, // truncated
		{5, 5, SpanNull, SpanNull, false},   // empty
	}
	for _, c := range cases {
		ts, te, ok := SpanTargets(offs, c.as, c.ae)
		if ts != c.ts || te != c.te || ok != c.ok {
			t.Errorf("[%d,%d): got %d %d %v, want %d %d %v", c.as, c.ae, ts, te, ok, c.ts, c.te, c.ok)
		}
	}
}

// TestSpanOffsetsBundledTokenizer checks the offset mapping's premise on
// the bundled byte-level tokenizer: each token decodes to exactly its own
// bytes, so running lengths give byte offsets, and an answer's targets
// decode back to a string containing exactly the answer.
func TestSpanOffsetsBundledTokenizer(t *testing.T) {
	tok, err := tokenizer.Load("../models/base/tokenizer.json")
	if err != nil {
		t.Fatalf("bundled tokenizer: %v", err)
	}
	for _, doc := range []string{"the code is QX7Z9, see below.", "Copyright: 2008-2022 Jörg Müller <jm@example.org>\n", "  ünïcode\tspäces  "} {
		ids := tok.EncodeOrdinary(doc)
		lens := make([]int, len(ids))
		for i, id := range ids {
			lens[i] = len(tok.Decode([]int32{id}, false))
		}
		offs := TokenByteOffsets(lens)
		if len(offs) == 0 || offs[len(offs)-1][1] != len(doc) {
			t.Fatalf("%q: offsets %v do not cover the document", doc, offs)
		}
		for i, o := range offs {
			if got := tok.Decode([]int32{ids[i]}, false); got != doc[o[0]:o[1]] {
				t.Fatalf("%q token %d: decodes to %q, offsets give %q", doc, i, got, doc[o[0]:o[1]])
			}
		}
		for _, ans := range []string{"QX7Z9", "Jörg Müller", "spä"} {
			as := strings.Index(doc, ans)
			if as < 0 {
				continue
			}
			ts, te, ok := SpanTargets(offs, as, as+len(ans))
			if !ok || !strings.Contains(doc[offs[ts][0]:offs[te][1]], ans) || offs[ts][0] > as || offs[te][1] < as+len(ans) {
				t.Errorf("%q answer %q: targets %d..%d (%v) do not cover it", doc, ans, ts, te, ok)
			}
		}
	}
}

// TestParseSpanAnswer covers every accepted answer form, character to byte
// offset conversion past multi-byte runes, and the errors.
func TestParseSpanAnswer(t *testing.T) {
	text := "Jörg: the code is QX7Z9"
	for _, c := range []struct {
		raw     string
		want    string
		present bool
		err     bool
	}{
		{`"QX7Z9"`, "QX7Z9", true, false},
		{`{"start":18,"end":23}`, "QX7Z9", true, false},
		{`[0,4]`, "Jörg", true, false},
		{`[1, 2]`, "ö", true, false},
		{`null`, "", false, false},
		{``, "", false, false},
		{`"absent"`, "", false, true},
		{`[3,30]`, "", false, true},
		{`[4,4]`, "", false, true},
		{`{"start":1}`, "", false, true},
		{`7`, "", false, true},
	} {
		as, ae, ok, err := ParseSpanAnswer(text, json.RawMessage(c.raw))
		if (err != nil) != c.err || ok != c.present || (ok && text[as:ae] != c.want) {
			t.Errorf("%s: got [%d,%d) %v %v, want %q present=%v err=%v", c.raw, as, ae, ok, err, c.want, c.present, c.err)
		}
	}
}
