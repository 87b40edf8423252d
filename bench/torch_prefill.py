#!/usr/bin/python3
"""PyTorch bf16 prefill benchmark of the onecore model, one thread.

The baseline `onecore bench engine` is compared against (issue 5): the
default dense model (or --moe: experts 64, top_k 4, d_ff_expert 160 on layers
0,3,5) in PyTorch bf16 with torch.set_num_threads(1), written to be fair and
efficient: chunked SWA and chunked linear attention as batched GEMMs, two
batched GEMMs per MoE route block (scripts/ref/onecore_fast.py, which the
self-test holds to the float64 reference).

Each call prefills one pack of --tokens tokens (256-token blocks) holding
whole documents of --doc-len tokens; the defaults match `onecore bench
engine` (8192 tokens, documents of 256). Prints one JSON object:
  {"prefill_tok_s": body only, "prefill_readout_tok_s": body + full-vocab logits, ...}
(per wall-clock second), and the same per second of process CPU time
("prefill_cpu_tok_s", "prefill_readout_cpu_tok_s").

Run pinned to one core:  taskset -c 1 /usr/bin/python3 bench/torch_prefill.py [--moe]
"""

import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "ref"))
import onecore_fast as fast  # noqa: E402
import onecore_ref as ref  # noqa: E402

MOE = {"moe_layers": [0, 3, 5], "experts": 64, "top_k": 4, "d_ff_expert": 160}


def bench(fn, tokens, min_s):
    """Tokens per wall-clock second and per second of this process's CPU
    time (the latter comparable with `onecore bench engine`'s thread-CPU
    numbers on a shared machine)."""
    fn()  # warm-up: allocator, oneDNN primitives
    n, t0, c0 = 0, time.perf_counter(), time.process_time()
    while True:
        fn()
        n += 1
        dt = time.perf_counter() - t0
        if n * tokens >= tokens * 3 and dt >= min_s:
            return n * tokens / dt, n * tokens / (time.process_time() - c0)


def _tune_malloc():
    """Re-executes once with glibc malloc keeping freed memory: PyTorch
    allocates its large activations afresh every call, and without this each
    allocation is a fresh mmap whose page faults dominate (a fair baseline
    does not pay for that)."""
    if os.environ.get("MALLOC_MMAP_THRESHOLD_") is None:
        env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="17179869184", MALLOC_TRIM_THRESHOLD_="17179869184")
        os.execve(sys.executable, [sys.executable] + sys.argv, env)


def main():
    _tune_malloc()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", help="config JSON (default: the dense-3m preset of docs/design.md)")
    ap.add_argument("--moe", action="store_true", help="MoE variant: experts on layers 0,3,5")
    ap.add_argument("--tokens", type=int, default=8192, help="tokens per call, a multiple of 256 (default 8192, as onecore bench engine)")
    ap.add_argument("--doc-len", type=int, default=256, help="document length, a multiple of 256 (default 256, as onecore bench engine)")
    ap.add_argument("--min-seconds", type=float, default=3.0)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    cfg = ref.load_config(a.config) if a.config else ref.make_config({})
    if a.moe:
        cfg.update(MOE)
    blk = 256
    if a.doc_len % cfg["window"] or a.doc_len % cfg["route_block"] or a.tokens % a.doc_len or a.tokens % blk:
        sys.exit("doc-len must be a multiple of window and route_block, and divide --tokens (a multiple of 256)")
    N = a.tokens // a.doc_len
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(3, cfg["vocab_size"], (N, a.doc_len), generator=g)
    ids[:, 0] = 1
    P = {n: t.to(torch.bfloat16) for n, t in ref.init_params(cfg, 1).items()}
    tabs = fast.rope_tables(a.doc_len, cfg["swa_head_dim"], cfg["rope_theta"], torch.bfloat16)
    tokens = N * a.doc_len
    with torch.inference_mode():
        body, body_cpu = bench(lambda: fast.body(cfg, P, ids, tabs), tokens, a.min_seconds)
        full, full_cpu = bench(lambda: fast.body(cfg, P, ids, tabs) @ P["emb"].T, tokens, a.min_seconds)
    print(json.dumps({"prefill_tok_s": round(body, 1), "prefill_readout_tok_s": round(full, 1),
                      "prefill_cpu_tok_s": round(body_cpu, 1), "prefill_readout_cpu_tok_s": round(full_cpu, 1),
                      "moe": bool(a.moe), "threads": torch.get_num_threads(),
                      "tokens_per_call": tokens, "doc_len": a.doc_len, "torch": torch.__version__}))


if __name__ == "__main__":
    main()
