"""Efficient batched PyTorch implementation of the onecore model (docs/design.md §2).

This is the model the PyTorch benchmarks (bench/torch_prefill.py,
bench/torch_train.py) time: chunked sliding-window attention and chunked
log-decay linear attention, every product a batched GEMM, block-routed
experts as two batched GEMMs per route block. It works in any dtype (bf16 for
the benchmarks, float64 for the self-test that holds it to the naive
reference in onecore_ref.py).

Batch layout: ids [N, L], one document per row, each row starting at its
<bos> (position 0), L a multiple of `window` and of `route_block`. Packing
several documents into a row only changes masks and resets; a batch of
whole documents is the same work and keeps this implementation short.

Decays (log space, cumulative sums, exp) and router logits are computed in
float32 (float64 when the activations are); norms and softmaxes run natively
in bf16 (torch accumulates their reductions in fp32), because torch 1.13
widens bf16 tensors to fp32 with a slow scalar loop.
"""

import math

import torch
import torch.nn.functional as F


def _acc(dtype):
    return torch.float64 if dtype == torch.float64 else torch.float32


def rmsnorm(x, g, eps):
    if x.dtype == torch.bfloat16:
        # Natively in bf16 (the reductions accumulate in fp32 inside torch):
        # torch 1.13 widens bf16 to fp32 with a scalar loop (~60 ns/element),
        # which would dominate the whole forward.
        return x * torch.rsqrt(x.square().mean(-1, keepdim=True) + eps) * g
    xf = x.to(_acc(x.dtype))
    y = xf * torch.rsqrt((xf * xf).mean(-1, keepdim=True) + eps) * g.to(xf.dtype)
    return y.to(x.dtype)


def rope_tables(L, hd, theta, dtype):
    half = hd // 2
    inv = theta ** (-2.0 * torch.arange(half, dtype=torch.float64) / hd)
    ang = torch.arange(L, dtype=torch.float64)[:, None] * inv[None, :]
    return torch.cos(ang).to(dtype), torch.sin(ang).to(dtype)


def rope(x, cos, sin):
    """x [N, L, H, hd]; cos/sin [L, hd/2]."""
    half = x.shape[-1] // 2
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)


_MASKS = {}


def _bmm(a, b):
    """Batched matmul over all leading dims through one 3-D bmm (torch 1.13's
    broadcasting matmul is several times slower on 5-D bf16 operands)."""
    lead = a.shape[:-2]
    out = torch.bmm(a.reshape(-1, *a.shape[-2:]), b.reshape(-1, *b.shape[-2:]))
    return out.view(*lead, *out.shape[-2:])


def swa(x, P, p, cfg, tabs):
    """Chunked SWA: a chunk of `window` queries attends to its own chunk and
    the previous one. Since chunks are `window` long, query i of a chunk sees
    keys 0..i of its own chunk and keys i+1..C-1 of the previous one: the two
    score blocks fit together in one [C, C] matrix (tril of one + strict triu
    of the other), so the softmax runs over C columns, not 2C."""
    N, L, D = x.shape
    H, hd, W = cfg["swa_heads"], cfg["swa_head_dim"], cfg["window"]
    C = W
    nc = L // C
    q = (x @ (P[p + "swa.wq"] * (1.0 / math.sqrt(hd)))).view(N, L, H, hd)
    k = (x @ P[p + "swa.wk"]).view(N, L, H, hd)
    v = (x @ P[p + "swa.wv"]).view(N, L, H, hd)
    cos, sin = tabs
    q, k = rope(q, cos, sin), rope(k, cos, sin)
    q = q.view(N, nc, C, H, hd).transpose(2, 3)  # [N, nc, H, C, hd]
    k = k.view(N, nc, C, H, hd).transpose(2, 3)
    v = v.view(N, nc, C, H, hd).transpose(2, 3)
    kT = k.transpose(-1, -2)
    s = _bmm(q, kT).tril_()
    if nc > 1:
        sp = _bmm(q[:, 1:], kT[:, :-1]).triu_(1)
        s[:, 1:] += sp
    s[:, 0] += torch.full((C, C), float("-inf"), dtype=s.dtype).triu_(1)  # no chunk before the first
    att = torch.softmax(s, -1)
    o = _bmm(att.tril(), v)
    if nc > 1:
        o[:, 1:] += _bmm(att[:, 1:].triu(1), v[:, :-1])
    o = o.transpose(2, 3).reshape(N, L, H * hd)
    return o @ P[p + "swa.wo"]


def lin_attn(x, P, p, cfg):
    """Chunked log-decay linear attention (chunks of `window` tokens):
    intra-chunk (Q Kᵀ ⊙ exp(L_i − L_j)[i≥j]) V plus exp(L_i) Q S_prev, with
    the chunk-end states from one batched GEMM and a short scan."""
    N, L, D = x.shape
    H, ds, dv = cfg["lin_heads"], cfg["d_state"], cfg["lin_head_dim"]
    C = cfg["window"]
    nc = L // C
    acc = _acc(x.dtype)
    q = (x @ (P[p + "lin.wq"] * (1.0 / math.sqrt(ds)))).view(N, nc, C, H, ds).transpose(2, 3)
    k = (x @ P[p + "lin.wk"]).view(N, nc, C, H, ds).transpose(2, 3)
    v = (x @ P[p + "lin.wv"]).view(N, nc, C, H, dv).transpose(2, 3)  # [N, nc, H, C, dv]
    a = -F.softplus((x @ P[p + "lin.wa"]).to(acc) + P[p + "lin.ba"].to(acc))  # [N, L, H]
    Lc = a.view(N, nc, C, H).transpose(2, 3).cumsum(-1)  # [N, nc, H, C]
    key = ("causal", C, acc)
    if key not in _MASKS:  # additive: −inf above the diagonal, so exp gives 0 there
        _MASKS[key] = torch.full((C, C), float("-inf"), dtype=acc).triu_(1)
    dec = Lc[..., :, None] - Lc[..., None, :] + _MASKS[key]  # L_i − L_j for j ≤ i
    s = _bmm(q, k.transpose(-1, -2))
    if torch.is_grad_enabled():  # autograd needs the out-of-place forms
        s = s * dec.exp().to(x.dtype)
    else:
        s.mul_(dec.exp_().to(x.dtype))  # same dtype: mixed in-place widens s slowly
    o = _bmm(s, v)  # [N, nc, H, C, dv]
    if nc > 1:
        last = Lc[..., -1:]  # [N, nc, H, 1]
        kw = k * (last - Lc).exp()[..., None].to(x.dtype)
        U = _bmm(kw.transpose(-1, -2), v)  # [N, nc, H, ds, dv]: chunk's own contribution
        g = last[..., 0].exp()  # chunk's total decay [N, nc, H]
        states = [torch.zeros_like(U[:, 0], dtype=acc)]
        for c in range(nc - 1):
            states.append(g[:, c, :, None, None] * states[-1] + U[:, c].to(acc))
        Sp = torch.stack(states, 1).to(x.dtype)  # state before chunk c
        qi = q * Lc.exp()[..., None].to(x.dtype)
        o = o + _bmm(qi, Sp)
    o = o.transpose(2, 3)  # [N, nc, C, H, dv]
    o = rmsnorm(o, P[p + "lin.gn"].view(H, dv), cfg["norm_eps"]).reshape(N, L, H * dv)
    return o @ P[p + "lin.wo"]


def mlp(x, P, p):
    return torch.relu(x @ P[p + "mlp.w_up"]).square() @ P[p + "mlp.w_down"]


def moe(x, P, p, cfg, stats=None):
    """Block-routed experts: per route block, the top_k experts' W_up / W_down
    slices gathered into one [D, k·F] / [k·F, D] matrix, two batched GEMMs."""
    N, L, D = x.shape
    rb, K, E, Fe = cfg["route_block"], cfg["top_k"], cfg["experts"], cfg["d_ff_expert"]
    nb = L // rb
    acc = _acc(x.dtype)
    xb = x.reshape(N, nb, rb, D)
    mean = xb.mean(2).to(acc)
    r = torch.cat([torch.zeros_like(mean[:, :1]), mean[:, :-1]], 1)  # previous block of the doc
    logits = r @ P[p + "moe.router.w"].to(acc) + P[p + "moe.router.b"].to(acc)  # [N, nb, E]
    with torch.no_grad():
        sel = torch.topk(logits, K, dim=-1).indices  # [N, nb, K]
    if stats is not None:
        stats.append(sel)
    gates = torch.softmax(logits.gather(-1, sel), -1).to(x.dtype)  # [N, nb, K]
    wu = P[p + "moe.w_up"][sel]  # [N, nb, K, D, Fe]
    wu = wu.permute(0, 1, 3, 2, 4).reshape(N * nb, D, K * Fe)
    wd = P[p + "moe.w_down"][sel].reshape(N * nb, K * Fe, D)
    h = torch.relu(torch.bmm(xb.reshape(N * nb, rb, D), wu)).square()
    h = (h.view(N * nb, rb, K, Fe) * gates.reshape(N * nb, 1, K, 1)).view(N * nb, rb, K * Fe)
    return torch.bmm(h, wd).view(N, L, D)


def body(cfg, P, ids, tabs=None, stats=None):
    """Final-norm hidden states [N, L, D] of whole documents ids [N, L]."""
    N, L = ids.shape
    dtype = P["emb"].dtype
    if tabs is None:
        tabs = rope_tables(L, cfg["swa_head_dim"], cfg["rope_theta"], dtype)
    eps = cfg["norm_eps"]
    h = P["emb"][ids]
    for i, kind in enumerate(cfg["layers"]):
        p = f"layers.{i}."
        x = rmsnorm(h, P[p + "norm1.g"], eps)
        h = h + (swa(x, P, p, cfg, tabs) if kind == "swa" else lin_attn(x, P, p, cfg))
        x = rmsnorm(h, P[p + "norm2.g"], eps)
        h = h + (moe(x, P, p, cfg, stats) if i in cfg["moe_layers"] else mlp(x, P, p))
    return rmsnorm(h, P["norm.g"], eps)


def logits(cfg, P, ids, tabs=None):
    return body(cfg, P, ids, tabs) @ P["emb"].T
