// Package train trains onecore's hybrid language models on CPU cores, in
// pure Go on the amx kernels: pretraining from scratch, supervised
// fine-tuning (SFT) and classifier heads, writing checkpoints the engine
// loads unchanged (docs/design.md §3, §7).
//
// The network (Model) is written once, generic over the element type:
// float32 is the training path — fp32 master weights and activations, every
// matrix product with bf16 operands and fp32 accumulation through amx, as
// in inference — and float64 is an exact reference path that the gradient
// tests hold against finite differences and an independent PyTorch
// implementation (scripts/ref/onecore_ref.py).
//
// Pretrain packs whole documents (<bos> … <eos>) into rows, optimises the
// sampled-softmax objective ((1 + negatives)-way discrimination against
// negatives drawn from the training data's unigram distribution, with the
// log-q correction) with AdamW, warmup + cosine decay and gradient
// clipping, evaluates val_flat (full-vocabulary loss on a held-out split),
// the induct/shift/add probes and greedy samples, and checkpoints with a
// train_state/ from which --resume continues bit for bit: every random draw
// derives from (seed, epoch) or (seed, step).
//
// The span-extraction head (issue 14) scores, per document token, a start
// and an end logit from the final normed hidden state of `<bos> Question:
// {question}\n` + document — question first so a causal model's document
// states have seen it — with "not present" as a null span at the last
// prompt token. A span's end is scored at the row after its last token (an
// <eos> follows the document), whose state has seen the token that closes
// the field; at the last token itself a causal state cannot know the field
// ends there (engine.SpanLogitRows). Loss is cross-entropy over {null} ∪ document positions for
// start and end, and decoding picks the best s ≤ e within a max span
// against null + threshold, so answers are substrings by construction.
// Extract (extract.go, `onecore train extract`) trains it on {text,
// question?, answer} records, the body too unless frozen; the loss and
// targets are in span.go, the decoder is engine.SpanDecode, shared with
// `onecore extract --task extract` (docs/design.md §7).
package train
