// Package engine runs onecore's hybrid language model (DESIGN §2–3):
// configuration, checkpoints (config.json + model.safetensors +
// generation.json), and the forward pass — prefill over packed streams of
// documents and batched decoding — on the amx kernels.
//
// Weights are packed once into a Model and shared read-only; each core runs
// its own Instance (scratch memory, no steady-state allocation). Documents
// are isolated and outputs are batch invariant: a document's results are
// bit-identical however it is packed, ordered or spread over instances.
package engine
