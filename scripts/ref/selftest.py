#!/usr/bin/python3
"""Self-tests of the PyTorch reference (onecore_ref.py) and of the batched
benchmark model (onecore_fast.py): the naive forms against the chunked forms
of docs/design.md §2, document isolation, the window's exact reach, safetensors round
trips, config validation and autograd against finite differences.

Run: /usr/bin/python3 scripts/ref/selftest.py   (internal/parity runs it too)
"""

import json
import math
import os
import random
import struct
import sys
import tempfile
import unittest

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import onecore_fast as fast  # noqa: E402
import onecore_ref as ref  # noqa: E402

SMALL = {
    "vocab_size": 300, "d_model": 32, "layers": ["lin", "swa", "lin", "swa"],
    "swa_heads": 2, "swa_head_dim": 16, "window": 16, "lin_heads": 2, "d_state": 8,
    "lin_head_dim": 16, "d_ff": 64, "moe_layers": [1, 2], "experts": 6, "top_k": 2,
    "d_ff_expert": 32, "route_block": 16,
}


def rand_doc(rng, n, V):
    return [1] + [rng.randrange(3, V) for _ in range(n - 1)]


class Reference(unittest.TestCase):
    def setUp(self):
        self.cfg = ref.make_config(SMALL)
        self.P = ref.init_params(self.cfg, 7)
        self.rng = random.Random(5)

    def test_naive_equals_chunked(self):
        # Equal-length documents, several chunks and route blocks each: the
        # naive reference (masked full attention, token-by-token recurrence,
        # block-by-block routing) against the chunked GEMM form.
        V = self.cfg["vocab_size"]
        docs = [rand_doc(self.rng, 48, V) for _ in range(3)]
        stream = sum(docs, [])
        rep = []
        with torch.no_grad():
            want = ref.forward(self.cfg, self.P, stream, rep)
            got = fast.logits(self.cfg, self.P, torch.tensor(docs)).reshape(len(stream), V)
        self.assertLess(min(r["margin"] for r in rep), math.inf)
        err = (want - got).abs().max().item()
        self.assertLess(err, 1e-9 * want.abs().max().item(), err)

    def test_document_isolation(self):
        V = self.cfg["vocab_size"]
        docs = [rand_doc(self.rng, n, V) for n in (37, 1, 16, 50, 5)]
        with torch.no_grad():
            alone = [ref.forward(self.cfg, self.P, d) for d in docs]
            for order in ([0, 1, 2, 3, 4], [3, 0, 4, 2, 1]):
                stream = sum((docs[i] for i in order), [])
                lg = ref.forward(self.cfg, self.P, stream)
                t = 0
                for i in order:
                    n = len(docs[i])
                    err = (lg[t:t + n] - alone[i]).abs().max().item()
                    self.assertLess(err, 1e-10, f"doc {i} at {t}: {err}")
                    t += n

    def test_stream_start_is_document_start(self):
        V = self.cfg["vocab_size"]
        a = rand_doc(self.rng, 20, V)[1:]  # no <bos>
        b = rand_doc(self.rng, 20, V)
        with torch.no_grad():
            lg = ref.forward(self.cfg, self.P, a + b)
            la = ref.forward(self.cfg, self.P, a)
        self.assertLess((lg[:len(a)] - la).abs().max().item(), 1e-10)

    def test_window_reach(self):
        # One SWA layer only: the logits at t depend on tokens t-W+1..t and
        # on nothing earlier (a query sees at most W keys, itself included).
        cfg = ref.make_config(dict(SMALL, layers=["swa"], moe_layers=[]))
        P = ref.init_params(cfg, 3)
        W = cfg["window"]
        ids = rand_doc(self.rng, 40, cfg["vocab_size"])
        t = 35
        with torch.no_grad():
            base = ref.forward(cfg, P, ids)[t]
            for j, changes in ((t - W, False), (t - W + 1, True)):
                ids2 = list(ids)
                ids2[j] = ids2[j] + 1
                d = (ref.forward(cfg, P, ids2)[t] - base).abs().max().item()
                self.assertEqual(d > 1e-9, changes, f"token {j} changes logits at {t}: {d}")

    def test_linear_state_reset_before_bos(self):
        # S_bos = k_bos v_bosᵀ: with huge decays (a ≈ 0) a reset that came
        # after the update would leak the previous document.
        cfg = ref.make_config(dict(SMALL, layers=["lin"], moe_layers=[]))
        P = ref.init_params(cfg, 4)
        P["layers.0.lin.ba"] = torch.full_like(P["layers.0.lin.ba"], -30.0)
        a, b = rand_doc(self.rng, 9, 300), rand_doc(self.rng, 9, 300)
        with torch.no_grad():
            lg = ref.forward(cfg, P, a + b)
            lb = ref.forward(cfg, P, b)
        self.assertLess((lg[9:] - lb).abs().max().item(), 1e-10)

    def test_route_ties_lower_index(self):
        idx, margin = ref.route(torch.tensor([0.5, 1.0, 0.5, 1.0, 0.5]), 3)
        self.assertEqual(idx, [1, 3, 0])
        self.assertEqual(margin, 0.0)

    def test_stable_positions(self):
        ids = [1, 5, 5, 5, 5, 1, 5, 5, 5]
        rep = [{"layer": 0, "doc": 0, "block": 0, "start": 0, "end": 2, "margin": 0.0},
               {"layer": 0, "doc": 0, "block": 1, "start": 2, "end": 4, "margin": 0.01},
               {"layer": 0, "doc": 1, "block": 1, "start": 7, "end": 9, "margin": 0.2}]
        self.assertEqual(ref.stable_positions(ids, rep),
                         [True, True, False, False, False, True, True, True, True])

    def test_grad_matches_finite_differences(self):
        cfg, P = self.cfg, {n: t.clone() for n, t in self.P.items()}
        ids = rand_doc(self.rng, 40, 300) + rand_doc(self.rng, 10, 300)
        for t in P.values():
            t.requires_grad_(True)
        rep = []
        loss = ref.loss_fn(ref.forward(cfg, P, ids, rep), ids)
        loss.backward()
        self.assertGreater(min(r["margin"] for r in rep if r["block"] > 0), 1e-3)
        gen = torch.Generator().manual_seed(1)
        names = ["emb", "norm.g", "layers.0.lin.wa", "layers.0.lin.ba", "layers.0.lin.gn",
                 "layers.1.swa.wq", "layers.1.moe.router.w", "layers.1.moe.router.b",
                 "layers.2.moe.w_up", "layers.3.mlp.w_down", "layers.3.norm1.g"]
        with torch.no_grad():
            for n in names:
                flat = P[n].view(-1)
                gflat = P[n].grad.view(-1)
                for _ in range(3):
                    # pick a coordinate with a non-negligible gradient when one exists
                    cand = torch.randint(0, flat.numel(), (64,), generator=gen)
                    i = int(cand[gflat[cand].abs().argmax()])
                    h = 1e-6
                    old = flat[i].item()
                    flat[i] = old + h
                    lp = ref.loss_fn(ref.forward(cfg, P, ids), ids).item()
                    flat[i] = old - h
                    lm = ref.loss_fn(ref.forward(cfg, P, ids), ids).item()
                    flat[i] = old
                    fd = (lp - lm) / (2 * h)
                    self.assertAlmostEqual(fd, gflat[i].item(), delta=1e-6 + 1e-5 * abs(fd), msg=f"{n}[{i}]")

    def test_loss_skips_bos_targets(self):
        cfg, P = self.cfg, self.P
        a, b = rand_doc(self.rng, 6, 300), rand_doc(self.rng, 4, 300)
        with torch.no_grad():
            lg = ref.forward(cfg, P, a + b)
            lp = torch.log_softmax(lg, -1)
            ids = a + b
            want = -sum(lp[t, ids[t + 1]] for t in range(len(ids) - 1) if ids[t + 1] != 1) / 8
            self.assertAlmostEqual(ref.loss_fn(lg, ids).item(), want.item(), places=12)


class Files(unittest.TestCase):
    def test_safetensors_round_trip(self):
        cfg = ref.make_config(SMALL)
        P = ref.init_params(cfg, 1)
        with tempfile.TemporaryDirectory() as d:
            ref.save_checkpoint(d, cfg, P)
            cfg2, P2 = ref.load_checkpoint(d)
            self.assertEqual(cfg, cfg2)
            for n in P:
                self.assertTrue(torch.equal(P[n], P2[n]), n)
            with open(os.path.join(d, "model.safetensors"), "rb") as f:
                raw = f.read()
            (hlen,) = struct.unpack("<Q", raw[:8])
            self.assertEqual(hlen % 8, 0)
            hdr = json.loads(raw[8:8 + hlen])
            self.assertEqual(hdr["emb"]["dtype"], "BF16")
            self.assertEqual(hdr["emb"]["shape"], [300, 32])
            with open(os.path.join(d, "config.json")) as f:
                self.assertEqual(json.load(f)["arch"], "onecore-hybrid")
            g = os.path.join(d, "g.safetensors")
            x = {"a": torch.tensor([[1.0, -2.5e-3], [3.0, 1e9]])}
            ref.write_safetensors(g, x, "F32")
            self.assertTrue(torch.equal(ref.read_safetensors(g)["a"], x["a"].float().double()))
            # truncation and a wrong shape are errors naming the tensor
            p = os.path.join(d, "model.safetensors")
            with open(p, "wb") as f:
                f.write(raw[:-10])
            with self.assertRaisesRegex(ref.RefError, "tensor"):
                ref.load_checkpoint(d)

    def test_bf16_rounding_is_nearest_even(self):
        x = torch.tensor([1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, -1.0 - 2 ** -9, 3.0e38])
        bits = ref.to_bf16_bits(x)
        back = ref.bf16_bits_to_f64(bits)
        np.testing.assert_array_equal(back[:3], [1.0, 1.0 + 2 ** -6, -1.0])

    def test_config_validation(self):
        self.assertEqual(ref.make_config({})["layers"], ["lin", "swa", "swa", "lin", "swa", "lin"])
        for bad, msg in (({"d_modle": 3}, "d_modle"), ({"layers": ["mlp"]}, "layers"),
                         ({"moe_layers": [9]}, "moe_layers"), ({"window": 0}, "window"),
                         ({"arch": "llama"}, "arch"), ({"norm_eps": -1}, "norm_eps")):
            with self.assertRaisesRegex(ref.RefError, msg):
                ref.make_config(bad)


class Bench(unittest.TestCase):
    def test_fast_model_gradients(self):
        # The training benchmark differentiates the chunked model: its
        # autograd gradients equal the reference's (float64).
        cfg = ref.make_config(SMALL)
        rng = random.Random(4)
        docs = [rand_doc(rng, 32, 300) for _ in range(2)]
        grads = []
        for impl in ("ref", "fast"):
            P = {n: t.clone().requires_grad_(True) for n, t in ref.init_params(cfg, 6).items()}
            if impl == "ref":
                lg = ref.forward(cfg, P, sum(docs, []))
            else:
                lg = fast.logits(cfg, P, torch.tensor(docs)).reshape(64, -1)
            w = torch.randn(lg.shape, generator=torch.Generator().manual_seed(0), dtype=lg.dtype)
            (lg * w).sum().backward()
            grads.append({n: t.grad for n, t in P.items()})
        for n in grads[0]:
            a, b = grads[0][n], grads[1][n]
            self.assertLess((a - b).norm().item(), 1e-8 * (1 + a.norm().item()), n)

    def test_bf16_fast_model_tracks_reference(self):
        # The benchmark's bf16 model computes the same function: top-1 agrees
        # almost everywhere and logits are within bf16 noise.
        cfg = ref.make_config(dict(SMALL, moe_layers=[]))
        P = ref.init_params(cfg, 2)
        rng = random.Random(9)
        docs = [rand_doc(rng, 64, 300) for _ in range(2)]
        with torch.no_grad():
            want = ref.forward(cfg, P, sum(docs, []))
            Pb = {n: t.to(torch.bfloat16) for n, t in P.items()}
            got = fast.logits(cfg, Pb, torch.tensor(docs)).double().reshape(want.shape)
        rel = (got - want).abs().max().item() / want.abs().max().item()
        self.assertLess(rel, 0.05, rel)
        agree = (got.argmax(-1) == want.argmax(-1)).double().mean().item()
        self.assertGreater(agree, 0.9, agree)


if __name__ == "__main__":
    unittest.main()
