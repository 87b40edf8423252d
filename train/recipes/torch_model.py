"""PyTorch implementation of the onecore hybrid model (DESIGN §2, dense layers).

Used by the fallback recipe (torch_pretrain.py, torch_classify.py) when the Go
trainer is not available, and written from DESIGN §2 alone so that its
checkpoints load unchanged in the Go engine. Weights follow DESIGN §3:
y = x · W with W stored [in, out]; names are the checkpoint tensor names.

Rows are packed streams of token ids; a document starts at every <bos> (id 1)
and at the start of a row. Nothing crosses a document boundary: the SWA mask
is j <= i, i - j < window, doc(i) == doc(j); the linear-attention state is
reset at each document start; RoPE positions count from the document start.
Padding positions (doc id -1) are isolated and ignored.
"""
import json
import math
import struct

import torch
import torch.nn.functional as F

BOS = 1
DEFAULTS = dict(vocab_size=16384, d_model=256, layers=["lin", "swa", "swa", "lin", "swa", "lin"],
                swa_heads=4, swa_head_dim=64, window=256, rope_theta=10000.0, lin_heads=8,
                d_state=32, lin_head_dim=32, d_ff=640, moe_layers=[], experts=64, top_k=4,
                d_ff_expert=160, route_block=256, norm_eps=1e-5)


def rmsnorm(x, g, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g


def doc_layout(ids, pad_mask=None):
    """Document index and position-from-document-start for each token of [B, T] ids."""
    B, T = ids.shape
    starts = ids == BOS
    starts[:, 0] = True
    doc = torch.cumsum(starts.to(torch.int64), dim=1)
    idx = torch.arange(T, device=ids.device).expand(B, T)
    start_idx = torch.where(starts, idx, torch.zeros_like(idx))
    start_idx = torch.cummax(start_idx, dim=1).values
    pos = idx - start_idx
    if pad_mask is not None:
        doc = torch.where(pad_mask, torch.full_like(doc, -1), doc)
    return doc, pos


def rope(x, pos, theta):
    """Rotate-half RoPE over the full head dim. x [B, H, T, hd], pos [B, T]."""
    hd = x.shape[-1]
    half = hd // 2
    inv = theta ** (-2.0 * torch.arange(half, dtype=torch.float32, device=x.device) / hd)
    ang = pos.to(torch.float32)[:, None, :, None] * inv  # [B,1,T,half]
    cos, sin = torch.cos(ang), torch.sin(ang)
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class Model(torch.nn.Module):
    def __init__(self, cfg, n_labels=0, seed=0):
        super().__init__()
        c = dict(DEFAULTS)
        c.update(cfg)
        if c["moe_layers"]:
            raise ValueError("torch_model: MoE layers not supported by the fallback trainer")
        self.cfg = c
        g = torch.Generator().manual_seed(seed)
        D, L = c["d_model"], len(c["layers"])
        out_std = 0.02 / math.sqrt(2 * L)
        P = {}

        def w(name, shape, std=0.02):
            P[name] = torch.nn.Parameter(torch.randn(*shape, generator=g) * std)

        def ones(name, n):
            P[name] = torch.nn.Parameter(torch.ones(n))

        w("emb", (c["vocab_size"], D))
        for i, kind in enumerate(c["layers"]):
            p = f"layers.{i}."
            ones(p + "norm1.g", D)
            ones(p + "norm2.g", D)
            if kind == "swa":
                sd = c["swa_heads"] * c["swa_head_dim"]
                for n in ("wq", "wk", "wv"):
                    w(p + "swa." + n, (D, sd))
                w(p + "swa.wo", (sd, D), out_std)
            elif kind == "lin":
                ld, lv, H = c["lin_heads"] * c["d_state"], c["lin_heads"] * c["lin_head_dim"], c["lin_heads"]
                w(p + "lin.wq", (D, ld))
                w(p + "lin.wk", (D, ld))
                w(p + "lin.wv", (D, lv))
                w(p + "lin.wa", (D, H))
                # ba init so that the decay exp(-softplus(ba)) spans slow..fast heads.
                P[p + "lin.ba"] = torch.nn.Parameter(torch.linspace(-5.0, 1.0, H))
                ones(p + "lin.gn", lv)
                w(p + "lin.wo", (lv, D), out_std)
            else:
                raise ValueError(f"torch_model: unknown mixer {kind!r}")
            w(p + "mlp.w_up", (D, c["d_ff"]))
            w(p + "mlp.w_down", (c["d_ff"], D), out_std)
        ones("norm.g", D)
        if n_labels:
            P["head.cls.w"] = torch.nn.Parameter(torch.zeros(D, n_labels))
            P["head.cls.b"] = torch.nn.Parameter(torch.zeros(n_labels))
        self.params = torch.nn.ParameterDict({k.replace(".", "__"): v for k, v in P.items()})

    def p(self, name):
        return self.params[name.replace(".", "__")]

    def named_tensors(self):
        return {k.replace("__", "."): v for k, v in self.params.items()}

    def swa(self, i, h, doc, pos):
        c = self.cfg
        B, T, _ = h.shape
        H, hd = c["swa_heads"], c["swa_head_dim"]
        pre = f"layers.{i}.swa."
        q = (h @ self.p(pre + "wq")).view(B, T, H, hd).transpose(1, 2)
        k = (h @ self.p(pre + "wk")).view(B, T, H, hd).transpose(1, 2)
        v = (h @ self.p(pre + "wv")).view(B, T, H, hd).transpose(1, 2)
        q, k = rope(q, pos, c["rope_theta"]), rope(k, pos, c["rope_theta"])
        s = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
        ii = torch.arange(T, device=h.device)
        causal = (ii[None, :] <= ii[:, None]) & (ii[:, None] - ii[None, :] < c["window"])
        same = doc[:, :, None] == doc[:, None, :]
        mask = (causal[None] & same)[:, None]  # [B,1,T,T]
        s = s.masked_fill(~mask, float("-inf"))
        o = torch.softmax(s, dim=-1) @ v
        return o.transpose(1, 2).reshape(B, T, H * hd) @ self.p(pre + "wo")

    def lin(self, i, h, doc):
        c = self.cfg
        B, T, _ = h.shape
        H, ds, hv = c["lin_heads"], c["d_state"], c["lin_head_dim"]
        pre = f"layers.{i}.lin."
        q = (h @ self.p(pre + "wq")).view(B, T, H, ds).transpose(1, 2) / math.sqrt(ds)
        k = (h @ self.p(pre + "wk")).view(B, T, H, ds).transpose(1, 2)
        v = (h @ self.p(pre + "wv")).view(B, T, H, hv).transpose(1, 2)
        a = -F.softplus(h @ self.p(pre + "wa") + self.p(pre + "ba"))  # [B,T,H]
        Lc = torch.cumsum(a.transpose(1, 2), dim=-1)  # [B,H,T], log decay
        ii = torch.arange(T, device=h.device)
        causal = ii[None, :] <= ii[:, None]
        same = doc[:, :, None] == doc[:, None, :]
        mask = (causal[None] & same)[:, None]  # [B,1,T,T]
        diff = (Lc[..., :, None] - Lc[..., None, :]).masked_fill(~mask, float("-inf"))
        o = ((q @ k.transpose(-1, -2)) * torch.exp(diff)) @ v  # [B,H,T,hv]
        o = o * torch.rsqrt(o.pow(2).mean(-1, keepdim=True) + c["norm_eps"])
        o = o * self.p(pre + "gn").view(H, 1, hv)
        return o.transpose(1, 2).reshape(B, T, H * hv) @ self.p(pre + "wo")

    def hidden(self, ids, pad_mask=None):
        """Final-RMSNorm output [B, T, D] for packed rows of ids."""
        c = self.cfg
        doc, pos = doc_layout(ids, pad_mask)
        x = F.embedding(ids, self.p("emb"))
        for i, kind in enumerate(c["layers"]):
            pre = f"layers.{i}."
            h = rmsnorm(x, self.p(pre + "norm1.g"), c["norm_eps"])
            x = x + (self.swa(i, h, doc, pos) if kind == "swa" else self.lin(i, h, doc))
            h = rmsnorm(x, self.p(pre + "norm2.g"), c["norm_eps"])
            x = x + F.relu(h @ self.p(pre + "mlp.w_up")).pow(2) @ self.p(pre + "mlp.w_down")
        return rmsnorm(x, self.p("norm.g"), c["norm_eps"])

    def classify_logits(self, ids, lengths):
        """head.cls on the mean over each document's positions (<bos> included) of the
        final-RMSNorm output; one document per row, padded after `lengths`."""
        T = ids.shape[1]
        pad = torch.arange(T)[None, :] >= lengths[:, None]
        hid = self.hidden(ids, pad)
        m = (~pad).to(hid.dtype)[..., None]
        pooled = (hid * m).sum(1) / lengths[:, None].to(hid.dtype)
        return pooled @ self.p("head.cls.w") + self.p("head.cls.b")


def save_checkpoint(model, out_dir, generation=None, extra_meta=None):
    """Write config.json and model.safetensors (bf16, [in, out]) per DESIGN §3."""
    import os
    os.makedirs(out_dir, exist_ok=True)
    cfg = dict(model.cfg)
    cfg["arch"] = "onecore-hybrid"
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    tensors = model.named_tensors()
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().to(torch.float32).contiguous()
        b = t.to(torch.bfloat16).view(torch.int16).numpy().tobytes()
        header[name] = {"dtype": "BF16", "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    header["__metadata__"] = {"format": "pt", **(extra_meta or {})}
    hb = json.dumps(header, separators=(",", ":")).encode()
    hb += b" " * ((8 - len(hb) % 8) % 8)
    tmp = os.path.join(out_dir, "model.safetensors.tmp")
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(hb)))
        f.write(hb)
        for b in blobs:
            f.write(b)
    os.replace(tmp, os.path.join(out_dir, "model.safetensors"))
    if generation is not None:
        with open(os.path.join(out_dir, "generation.json"), "w") as f:
            json.dump(generation, f, indent=1)
