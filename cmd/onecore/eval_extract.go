package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/onecore-dev/onecore/train"
)

// headExtract is eval's --head for extract results: the answer column (and
// abstained) against a gold answer column, null gold meaning the document
// does not hold the answer.
const headExtract = "extract"

// extractMetrics are the extraction benchmark's metrics
// (bench/extract/score.py, which TestEvalExtractMatchesScorePy holds this
// to): exact match over every row, token F1 over the rows whose gold is
// present, and precision/recall of "absent".
type extractMetrics struct {
	Head        string  `json:"head"`
	Rows        int     `json:"rows"`
	GoldAbsent  int     `json:"gold_absent"` // rows whose gold is null: the answer is not in the document
	Abstained   int     `json:"abstained"`
	ExactMatch  float64 `json:"exact_match"`
	TokenF1     float64 `json:"token_f1"`
	AbstainP    float64 `json:"abstain_precision"`
	AbstainR    float64 `json:"abstain_recall"`
	AbstainF1   float64 `json:"abstain_f1"`
	AnsweredBad int     `json:"answered_absent"` // answered where the gold is absent
}

// f1Tokens are SQuAD-style answer tokens: lower-cased runs of letters,
// digits and _, and every other non-space character on its own.
var f1Tokens = regexp.MustCompile(`[\p{L}\p{N}_]+|[^\p{L}\p{N}_\s]`)

func tokenF1(pred, gold string) float64 {
	return train.OverlapF1(f1Tokens.FindAllString(strings.ToLower(pred), -1), f1Tokens.FindAllString(strings.ToLower(gold), -1))
}

// evaluateExtract scores answers (pairs: gold, answer) given each row's
// abstained flag. A row whose answer is null counts as abstained.
func evaluateExtract(pairs []labelPair, abstained []bool) (*extractMetrics, error) {
	if len(abstained) != len(pairs) {
		return nil, fmt.Errorf("%d abstained values for %d rows", len(abstained), len(pairs))
	}
	m := &extractMetrics{Head: headExtract, Rows: len(pairs)}
	if m.Rows == 0 {
		return nil, fmt.Errorf("no rows")
	}
	var em, f1 float64
	present, tp, fp, fn := 0, 0, 0, 0
	for i, p := range pairs {
		abst := abstained[i] || !p.predValid
		if abst {
			m.Abstained++
		}
		if !p.goldValid {
			m.GoldAbsent++
			if abst {
				em++
				tp++
			} else {
				fn++
				m.AnsweredBad++
			}
			continue
		}
		present++
		if abst {
			fp++
			continue
		}
		if strings.TrimSpace(p.pred) == strings.TrimSpace(p.gold) {
			em++
		}
		f1 += tokenF1(p.pred, p.gold)
	}
	m.ExactMatch = em / float64(m.Rows)
	m.TokenF1 = f1 / float64(max(1, present))
	m.AbstainP, m.AbstainR = ratio(tp, tp+fp), ratio(tp, tp+fn)
	if m.AbstainP+m.AbstainR > 0 {
		m.AbstainF1 = 2 * m.AbstainP * m.AbstainR / (m.AbstainP + m.AbstainR)
	}
	return m, nil
}

func (m *extractMetrics) print(w io.Writer, goldCol, predCol string) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "rows          %d (%d with a null %s: the answer is not in the document; %d abstained)\n", m.Rows, m.GoldAbsent, goldCol, m.Abstained)
	fmt.Fprintf(bw, "exact match   %s  (%s equals %s after trimming spaces; an absent gold needs an abstention)\n", f4(m.ExactMatch), predCol, goldCol)
	fmt.Fprintf(bw, "token F1      %s  (over the rows whose gold is present)\n", f4(m.TokenF1))
	fmt.Fprintf(bw, "abstention    precision %s  recall %s  F1 %s  (%d answered where the gold is absent)\n", f4(m.AbstainP), f4(m.AbstainR), f4(m.AbstainF1), m.AnsweredBad)
	return bw.Flush()
}
