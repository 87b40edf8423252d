#!/usr/bin/python3
"""Fallback pretraining of the default model in PyTorch (Debian python3-torch).

Used while `onecore train pretrain` is not available; implements DESIGN §7's
objective: packed rows of whole documents (<bos> ... <eos>), sampled softmax
((1 + n_negatives)-way against negatives drawn from the training unigram
distribution, with the log-q correction; accidental hits removed), AdamW with
fp32 weights, warmup + cosine schedule, gradient clipping, full-vocabulary
validation loss (val_flat) at each eval.

The schedule is wall-clock budgeted (--budget-s): cosine progress is the
elapsed fraction of the budget, so the run ends on time on a shared machine
(the step count it reaches is logged). Everything else is seeded.

Writes OUT/state.pt (for --resume), OUT/metrics.jsonl, and a checkpoint
directory OUT/ckpt (config.json + model.safetensors + generation.json with
the vocabulary mask) at every eval and at the end.

Usage: torch_pretrain.py --data work/pretrain --val work/val --out work/pt --budget-s 5400
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_model  # noqa: E402


def load_stream(prefix):
    return np.fromfile(prefix + ".bin", dtype=np.uint16).astype(np.int64)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True, nargs="+", help="token stream prefixes (.bin/.idx)")
    ap.add_argument("--val", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--config", default="{}", help="JSON overrides of the default config")
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--min-lr-frac", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--wd", type=float, default=0.1)
    ap.add_argument("--negatives", type=int, default=2048)
    ap.add_argument("--budget-s", type=float, default=3600)
    ap.add_argument("--eval-every-s", type=float, default=600)
    ap.add_argument("--val-rows", type=int, default=32)
    ap.add_argument("--max-steps", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--resume", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    os.makedirs(a.out, exist_ok=True)

    train = np.concatenate([load_stream(d) for d in a.data])
    val = load_stream(a.val)
    cfg = json.loads(a.config)
    model = torch_model.Model(cfg, seed=a.seed)
    V = model.cfg["vocab_size"]
    counts = np.bincount(train, minlength=V).astype(np.float64)
    q = counts / counts.sum()
    logq_all = torch.tensor(np.log(np.maximum(q, 1e-12)), dtype=torch.float32)
    q_t = torch.tensor(q, dtype=torch.float64)
    vocab_mask = [int(i) for i in np.nonzero(counts == 0)[0]]

    T, B = a.seq, a.batch
    n_rows = len(train) // T
    rows = torch.tensor(train[: n_rows * T]).view(n_rows, T)
    vrows = torch.tensor(val[: (len(val) // T) * T]).view(-1, T)[: a.val_rows]

    decay = [p for n, p in model.named_tensors().items() if p.dim() == 2]
    no_decay = [p for n, p in model.named_tensors().items() if p.dim() != 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.wd},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8)
    step, elapsed, tokens = 0, 0.0, 0
    gen = torch.Generator().manual_seed(a.seed)
    perm = torch.randperm(n_rows, generator=gen)
    state_path = os.path.join(a.out, "state.pt")
    if a.resume and os.path.exists(state_path):
        st = torch.load(state_path)
        model.load_state_dict(st["model"])
        opt.load_state_dict(st["opt"])
        step, elapsed, tokens = st["step"], st["elapsed"], st["tokens"]
        gen.set_state(st["gen"])
        perm = st["perm"]
        print(f"resumed at step {step}, {tokens} tokens, {elapsed:.0f}s", flush=True)
    metrics = open(os.path.join(a.out, "metrics.jsonl"), "a")
    n_params = sum(p.numel() for p in model.parameters())
    print(f"params {n_params/1e6:.2f}M (body {(n_params - V*model.cfg['d_model'])/1e6:.2f}M), "
          f"train {len(train)} tokens = {n_rows} rows of {T}; val {vrows.numel()} tokens", flush=True)

    def val_flat():
        model.eval()
        tot, n = 0.0, 0
        with torch.no_grad():
            for i in range(0, len(vrows), 8):
                x = vrows[i:i + 8]
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    h = model.hidden(x[:, :-1])
                logits = h.float() @ model.p("emb").T
                tgt = x[:, 1:]
                keep = tgt != torch_model.BOS  # don't predict across documents
                loss = F.cross_entropy(logits.reshape(-1, V), tgt.reshape(-1), reduction="none")
                tot += loss[keep.reshape(-1)].sum().item()
                n += keep.sum().item()
        model.train()
        return tot / n

    def save(final=False):
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step,
                    "elapsed": elapsed, "tokens": tokens, "gen": gen.get_state(), "perm": perm},
                   state_path + ".tmp")
        os.replace(state_path + ".tmp", state_path)
        g = {"vocab_mask": vocab_mask, "stop_ids": [2]}
        torch_model.save_checkpoint(model, os.path.join(a.out, "ckpt"), g,
                                    {"step": str(step), "tokens": str(tokens)})

    last_eval = elapsed
    t0 = time.time() - elapsed
    ema = None
    while True:
        elapsed = time.time() - t0
        if elapsed >= a.budget_s or (a.max_steps and step >= a.max_steps):
            break
        frac = min(1.0, elapsed / a.budget_s)
        lr = a.lr * min(1.0, (step + 1) / a.warmup) * (
            a.min_lr_frac + (1 - a.min_lr_frac) * 0.5 * (1 + math.cos(math.pi * frac)))
        for g_ in opt.param_groups:
            g_["lr"] = lr
        epoch_pos = (step * B) % n_rows
        if epoch_pos + B > n_rows:
            perm = torch.randperm(n_rows, generator=gen)
        idx = perm[(step * B) % n_rows: (step * B) % n_rows + B]
        x = rows[idx]
        with torch.autocast("cpu", dtype=torch.bfloat16):  # bf16 compute, fp32 master weights
            h = model.hidden(x[:, :-1]).reshape(-1, model.cfg["d_model"])
        h = h.float()
        tgt = x[:, 1:].reshape(-1)
        keep = tgt != torch_model.BOS
        h, tgt = h[keep], tgt[keep]
        negs = torch.multinomial(q_t, a.negatives, replacement=True, generator=gen)
        emb = model.p("emb")
        # log-q correction: expected count of each candidate among the samples
        corr_t = logq_all[tgt] + math.log(a.negatives)
        corr_n = logq_all[negs] + math.log(a.negatives)
        pos_logit = (h * emb[tgt]).sum(-1) - corr_t
        neg_logit = h @ emb[negs].T - corr_n
        neg_logit = neg_logit.masked_fill(negs[None, :] == tgt[:, None], float("-inf"))
        logits = torch.cat([pos_logit[:, None], neg_logit], dim=1)
        loss = F.cross_entropy(logits, torch.zeros(len(tgt), dtype=torch.long))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0).item()
        opt.step()
        step += 1
        tokens += x.numel()
        ema = loss.item() if ema is None else 0.98 * ema + 0.02 * loss.item()
        if step % 20 == 0:
            el = time.time() - t0
            rec = {"step": step, "tokens": tokens, "elapsed_s": round(el, 1), "loss": round(loss.item(), 4),
                   "loss_ema": round(ema, 4), "lr": round(lr, 6), "grad_norm": round(gnorm, 3),
                   "tok_s": round(tokens / el, 1)}
            print(json.dumps(rec), flush=True)
            metrics.write(json.dumps(rec) + "\n")
            metrics.flush()
        if time.time() - t0 - last_eval >= a.eval_every_s:
            last_eval = time.time() - t0
            vf = val_flat()
            rec = {"step": step, "tokens": tokens, "elapsed_s": round(time.time() - t0, 1), "val_flat": round(vf, 4)}
            print(json.dumps(rec), flush=True)
            metrics.write(json.dumps(rec) + "\n")
            elapsed = time.time() - t0
            save()
    elapsed = time.time() - t0
    vf = val_flat()
    rec = {"step": step, "tokens": tokens, "elapsed_s": round(elapsed, 1), "val_flat": round(vf, 4), "final": True}
    print(json.dumps(rec), flush=True)
    metrics.write(json.dumps(rec) + "\n")
    save(final=True)


if __name__ == "__main__":
    main()
