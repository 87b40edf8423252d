#!/usr/bin/python3
"""Independent float64 reference of the onecore hybrid model (docs/design.md §2-3).

Written from the spec only, never from the Go code, so that the Go engine and
the Go trainer can be held to it. Everything here favours being obviously
right over being fast: full masked attention instead of chunks, the
linear-attention recurrence one token at a time, MoE blocks one at a time.

Weights are read as bf16 and widened to float64; every activation stays in
float64. The MoE router is evaluated in float64 too (the spec asks for at
least fp32); its top-k margins are reported so that comparisons can skip
blocks whose routing may legitimately differ under bf16 (docs/design.md §2,
"Conventions").

CLI (run with /usr/bin/python3; needs Debian's python3-torch and numpy):

  onecore_ref.py init    --config C.json --seed N --out DIR
  onecore_ref.py forward --checkpoint DIR --ids IDS.json --out LOGITS.bin [--margins M.json]
  onecore_ref.py grad    --checkpoint DIR --ids IDS.json --out GRADS.safetensors [--margins M.json] [--loss L.json]
  onecore_ref.py batch   JOBS.json   (a JSON list of the argument lists above, run in one process)

forward writes float32 little-endian logits [T x vocab_size]. grad writes the
float32 gradient of every parameter (same names as model.safetensors) of

  L = mean over t in [0, T-1) with ids[t+1] != 1 of -log softmax(logits_t)[ids[t+1]]

(full-vocabulary cross-entropy; MoE top-k selection treated as a constant,
gradients flow through the gates). --margins writes the MoE routing report:
every (layer, document, block) with its selected experts and its margin
(k-th minus (k+1)-th router logit); "stable": a per-position flag that is
false from the first unstable block (margin < 0.05, block index >= 1) to the
end of its document; "lin_amplification": per position, the worst
linear-attention cancellation factor (see lin_attn), large where the output
is ill-conditioned under bf16.
"""

import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import torch

torch.set_default_dtype(torch.float64)

BOS = 1
ARCH = "onecore-hybrid"
MARGIN_MIN = 0.05

# docs/design.md §2 table: "dense-3m".
DEFAULTS = {
    "vocab_size": 16384,
    "d_model": 256,
    "layers": ["lin", "swa", "swa", "lin", "swa", "lin"],
    "swa_heads": 4,
    "swa_head_dim": 64,
    "window": 256,
    "rope_theta": 10000.0,
    "lin_heads": 8,
    "d_state": 32,
    "lin_head_dim": 32,
    "d_ff": 640,
    "moe_layers": [],
    "experts": 64,
    "top_k": 4,
    "d_ff_expert": 160,
    "route_block": 256,
    "norm_eps": 1e-5,
}
_INT_FIELDS = [k for k, v in DEFAULTS.items() if isinstance(v, int)]
_FLOAT_FIELDS = ["rope_theta", "norm_eps"]


class RefError(Exception):
    """A user-facing error (bad config, bad checkpoint, bad ids)."""


# ---------------------------------------------------------------- config


def make_config(fields, source="config"):
    """Validates a dict of config fields and fills the defaults."""
    cfg = dict(DEFAULTS)
    for k, v in fields.items():
        if k == "arch":
            if v != ARCH:
                raise RefError(f"{source}: field arch: want {ARCH!r}, got {v!r}")
            continue
        if k not in DEFAULTS:
            raise RefError(f"{source}: unknown field {k!r}")
        if k in _INT_FIELDS:
            if isinstance(v, bool) or not (isinstance(v, int) or (isinstance(v, float) and v.is_integer())):
                raise RefError(f"{source}: field {k}: want an integer, got {v!r}")
            v = int(v)
            if v <= 0:
                raise RefError(f"{source}: field {k}: must be > 0, got {v}")
        elif k in _FLOAT_FIELDS:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                raise RefError(f"{source}: field {k}: want a positive number, got {v!r}")
            v = float(v)
        elif k == "layers":
            if not isinstance(v, list) or not v or any(x not in ("lin", "swa") for x in v):
                raise RefError(f"{source}: field layers: want a non-empty list of \"lin\"/\"swa\", got {v!r}")
        elif k == "moe_layers":
            if not isinstance(v, list) or any(isinstance(x, bool) or not isinstance(x, int) for x in v):
                raise RefError(f"{source}: field moe_layers: want a list of layer indices, got {v!r}")
        cfg[k] = v
    n = len(cfg["layers"])
    for i in cfg["moe_layers"]:
        if not 0 <= i < n:
            raise RefError(f"{source}: field moe_layers: index {i} out of range [0,{n})")
    if len(set(cfg["moe_layers"])) != len(cfg["moe_layers"]):
        raise RefError(f"{source}: field moe_layers: duplicate index in {cfg['moe_layers']}")
    if cfg["moe_layers"] and cfg["top_k"] > cfg["experts"]:
        raise RefError(f"{source}: field top_k: {cfg['top_k']} > experts {cfg['experts']}")
    if cfg["swa_head_dim"] % 2:
        raise RefError(f"{source}: field swa_head_dim: must be even for RoPE, got {cfg['swa_head_dim']}")
    return cfg


def load_config(path):
    with open(path) as f:
        try:
            fields = json.load(f)
        except json.JSONDecodeError as e:
            raise RefError(f"{path}: {e}")
    if not isinstance(fields, dict):
        raise RefError(f"{path}: want a JSON object")
    return make_config(fields, path)


def config_json(cfg):
    out = {"arch": ARCH}
    out.update(cfg)
    return out


# ---------------------------------------------------------------- safetensors


def bf16_bits_to_f64(bits_u16):
    """uint16 numpy array of bf16 bit patterns -> float64 numpy array (exact)."""
    return (bits_u16.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def to_bf16_bits(x):
    """float tensor -> uint16 numpy array of bf16 bits (round to nearest even)."""
    t = torch.as_tensor(x).detach().to(torch.float32).contiguous().to(torch.bfloat16)
    return t.view(torch.int16).numpy().view(np.uint16)


_DT = {"BF16": 2, "F32": 4, "F64": 8, "F16": 2}


def read_safetensors(path):
    """Returns {name: float64 torch tensor}; checks the header thoroughly."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise RefError(f"{path}: truncated (no header length)")
    (hlen,) = struct.unpack("<Q", data[:8])
    if 8 + hlen > len(data):
        raise RefError(f"{path}: header length {hlen} past end of file ({len(data)} bytes)")
    try:
        header = json.loads(data[8:8 + hlen].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise RefError(f"{path}: bad header: {e}")
    body = data[8 + hlen:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dt = info.get("dtype")
        if dt not in _DT:
            raise RefError(f"{path}: tensor {name}: unsupported dtype {dt!r}")
        shape = [int(s) for s in info["shape"]]
        start, end = info["data_offsets"]
        n = int(np.prod(shape)) if shape else 1
        if end - start != n * _DT[dt] or end > len(body) or start < 0:
            raise RefError(f"{path}: tensor {name}: data_offsets {start},{end} do not fit shape {shape} {dt} in {len(body)} bytes")
        raw = body[start:end]
        if dt == "BF16":
            arr = bf16_bits_to_f64(np.frombuffer(raw, dtype="<u2"))
        elif dt == "F16":
            arr = np.frombuffer(raw, dtype="<f2").astype(np.float64)
        elif dt == "F32":
            arr = np.frombuffer(raw, dtype="<f4").astype(np.float64)
        else:
            arr = np.frombuffer(raw, dtype="<f8").copy()
        out[name] = torch.from_numpy(arr.reshape(shape))
    return out


def write_safetensors(path, tensors, dtype="BF16"):
    """Writes {name: tensor} as one safetensors file (BF16 or F32), atomically."""
    header = {"__metadata__": {"format": "pt"}}
    blobs = []
    off = 0
    for name, t in tensors.items():
        t = torch.as_tensor(t).detach()
        if dtype == "BF16":
            raw = to_bf16_bits(t).astype("<u2").tobytes()
        elif dtype == "F32":
            raw = t.to(torch.float32).contiguous().numpy().astype("<f4").tobytes()
        else:
            raise ValueError(dtype)
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)  # keep the data 8-byte aligned, as safetensors does
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


# ---------------------------------------------------------------- parameters


def param_shapes(cfg):
    """Name -> shape of every model tensor, in docs/design.md §3 order."""
    D = cfg["d_model"]
    s = {"emb": [cfg["vocab_size"], D]}
    for i, kind in enumerate(cfg["layers"]):
        p = f"layers.{i}."
        s[p + "norm1.g"] = [D]
        s[p + "norm2.g"] = [D]
        if kind == "swa":
            hd = cfg["swa_heads"] * cfg["swa_head_dim"]
            for w in ("wq", "wk", "wv"):
                s[p + "swa." + w] = [D, hd]
            s[p + "swa.wo"] = [hd, D]
        else:
            H = cfg["lin_heads"]
            s[p + "lin.wq"] = [D, H * cfg["d_state"]]
            s[p + "lin.wk"] = [D, H * cfg["d_state"]]
            s[p + "lin.wv"] = [D, H * cfg["lin_head_dim"]]
            s[p + "lin.wa"] = [D, H]
            s[p + "lin.ba"] = [H]
            s[p + "lin.gn"] = [H * cfg["lin_head_dim"]]
            s[p + "lin.wo"] = [H * cfg["lin_head_dim"], D]
        if i in cfg["moe_layers"]:
            E, F = cfg["experts"], cfg["d_ff_expert"]
            s[p + "moe.router.w"] = [D, E]
            s[p + "moe.router.b"] = [E]
            s[p + "moe.w_up"] = [E, D, F]
            s[p + "moe.w_down"] = [E, F, D]
        else:
            s[p + "mlp.w_up"] = [D, cfg["d_ff"]]
            s[p + "mlp.w_down"] = [cfg["d_ff"], D]
    s["norm.g"] = [D]
    return s


def init_params(cfg, seed):
    """Random parameters (float64 values that are exact bf16 numbers).

    The scales are chosen to make a *test* sensitive, not to train well:
    every layer changes the residual by O(1), norm gains differ from 1 (a
    forgotten gain shows), decays span 0.9..0.999 and depend on x, router
    logits spread by O(1) so most blocks route with a clear margin."""
    g = torch.Generator().manual_seed(int(seed))
    D = cfg["d_model"]

    def normal(shape, std):
        return torch.randn(shape, generator=g) * std

    out = {}
    for name, shape in param_shapes(cfg).items():
        leaf = name.split(".", 2)[-1] if name.startswith("layers.") else name
        if name == "emb":
            t = normal(shape, 0.5)
        elif leaf.endswith(".g") or leaf == "lin.gn":
            t = 1.0 + normal(shape, 0.2)
        elif leaf == "lin.ba":
            t = -2.2 - 4.7 * torch.rand(shape, generator=g)  # softplus^-1 of -log(0.9..0.999)
        elif leaf == "lin.wa":
            t = normal(shape, 0.5 / math.sqrt(D))
        elif leaf == "moe.router.w":
            t = normal(shape, 4.0 / math.sqrt(D))
        elif leaf == "moe.router.b":
            t = normal(shape, 1.0)
        elif leaf == "moe.w_up":
            t = normal(shape, 1.0 / math.sqrt(D))
        elif leaf == "moe.w_down":
            t = normal(shape, 1.0 / math.sqrt(shape[1] * cfg["top_k"]))
        else:  # [in, out] projections
            t = normal(shape, 1.0 / math.sqrt(shape[0]))
        out[name] = bf16_round(t)
    return out


def bf16_round(t):
    return t.to(torch.float32).to(torch.bfloat16).to(torch.float64)


def load_checkpoint(ckdir):
    cfg = load_config(os.path.join(ckdir, "config.json"))
    path = os.path.join(ckdir, "model.safetensors")
    tensors = read_safetensors(path)
    params = {}
    for name, shape in param_shapes(cfg).items():
        if name not in tensors:
            raise RefError(f"{path}: missing tensor {name}")
        if list(tensors[name].shape) != shape:
            raise RefError(f"{path}: tensor {name}: shape {list(tensors[name].shape)}, want {shape}")
        params[name] = tensors[name]
    for name in tensors:
        if name not in params and not name.startswith("head."):
            raise RefError(f"{path}: unexpected tensor {name}")
    return cfg, params


def save_checkpoint(ckdir, cfg, params):
    os.makedirs(ckdir, exist_ok=True)
    with open(os.path.join(ckdir, "config.json"), "w") as f:
        json.dump(config_json(cfg), f, indent=2)
        f.write("\n")
    write_safetensors(os.path.join(ckdir, "model.safetensors"), params, "BF16")


# ---------------------------------------------------------------- model


def doc_layout(ids):
    """Per position: document index and position within the document.

    A document starts at every <bos> and at position 0 of the stream."""
    doc, pos = [], []
    d, p = -1, 0
    for t, x in enumerate(ids):
        if t == 0 or x == BOS:
            d += 1
            p = 0
        doc.append(d)
        pos.append(p)
        p += 1
    return torch.tensor(doc, dtype=torch.long), torch.tensor(pos, dtype=torch.long)


# When set, every GEMM's activation operand is rounded to bf16 first: a model
# of an engine that feeds bf16 activations to bf16 GEMMs with wide
# accumulation. Used only to measure the error such an engine should show,
# which is what the parity tolerance is derived from (see --emulate-bf16).
EMULATE_BF16 = False


def gin(x):
    return bf16_round(x) if EMULATE_BF16 else x


def rmsnorm(x, g, eps):
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * g


def rope(x, pos, theta):
    """Rotate-half RoPE over the full head_dim. x: [T, H, hd]; pos: [T]."""
    hd = x.shape[-1]
    half = hd // 2
    i = torch.arange(half, dtype=torch.float64)
    inv = theta ** (-2.0 * i / hd)
    ang = pos.to(torch.float64)[:, None] * inv[None, :]  # [T, half]
    c, s = torch.cos(ang)[:, None, :], torch.sin(ang)[:, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)


def swa(x, P, p, cfg, doc, pos):
    """Sliding-window attention, naive: full [T, T] scores with the mask."""
    T = x.shape[0]
    H, hd = cfg["swa_heads"], cfg["swa_head_dim"]
    x = gin(x)
    q = (x @ P[p + "swa.wq"]).view(T, H, hd)
    k = (x @ P[p + "swa.wk"]).view(T, H, hd)
    v = gin((x @ P[p + "swa.wv"]).view(T, H, hd))
    q = gin(rope(q, pos, cfg["rope_theta"]))
    k = gin(rope(k, pos, cfg["rope_theta"]))
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    mask = (j <= i) & (i - j < cfg["window"]) & (doc[:, None] == doc[None, :])
    scores = torch.einsum("ihd,jhd->hij", q, k) / math.sqrt(hd)
    scores = scores.masked_fill(~mask[None], float("-inf"))
    att = torch.softmax(scores, dim=-1)
    o = torch.einsum("hij,jhd->ihd", gin(att), v).reshape(T, H * hd)
    return gin(o) @ P[p + "swa.wo"]


def lin_attn(x, P, p, cfg, doc, pos, amp=None):
    """Log-decay linear attention, naive: the recurrence one token at a time.

    amp (optional, [T]) is raised to each position's worst cancellation
    factor |q|·|S|_F / |qᵀS| over heads: the per-head RMSNorm divides by |o|,
    so where qᵀS nearly cancels (at a <bos>, S = k vᵀ and the factor is
    1/|cos(q,k)|) relative input noise is amplified by about this much and
    the normalised output may even flip sign under bf16 rounding."""
    T = x.shape[0]
    H, ds, dv = cfg["lin_heads"], cfg["d_state"], cfg["lin_head_dim"]
    x = gin(x)
    q = (x @ P[p + "lin.wq"]).view(T, H, ds) / math.sqrt(ds)
    k = (x @ P[p + "lin.wk"]).view(T, H, ds)
    v = (x @ P[p + "lin.wv"]).view(T, H, dv)
    a = -torch.nn.functional.softplus(x @ P[p + "lin.wa"] + P[p + "lin.ba"])  # [T, H], log decay
    outs = []
    S = None
    for t, pt in enumerate(pos.tolist()):
        kv = k[t][:, :, None] * v[t][:, None, :]  # [H, ds, dv]
        if pt == 0:
            S = kv  # reset before the <bos> token's own update
        else:
            S = torch.exp(a[t])[:, None, None] * S + kv
        outs.append(torch.einsum("hs,hsv->hv", q[t], S))
        if amp is not None:
            with torch.no_grad():
                f = q[t].norm(dim=-1) * S.flatten(1).norm(dim=-1) / outs[-1].norm(dim=-1)
                amp[t] = max(float(amp[t]), float(f.nan_to_num(math.inf).max()))
    o = torch.stack(outs)  # [T, H, dv]
    gn = P[p + "lin.gn"].view(H, dv)
    o = rmsnorm(o, gn, cfg["norm_eps"]).reshape(T, H * dv)
    return gin(o) @ P[p + "lin.wo"]


def mlp(x, P, p):
    return gin(torch.relu(gin(x) @ P[p + "mlp.w_up"]) ** 2) @ P[p + "mlp.w_down"]


def route(logits, k):
    """Top-k expert indices, largest logit first, ties to the lower index.

    Returns (indices, margin) with margin = k-th minus (k+1)-th largest logit
    (inf when every expert is selected)."""
    vals = logits.detach().tolist()
    order = sorted(range(len(vals)), key=lambda e: (-vals[e], e))
    margin = vals[order[k - 1]] - vals[order[k]] if k < len(vals) else math.inf
    return order[:k], margin


def moe(x, P, p, cfg, doc, pos, layer, report):
    """Block-routed experts; one route block of one document at a time."""
    T, D = x.shape
    rb, K = cfg["route_block"], cfg["top_k"]
    starts = [t for t, q in enumerate(pos.tolist()) if q == 0]
    ends = starts[1:] + [T]
    parts = []
    for d, (s, e) in enumerate(zip(starts, ends)):
        prev = None
        for b, bs in enumerate(range(s, e, rb)):
            be = min(bs + rb, e)
            r = torch.zeros(D, dtype=x.dtype) if prev is None else x[prev[0]:prev[1]].mean(0)
            logits = r @ P[p + "moe.router.w"] + P[p + "moe.router.b"]
            sel, margin = route(logits, K)
            gates = torch.softmax(logits[sel], dim=0)
            xb = gin(x[bs:be])
            yb = torch.zeros(be - bs, D, dtype=x.dtype)
            for g, ex in zip(gates, sel):
                h = torch.relu(xb @ P[p + "moe.w_up"][ex]) ** 2
                yb = yb + gin(g * h) @ P[p + "moe.w_down"][ex]
            parts.append(yb)
            if report is not None:
                report.append({"layer": layer, "doc": d, "block": b, "start": bs, "end": be,
                               "experts": sel, "gates": [float(v) for v in gates.detach()],
                               "margin": margin})
            prev = (bs, be)
    return torch.cat(parts, 0)


def forward(cfg, P, ids, report=None, hidden=False, amp=None):
    """Logits [T, V] (float64) of a packed stream. report: list to which MoE
    routing decisions are appended; amp: [T] tensor of zeros that receives
    the linear-attention cancellation factors (see lin_attn)."""
    if len(ids) == 0:
        raise RefError("ids: empty stream")
    V = cfg["vocab_size"]
    for t, x in enumerate(ids):
        if not (isinstance(x, int) and 0 <= x < V):
            raise RefError(f"ids[{t}]: {x!r} is not a token id in [0,{V})")
    doc, pos = doc_layout(ids)
    eps = cfg["norm_eps"]
    h = P["emb"][torch.tensor(ids)]
    for i, kind in enumerate(cfg["layers"]):
        p = f"layers.{i}."
        x = rmsnorm(h, P[p + "norm1.g"], eps)
        if kind == "swa":
            h = h + swa(x, P, p, cfg, doc, pos)
        else:
            h = h + lin_attn(x, P, p, cfg, doc, pos, amp)
        x = rmsnorm(h, P[p + "norm2.g"], eps)
        if i in cfg["moe_layers"]:
            h = h + moe(x, P, p, cfg, doc, pos, i, report)
        else:
            h = h + mlp(x, P, p)
    hf = rmsnorm(h, P["norm.g"], eps)
    logits = gin(hf) @ P["emb"].T
    return (logits, hf) if hidden else logits


def stable_positions(ids, report, margin_min=MARGIN_MIN):
    """Per position: False from the first block (index >= 1) whose router
    margin is < margin_min to the end of its document.

    Block 0's router input is exactly zero, so its logits are the bf16 bias
    in every implementation and its routing (ties to the lower index) is
    exact: it never needs skipping."""
    T = len(ids)
    stable = [True] * T
    doc, _ = doc_layout(ids)
    doc_end = {}
    for t in range(T):
        doc_end[int(doc[t])] = t + 1
    for r in report:
        if r["block"] >= 1 and r["margin"] < margin_min:
            for t in range(r["start"], doc_end[r["doc"]]):
                stable[t] = False
    return stable


def loss_fn(logits, ids):
    """Mean full-vocabulary cross-entropy of the next token, over positions
    t < T-1 whose next token is not <bos> (no prediction across documents)."""
    tgt = torch.tensor(ids[1:])
    keep = tgt != BOS
    if not bool(keep.any()):
        raise RefError("ids: no position has a next token in the same document")
    lp = torch.log_softmax(logits[:-1], dim=-1)
    nll = -lp[torch.arange(len(ids) - 1), tgt]
    return nll[keep].mean()


# ---------------------------------------------------------------- CLI


def read_ids(path):
    with open(path) as f:
        try:
            ids = json.load(f)
        except json.JSONDecodeError as e:
            raise RefError(f"{path}: {e}")
    if not isinstance(ids, list):
        raise RefError(f"{path}: want a JSON array of token ids")
    return ids


def _finite(x):
    """JSON has no infinity: clamp to 1e30 (an unbounded margin or factor)."""
    return min(float(x), 1e30)


def write_margins(path, ids, report, amp):
    blocks = [dict(r, margin=_finite(r["margin"])) for r in report]
    with open(path, "w") as f:
        json.dump({"margin_min": MARGIN_MIN, "blocks": blocks,
                   "stable": stable_positions(ids, report),
                   "lin_amplification": [round(_finite(x), 3) for x in amp]}, f, allow_nan=False)


def cmd_init(a):
    cfg = load_config(a.config)
    save_checkpoint(a.out, cfg, init_params(cfg, a.seed))


def cmd_forward(a):
    global EMULATE_BF16
    EMULATE_BF16 = a.emulate_bf16
    cfg, P = load_checkpoint(a.checkpoint)
    ids = read_ids(a.ids)
    report, amp = [], torch.zeros(len(ids))
    with torch.no_grad():
        logits = forward(cfg, P, ids, report, amp=amp)
    logits.to(torch.float32).numpy().astype("<f4").tofile(a.out)
    if a.margins:
        write_margins(a.margins, ids, report, amp)


def cmd_grad(a):
    cfg, P = load_checkpoint(a.checkpoint)
    ids = read_ids(a.ids)
    for t in P.values():
        t.requires_grad_(True)
    report, amp = [], torch.zeros(len(ids))
    loss = loss_fn(forward(cfg, P, ids, report, amp=amp), ids)
    loss.backward()
    write_safetensors(a.out, {n: t.grad for n, t in P.items()}, "F32")
    if a.margins:
        write_margins(a.margins, ids, report, amp)
    if a.loss:
        with open(a.loss, "w") as f:
            json.dump({"loss": float(loss)}, f)


def cmd_batch(a):
    """Runs a JSON list of argument lists (["init", "--config", ...], ...) in
    this one process, so tests pay for Python and torch start-up once."""
    with open(a.jobs) as f:
        jobs = json.load(f)
    for argv in jobs:
        if not isinstance(argv, list) or not argv or argv[0] == "batch":
            raise RefError(f"{a.jobs}: bad job {argv!r}")
        if main([str(x) for x in argv]) != 0:
            raise RefError(f"{a.jobs}: job {argv!r} failed")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("batch", help="run a JSON list of commands in one process")
    p.add_argument("jobs")
    p.set_defaults(fn=cmd_batch)
    p = sub.add_parser("init", help="write a random bf16 checkpoint")
    p.add_argument("--config", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    p.set_defaults(fn=cmd_init)
    for name, fn, help_ in (("forward", cmd_forward, "logits of a packed stream"),
                            ("grad", cmd_grad, "float32 gradients of the next-token loss")):
        p = sub.add_parser(name, help=help_)
        p.add_argument("--checkpoint", required=True)
        p.add_argument("--ids", "--ids-file", dest="ids", required=True)
        p.add_argument("--out", required=True)
        p.add_argument("--margins", help="write the MoE routing report (JSON) here")
        if name == "forward":
            p.add_argument("--emulate-bf16", action="store_true",
                           help="round every GEMM activation operand to bf16 (to size tolerances)")
        if name == "grad":
            p.add_argument("--loss", help="write {\"loss\": L} (JSON) here")
        p.set_defaults(fn=fn)
    a = ap.parse_args(argv)
    try:
        a.fn(a)
    except (RefError, OSError) as e:
        print(f"onecore_ref: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
