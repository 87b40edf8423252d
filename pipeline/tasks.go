package pipeline

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/onecore-dev/onecore/engine"
	"github.com/onecore-dev/onecore/jobs"
)

// result is one document's task output.
type result struct {
	label      string
	score      float32
	probs      []float32
	meanLogp   float64
	perplexity float64
	bitsPerB   float64
	answer     string
	answerLogp float32
	abstained  bool
	// answerStart, answerEnd are the answer's character offsets in the
	// document when spanOK (span head answers only).
	answerStart, answerEnd int64
	spanOK                 bool
	embedding              []float32
	// labels are a multi-label head's labels at or above their thresholds;
	// value is a regression head's output.
	labels []string
	value  float32
}

// task turns prepared documents into results on an engine worker.
type task interface {
	// prepare builds the engine inputs of a document from its tokens
	// (<bos> first, already truncated).
	prepare(it *item, tok Tokenizer) error
	// run computes the results of a pack of prepared documents.
	run(w Worker, tok Tokenizer, pack []*item) error
}

// warner is a task with warnings about the job and model, logged once
// when the run starts (newTask itself does not log: --dry-run calls it to
// check for refusals).
type warner interface{ warnings() []string }

// newTask builds the task a job names, checking it against the model.
func newTask(j *jobs.Job, m Model, tok Tokenizer) (task, []string, error) {
	switch j.Task {
	case jobs.TaskScore:
		return scoreTask{}, nil, nil
	case jobs.TaskEmbed:
		return embedTask{}, nil, nil
	case jobs.TaskClassify:
		return newClassify(j, m, tok)
	case jobs.TaskExtract:
		if ok, o := m.SpanHead(); ok {
			return newSpanExtract(j, o)
		}
		return newExtract(j, m, tok)
	}
	return nil, nil, fmt.Errorf("unknown task %q", j.Task)
}

// template returns the job's template, else the model's, else def.
func template(j *jobs.Job, m Model, def string) string {
	if j.Template != "" {
		return j.Template
	}
	if t := m.Template(string(j.Task)); t != "" {
		return t
	}
	return def
}

// --- score ---

// scoreTask: mean log-prob of the document's tokens after <bos>, and its
// perplexity, as a CCNet-style quality filter.
type scoreTask struct{}

func (scoreTask) prepare(it *item, _ Tokenizer) error {
	it.seqs = [][]int32{it.tokens}
	return nil
}

func (scoreTask) run(w Worker, _ Tokenizer, pack []*item) error {
	outs, err := w.Forward(flatten(pack), Want{LogProbs: true})
	if err != nil {
		return err
	}
	for i, it := range pack {
		lp := outs[i].LogProbs
		if len(lp) != len(it.tokens)-1 {
			return fmt.Errorf("engine returned %d log-probs for %d tokens", len(lp), len(it.tokens))
		}
		var s float64
		for _, v := range lp {
			s += float64(v)
		}
		m := s / float64(len(lp))
		it.res.meanLogp = m
		it.res.perplexity = math.Exp(-m)
		if it.scoredBytes > 0 {
			it.res.bitsPerB = -s / math.Ln2 / float64(it.scoredBytes)
		}
	}
	return nil
}

// --- embed ---

type embedTask struct{}

func (embedTask) prepare(it *item, _ Tokenizer) error {
	it.seqs = [][]int32{it.tokens}
	return nil
}

func (embedTask) run(w Worker, _ Tokenizer, pack []*item) error {
	outs, err := w.Forward(flatten(pack), Want{Mean: true})
	if err != nil {
		return err
	}
	for i, it := range pack {
		it.res.embedding = outs[i].Mean
	}
	return nil
}

// --- classify ---

// classifyTask classifies with the checkpoint's head (over the raw
// document) or, by labels, scores each label's tokens after the prompt:
// p(label) ∝ exp(Σ log p(label tokens | prompt)). The head's kind decides
// how its logits are read: a softmax (multiclass), a sigmoid per label
// against that label's threshold (multilabel), or the value itself
// (regression).
type classifyTask struct {
	labels     []string
	byHead     bool
	kind       string    // jobs.HeadMulticlass, HeadMultilabel or HeadRegression
	thresholds []float32 // multilabel: one per label
	before     []int32   // prompt tokens before the document (labels mode)
	after      []int32   // prompt tokens after it
	labelIDs   [][]int32
}

// headKind is the kind of head the output columns are for.
func (t *classifyTask) headKind() string { return t.kind }

func newClassify(j *jobs.Job, m Model, tok Tokenizer) (task, []string, error) {
	head := m.Labels()
	useHead := false
	switch j.ClassifyBy {
	case jobs.ClassifyHead:
		if len(head) == 0 {
			return nil, nil, errors.New("classify_by head: the model has no classifier head (head.cls) with labels in generation.json")
		}
		if len(j.Labels) > 0 && !slices.Equal(j.Labels, head) {
			return nil, nil, fmt.Errorf("classify_by head: job labels %q differ from the head's labels %q", j.Labels, head)
		}
		useHead = true
	case jobs.ClassifyAuto, "":
		useHead = len(head) > 0 && (len(j.Labels) == 0 || slices.Equal(j.Labels, head))
	}
	if useHead {
		kind, thresholds := m.ClassHead()
		switch kind {
		case jobs.HeadMulticlass, jobs.HeadRegression:
		case jobs.HeadMultilabel:
			if len(thresholds) != len(head) {
				return nil, nil, fmt.Errorf("classify: multilabel head with %d thresholds for %d labels", len(thresholds), len(head))
			}
		default:
			return nil, nil, fmt.Errorf("classify: unknown head kind %q", kind)
		}
		return &classifyTask{labels: head, byHead: true, kind: kind, thresholds: thresholds}, head, nil
	}
	if len(j.Labels) == 0 {
		return nil, nil, errors.New("classify: the model has no classifier head; give labels (--labels or labels: in the job) to classify by scoring label strings")
	}
	t := &classifyTask{labels: j.Labels, kind: jobs.HeadMulticlass}
	before, after, err := jobs.SplitTemplate(template(j, m, "{text}\nLabel:"), "")
	if err != nil {
		return nil, nil, err
	}
	t.before, t.after = tok.Encode(before), tok.Encode(after)
	for _, l := range j.Labels {
		ids := tok.Encode(l)
		if len(ids) == 0 {
			return nil, nil, fmt.Errorf("label %q has no tokens", l)
		}
		t.labelIDs = append(t.labelIDs, ids)
	}
	return t, j.Labels, nil
}

func (t *classifyTask) prepare(it *item, _ Tokenizer) error {
	if t.byHead {
		it.seqs = [][]int32{it.tokens}
		return nil
	}
	prompt := concat([]int32{BOS}, t.before, it.tokens[1:], t.after)
	it.seqs = it.seqs[:0]
	for _, l := range t.labelIDs {
		it.seqs = append(it.seqs, concat(prompt, l))
	}
	it.promptLen = len(prompt)
	return nil
}

func (t *classifyTask) run(w Worker, _ Tokenizer, pack []*item) error {
	if t.byHead {
		outs, err := w.Forward(flatten(pack), Want{ClassLogits: true})
		if err != nil {
			return err
		}
		for i, it := range pack {
			if len(outs[i].ClassLogits) != len(t.labels) {
				return fmt.Errorf("engine returned %d class logits for %d labels", len(outs[i].ClassLogits), len(t.labels))
			}
			t.finish(it, outs[i].ClassLogits)
		}
		return nil
	}
	outs, err := w.Forward(flatten(pack), Want{LogProbs: true})
	if err != nil {
		return err
	}
	k := 0
	for _, it := range pack {
		scores := make([]float32, len(t.labels))
		for li, ids := range t.labelIDs {
			lp := outs[k].LogProbs
			k++
			var s float32
			for j := range ids {
				s += lp[it.promptLen-1+j]
			}
			scores[li] = s
		}
		t.finish(it, scores)
	}
	return nil
}

// finish turns head logits into the result: probabilities, label and score
// (multiclass); probabilities and the labels at or above their thresholds
// (multilabel); the value (regression).
func (t *classifyTask) finish(it *item, logits []float32) {
	switch t.kind {
	case jobs.HeadRegression:
		it.res.value = logits[0]
		return
	case jobs.HeadMultilabel:
		p := make([]float32, len(logits))
		it.res.labels = []string{}
		for i, z := range logits {
			p[i] = sigmoid(z)
			if p[i] >= t.thresholds[i] {
				it.res.labels = append(it.res.labels, t.labels[i])
			}
		}
		it.res.probs = p
		return
	}
	p := softmax(logits)
	best := 0
	for i := range p {
		if p[i] > p[best] {
			best = i
		}
	}
	it.res.probs, it.res.label, it.res.score = p, t.labels[best], p[best]
}

// sigmoid is 1/(1+e^−z), computed in float64 so large |z| saturates
// cleanly instead of overflowing.
func sigmoid(z float32) float32 { return float32(1 / (1 + math.Exp(-float64(z)))) }

func softmax(x []float32) []float32 {
	m := float32(math.Inf(-1))
	for _, v := range x {
		m = max(m, v)
	}
	out := make([]float32, len(x))
	var s float64
	for i, v := range x {
		e := math.Exp(float64(v - m))
		out[i] = float32(e)
		s += e
	}
	for i := range out {
		out[i] = float32(float64(out[i]) / s)
	}
	return out
}

// --- extract ---

// extractTask renders the prompt around the document (and its question) and
// decodes an answer greedily; extractive mode only allows continuations
// that stay a contiguous span of the document's tokens.
type extractTask struct {
	template   string
	maxNew     int
	extractive bool
	stop       []int32
	abstain    []string
	qIndex     int // index of the question field in Doc.Keep, or -1
	question   string
	fixed      [2][]int32 // before/after tokens when the question is fixed
	warn       []string
	// vocab, for --extractive with a tokenizer that lists its vocabulary:
	// answers constrained by text (extractive.go); nil: by token ids
	vocab *textVocab
	// window: documents longer than this many tokens are decoded as
	// half-overlapping windows of it (jobs.Job.Window)
	window int
}

func (t *extractTask) warnings() []string { return t.warn }

const defaultExtractTemplate = "{text}\nQuestion: {question}\nAnswer:"

func newExtract(j *jobs.Job, m Model, tok Tokenizer) (task, []string, error) {
	// A checkpoint with neither a span head nor an extract template in its
	// generation.json was not trained to extract. A classifier is refused:
	// its body (and certainly its intent) is a classification model, and
	// decoding from it would write a column of confident nonsense with exit
	// status 0. A plain language model is only warned about: decoding from
	// it is what extract has always done (and what the bundled base gives
	// with a good --template), so refusing would break working jobs. A job
	// that gives its own template has made the choice explicitly: no check.
	var warn []string
	if j.Template == "" && m.Template(string(jobs.TaskExtract)) == "" {
		if len(m.Labels()) > 0 {
			return nil, nil, errors.New("extract: the model is a classifier (head.cls) with neither a span head (head.span) nor an extract template in generation.json; train a span head with 'onecore train extract', or extract with a language model (--model base)")
		}
		warn = append(warn, "extract: the model has no span head (head.span) and no extract template in generation.json: decoding the answer generatively from a model not trained to extract (train a span head with 'onecore train extract' for answers that are spans of the document)")
	}
	t := &extractTask{
		warn:       warn,
		template:   template(j, m, defaultExtractTemplate),
		maxNew:     j.MaxNewTokens,
		extractive: j.Extractive,
		stop:       m.StopIDs(),
		abstain:    j.Abstain,
		qIndex:     -1,
		question:   j.Question,
		window:     j.Window,
	}
	if len(t.stop) == 0 {
		t.stop = []int32{EOS}
	}
	if j.QuestionField != "" {
		t.qIndex = len(j.Keep) // the pipeline reads it after the keep fields
	}
	b, a, err := jobs.SplitTemplate(t.template, t.question)
	if err != nil {
		return nil, nil, err
	}
	t.fixed = [2][]int32{tok.Encode(b), tok.Encode(a)}
	if t.extractive {
		t.vocab = newTextVocab(tok)
	}
	return t, nil, nil
}

func (t *extractTask) prepare(it *item, tok Tokenizer) error {
	before, after := t.fixed[0], t.fixed[1]
	if t.qIndex >= 0 && t.qIndex < len(it.doc.Keep) && it.doc.Keep[t.qIndex].Valid {
		b, a, err := jobs.SplitTemplate(t.template, it.doc.Keep[t.qIndex].S)
		if err != nil {
			return err
		}
		before, after = tok.Encode(b), tok.Encode(a)
	}
	doc := it.tokens[1:]
	it.windows = extractWindows(len(doc), t.window)
	it.seqs = it.seqs[:0]
	it.windowTexts = it.windowTexts[:0]
	for _, w := range it.windows {
		it.seqs = append(it.seqs, concat([]int32{BOS}, before, doc[w[0]:w[1]], after))
		if t.vocab != nil {
			it.windowTexts = append(it.windowTexts, tok.Decode(doc[w[0]:w[1]])) // the window's text
		}
	}
	return nil
}

// extractWindows cuts n document tokens into windows of w tokens, each
// starting half a window after the previous one, the last ending at n (it
// may be shorter); one window [0, n) when the document fits.
func extractWindows(n, w int) [][2]int {
	if w <= 0 || n <= w {
		return [][2]int{{0, n}}
	}
	step := max(1, w/2)
	var out [][2]int
	for a := 0; ; a += step {
		b := min(a+w, n)
		out = append(out, [2]int{a, b})
		if b == n {
			return out
		}
	}
}

// run decodes every window of every document of the pack (each a sequence
// of its own, so batch invariant as any generation), then answers each
// document with its most probable window answer that does not abstain
// (summed log-probability; the first window on ties), or, when every
// window abstains, with its most probable abstention.
func (t *extractTask) run(w Worker, tok Tokenizer, pack []*item) error {
	type owner struct {
		it *item
		k  int // window index
	}
	var owners []owner
	for _, it := range pack {
		for k := range it.seqs {
			owners = append(owners, owner{it, k})
		}
	}
	opt := GenOptions{MaxNew: t.maxNew}
	switch {
	case t.vocab != nil:
		opt.Allow = func(i int, gen []int32) []int32 {
			o := owners[i]
			return t.vocab.allow(o.it.windowTexts[o.k], t.abstain, tok.Decode(gen), t.stop)
		}
	case t.extractive:
		opt.Allow = func(i int, gen []int32) []int32 {
			o := owners[i]
			win := o.it.windows[o.k]
			return spanContinuations(o.it.tokens[1+win[0]:1+win[1]], gen, t.stop)
		}
	}
	gens, err := w.Generate(flatten(pack), opt)
	if err != nil {
		return err
	}
	i := 0
	for _, it := range pack {
		best, bestAbst := -1, -1
		answers := make([]string, len(it.seqs))
		for k := range it.seqs {
			g := gens[i+k]
			// A BPE answer after "Answer:" starts with its word's space
			// (" Stephane Lentz"), and a stop may follow a newline: the
			// column holds the answer, not the tokenizer's spacing.
			answers[k] = strings.TrimSpace(tok.Decode(g.Tokens))
			if t.isAbstain(answers[k]) {
				if bestAbst < 0 || g.LogProb > gens[i+bestAbst].LogProb {
					bestAbst = k
				}
			} else if best < 0 || g.LogProb > gens[i+best].LogProb {
				best = k
			}
		}
		pick := best
		if pick < 0 {
			pick = bestAbst
		}
		it.res.answer, it.res.answerLogp = answers[pick], gens[i+pick].LogProb
		it.res.abstained = best < 0
		it.windowTexts, it.windows = nil, nil
		i += len(it.seqs)
	}
	return nil
}

func (t *extractTask) isAbstain(ans string) bool {
	a := strings.TrimSpace(ans)
	if a == "" {
		return true
	}
	for _, s := range t.abstain {
		if strings.EqualFold(a, strings.TrimSpace(s)) {
			return true
		}
	}
	return false
}

// spanContinuations lists the tokens that extend gen to a longer span of
// doc, plus the stop ids once gen is non-empty (a span may end anywhere)
// and at the start (stopping at once abstains). Nil: no continuation, stop.
func spanContinuations(doc, gen, stop []int32) []int32 {
	seen := map[int32]bool{}
	var out []int32
	add := func(id int32) {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	for i := 0; i+len(gen) < len(doc); i++ {
		if slices.Equal(doc[i:i+len(gen)], gen) {
			add(doc[i+len(gen)])
		}
	}
	if len(out) == 0 {
		return nil
	}
	for _, s := range stop {
		add(s)
	}
	return out
}

// --- extract with a span head ---

// spanTask answers with the checkpoint's span head (engine/span.go): the
// model reads <bos> + engine.SpanPrompt(question) + the document's tokens,
// the head scores a start and an end per document token and "not present"
// at the prompt's last token, and engine.SpanDecode picks the answer. The
// answer is cut from the document text at its tokens' byte offsets
// (widened to whole characters), so it is always text[answer_start:
// answer_end] in characters, within the kept (possibly truncated) tokens.
type spanTask struct {
	maxSpan   int
	threshold float64
	qIndex    int // index of the question field in Doc.Keep, or -1
	question  string
	whole     bool // answers widened to whole words (engine.SpanText)
	oneLine   bool // answers kept on one line (engine.SpanLines)
	endNext   bool // ends scored at the next row, <eos> appended (engine.SpanLogitRows)
	warn      []string

	// pieces[id] is tok.Decode([]int32{id}), built once per task: prepare
	// needs every document token's bytes, and decoding ids one call at a
	// time cost ~4 % of a narrow model's extraction.
	piecesOnce sync.Once
	pieces     []string
}

func (t *spanTask) warnings() []string { return t.warn }

// piece returns what token id decodes to on its own.
func (t *spanTask) piece(tok Tokenizer, id int32) string {
	t.piecesOnce.Do(func() { t.pieces = idTexts(tok) })
	if id >= 0 && int(id) < len(t.pieces) {
		return t.pieces[id]
	}
	return tok.Decode([]int32{id})
}

func newSpanExtract(j *jobs.Job, o SpanOptions) (task, []string, error) {
	// The head was trained on one fixed prompt; the generative settings
	// have nothing to act on.
	var ignored []string
	if j.Template != "" {
		ignored = append(ignored, "template")
	}
	if j.Extractive {
		ignored = append(ignored, "extractive")
	}
	if len(j.Abstain) > 0 {
		ignored = append(ignored, "abstain")
	}
	if j.Window > 0 {
		ignored = append(ignored, "window") // the head reads the whole (kept) document
	}
	t := &spanTask{maxSpan: j.MaxSpan, threshold: o.Threshold + j.SpanThreshold, qIndex: -1, question: j.Question, whole: o.WholeWords, oneLine: o.OneLine, endNext: o.EndNext}
	if len(ignored) > 0 {
		t.warn = append(t.warn, "extract: the model has a span head, which reads its own fixed prompt and answers with spans: ignoring "+strings.Join(ignored, ", "))
	}
	if !o.EndNext {
		// still decoded as trained, but its ends were scored blind
		t.warn = append(t.warn, "extract: this span head scores an answer's end at its last token (trained before generation.json span_end_next): it tends to stop fields early; "+
			"`onecore train extract` now scores the end at the next token (up to +22 points exact match on bench/extract): retrain it to get that")
	}
	if t.maxSpan < 1 {
		t.maxSpan = jobs.DefaultMaxSpan
	}
	if j.QuestionField != "" {
		t.qIndex = len(j.Keep) // the pipeline reads it after the keep fields
	}
	return t, nil, nil
}

func (t *spanTask) prepare(it *item, tok Tokenizer) error {
	q := t.question
	if t.qIndex >= 0 && t.qIndex < len(it.doc.Keep) && it.doc.Keep[t.qIndex].Valid {
		q = it.doc.Keep[t.qIndex].S
	}
	prompt := tok.Encode(engine.SpanPrompt(q))
	doc := it.tokens[1:]
	it.seqs = [][]int32{concat([]int32{BOS}, prompt, doc, engine.SpanSeqTail(t.endNext))}
	it.promptLen = 1 + len(prompt)
	// byte offsets of the document's tokens: each decodes to its own bytes
	// with a byte-level tokenizer; check it rather than report offsets
	// that are not the answer's
	text := it.doc.Text
	lens := make([]int, len(doc))
	p := 0
	for i, id := range doc {
		s := t.piece(tok, id)
		if !strings.HasPrefix(text[p:], s) {
			return fmt.Errorf("span head: token %d decodes to %q, not the document's bytes at offset %d (the span head needs a tokenizer that reproduces the text byte for byte)", i, s, p)
		}
		lens[i] = len(s)
		p += len(s)
	}
	it.spanText = text[:p]
	it.spanOffs = engine.TokenByteOffsets(lens)
	return nil
}

func (t *spanTask) run(w Worker, _ Tokenizer, pack []*item) error {
	outs, err := w.Forward(flatten(pack), Want{Span: true})
	if err != nil {
		return err
	}
	for i, it := range pack {
		sp := outs[i].Span
		n := len(it.seqs[0])
		if len(sp) != 2*n {
			return fmt.Errorf("engine returned %d span logits for %d tokens", len(sp), n)
		}
		// [null, doc tokens...]: the null at the prompt's last token
		k := n - it.promptLen + 1 - len(engine.SpanSeqTail(t.endNext))
		start, end := make([]float64, k), make([]float64, k)
		for j := 0; j < k; j++ {
			rs, re := engine.SpanLogitRows(it.promptLen, j, t.endNext)
			start[j], end[j] = float64(sp[2*rs]), float64(sp[2*re+1])
		}
		var lines *engine.SpanLines
		if t.oneLine {
			lines = engine.NewSpanLines(it.spanText, it.spanOffs)
		}
		r := engine.SpanDecode(start, end, t.maxSpan, t.threshold, lines)
		it.res.answerLogp = float32(r.LogProb)
		it.res.abstained = r.Abstain
		if !r.Abstain {
			a, cs, ce := engine.SpanText(it.spanText, it.spanOffs, r.S, r.E, t.whole)
			it.res.answer, it.res.answerStart, it.res.answerEnd, it.res.spanOK = a, int64(cs), int64(ce), true
		}
		it.spanText, it.spanOffs = "", nil
	}
	return nil
}

// --- helpers ---

// flatten lists the engine sequences of a pack in order.
func flatten(pack []*item) [][]int32 {
	var out [][]int32
	for _, it := range pack {
		out = append(out, it.seqs...)
	}
	return out
}

func concat(parts ...[]int32) []int32 {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	out := make([]int32, 0, n)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
