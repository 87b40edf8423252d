// Package engine runs onecore's hybrid language model (docs/design.md §2–3):
// configuration, checkpoints (config.json + model.safetensors +
// generation.json), and the forward pass — prefill over packed streams of
// documents and batched decoding — on the amx kernels.
//
// # Checkpoints
//
// LoadConfig/ParseConfig read config.json (missing fields take the
// defaults, unknown fields are errors); TensorSpecs lists the exact tensor
// names and shapes; SaveCheckpoint and LoadCheckpoint write and read a
// checkpoint directory (bf16 safetensors, atomic writes, errors naming the
// file and tensor); InitTensors draws a deterministic initialisation.
//
// # Running
//
// NewModel packs a checkpoint's weights once for the selected kernel; the
// Model is read-only and shared. Each worker goroutine owns one Instance
// (scratch memory that grows once and is then reused: no allocation in
// the steady state) and usually pins itself with PinThread:
//
//	m, _ := engine.NewModel(ck)
//	go func(cpu int) {
//		engine.PinThread(cpu)
//		in := engine.NewInstance(m)
//		res, err := in.Prefill(docs, engine.Want{Mean: true, LogProbs: true})
//		...
//	}(cpu)
//
// Prefill packs many documents per pass (Instance.PassTokens, default
// 1024 tokens) so every weight GEMM has M ≥ 256; documents longer than a
// pass run in pieces whose state is carried exactly. Want selects the
// outputs: final hidden states, their mean (embeddings; the classifier
// head's input), logits at the last or every position, log-probabilities
// of the actual next tokens (scoring), and the head.cls classifier.
//
// A Decoder continues many documents at once: Add/AddMany prefill the
// prompts, every Step feeds one token per active document as one batch and
// samples the next (greedy, or temperature / top-k / top-p with a per
// document seed), with generation.json's vocabulary mask and stop ids.
//
// # Invariants
//
// Documents are isolated (attention, linear-attention state, positions and
// route blocks all count from the document's own start) and outputs are
// batch invariant: bit-identical however a document is packed, ordered,
// split into pieces or spread over instances, for a given kernel. Decoding
// is likewise independent of which documents share a step. Tests check
// both, and hold the chunked computations to step-by-step references.
//
// # Numerics
//
// GEMM operands are bf16 with fp32 accumulation; the residual stream,
// norms, softmax, log-decays, the linear-attention state and router
// logits are fp32. See the issue note for the exact choices where the
// spec leaves freedom (chunk sizes, MoE gate placement).
package engine
