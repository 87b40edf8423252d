#!/usr/bin/python3
"""PyTorch training-step benchmark of the onecore model, one thread.

The baseline `onecore train` throughput is compared against (issue 7): the
default dense model (or --moe) trained with fp32 master weights and bf16
compute (every step casts the fp32 parameters to bf16; autograd returns fp32
gradients through the cast), the same batched chunked model as
bench/torch_prefill.py (scripts/ref/onecore_fast.py), forward + backward +
AdamW (foreach) per step.

Objective (docs/design.md §7), default: sampled softmax, a (1 + --negatives)-way
discrimination of the next token against negatives drawn from a unigram
distribution (Zipf here; shared by the whole batch), with the log-q
correction; --full-softmax uses full-vocabulary cross-entropy instead.

A step is --batch windows of --seq tokens (one whole document per window).
Prints one JSON object {"train_tok_s": ..., ...}.

Run pinned to one core:  taskset -c 1 /usr/bin/python3 bench/torch_train.py [--moe]
"""

import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "ref"))
import onecore_fast as fast  # noqa: E402
import onecore_ref as ref  # noqa: E402

MOE = {"moe_layers": [0, 3, 5], "experts": 64, "top_k": 4, "d_ff_expert": 160}


def main():
    if os.environ.get("MALLOC_MMAP_THRESHOLD_") is None:  # see torch_prefill.py
        env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="17179869184", MALLOC_TRIM_THRESHOLD_="17179869184")
        os.execve(sys.executable, [sys.executable] + sys.argv, env)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", help="config JSON (default: the dense-3m preset of docs/design.md)")
    ap.add_argument("--moe", action="store_true", help="MoE variant: experts on layers 0,3,5")
    ap.add_argument("--batch", type=int, default=16,
                    help="windows per step (default 16 × 256 tokens, as train's BenchmarkTrainStepDense/MoE)")
    ap.add_argument("--seq", type=int, default=256, help="tokens per window (default 256)")
    ap.add_argument("--negatives", type=int, default=512, help="sampled-softmax negatives (default 512)")
    ap.add_argument("--full-softmax", action="store_true", help="full-vocabulary cross-entropy instead")
    ap.add_argument("--steps", type=int, default=5, help="timed steps (after 1 warm-up step)")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    cfg = ref.load_config(a.config) if a.config else ref.make_config({})
    if a.moe:
        cfg.update(MOE)
    V = cfg["vocab_size"]
    g = torch.Generator().manual_seed(0)
    # unigram distribution of the "corpus": Zipf over the vocabulary
    q = 1.0 / torch.arange(1, V + 1, dtype=torch.float32)
    q /= q.sum()
    logq = q.log()
    master = {n: t.float().requires_grad_(True) for n, t in ref.init_params(cfg, 1).items()}
    opt = torch.optim.AdamW(master.values(), lr=1e-3, weight_decay=0.1, foreach=True)
    tabs = fast.rope_tables(a.seq, cfg["swa_head_dim"], cfg["rope_theta"], torch.bfloat16)

    def step():
        ids = torch.multinomial(q, a.batch * a.seq, replacement=True, generator=g).view(a.batch, a.seq)
        ids[:, 0] = 1
        P = {n: t.to(torch.bfloat16) for n, t in master.items()}
        h = fast.body(cfg, P, ids, tabs)[:, :-1].reshape(-1, cfg["d_model"])
        tgt = ids[:, 1:].reshape(-1)
        if a.full_softmax:
            # bf16 logits straight into the loss: torch 1.13 widens bf16 to
            # fp32 with a slow scalar loop; its log_softmax accumulates in fp32.
            loss = F.cross_entropy(h @ P["emb"].T, tgt)
        else:
            neg = torch.multinomial(q, a.negatives, replacement=True, generator=g)
            pos = (h * P["emb"][tgt]).sum(-1, keepdim=True).float() - logq[tgt, None]
            negl = (h @ P["emb"][neg].T).float() - logq[neg][None, :]
            loss = F.cross_entropy(torch.cat([pos, negl], 1), torch.zeros_like(tgt))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(master.values(), 1.0)
        opt.step()
        return loss.item()

    step()
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(a.steps):
        loss = step()
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    tok = a.steps * a.batch * a.seq
    # tok per CPU-second: what one core does when the machine is shared
    # (the Go benchmark reports the same as tok/cpu-s)
    print(json.dumps({"train_tok_s": round(tok / dt, 1), "train_tok_cpu_s": round(tok / dc, 1), "moe": bool(a.moe),
                      "objective": "full_softmax" if a.full_softmax else f"sampled_softmax_{a.negatives}",
                      "batch": a.batch, "seq": a.seq, "threads": torch.get_num_threads(),
                      "last_loss": round(loss, 4), "torch": torch.__version__}))


if __name__ == "__main__":
    main()
