package tokenizer

// postProcessor adds special tokens around an encoded sequence when Encode
// is called with addSpecial (TemplateProcessing, BertProcessing, ...).
type postProcessor interface {
	process(ids []int32) []int32
}

// templatePost is TemplateProcessing's "single" template, or the fixed
// [cls] A [sep] of BertProcessing / RobertaProcessing.
type templatePost struct {
	before, after []int32
}

func (p templatePost) process(ids []int32) []int32 {
	if len(p.before) == 0 && len(p.after) == 0 {
		return ids
	}
	out := make([]int32, 0, len(p.before)+len(ids)+len(p.after))
	out = append(out, p.before...)
	out = append(out, ids...)
	return append(out, p.after...)
}

type seqPost []postProcessor

func (q seqPost) process(ids []int32) []int32 {
	for _, p := range q {
		ids = p.process(ids)
	}
	return ids
}
