"""Frontier-superposition paper: reachability by superposition on directed Erdős–Rényi graphs.

Data (one instance = one graph and one root):
- directed G(n, p): every ordered pair (s, t), s != t, is an edge independently with probability p
  (no self-loops, no multi-edges); root r ~ Unif([n]) independent of the graph;
- cumulative reachable sets V_0 = {r}, V_{c+1} = V_c ∪ {t : (s, t) ∈ E, s ∈ V_c} (within <= c hops; the
  paper's "exactly c hops" reading is the option ``set_semantics: exact``), sizes k_c = |V_c|;
- new frontier N_{c+1} = V_{c+1} \\ V_c, m_f^(c) = |N_{c+1}|; frontier edges F_c = {s ∈ V_c, t ∈ N_{c+1}};
- IDEAL targets z_c* = k_c^{-1/2} Σ_{v ∈ V_c} u_v; the lex-min answer min V_L.

A batch is a pure function of (seed, step, rank) (``counter_generator``); the evaluation set is a pure
function of (n, p, L, eval_seed, eval_size), shared by every run with the same graph settings and cached
(in memory, and on disk under ``$SEQMIX_DATA_CACHE`` when set, verified by a content hash).

The loss mode is a task setting (``loss``, see ``reachability_losses``). Graph sampling and reachable sets
live in ``seqmix.ops.graphs`` (pure torch, shared with the theory); the metrics in ``reachability_metrics``.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
from pathlib import Path
from typing import Annotated, ClassVar, Literal

import torch

from ..ops.graphs import GraphBatch, sample_graphs
from ..options import NonNegInt, Opt, PosInt
from ..registry import register_task
from ..rng import counter_generator
from .base import Task
from .reachability_losses import LOSSES, Loss, supervision_loss
from .reachability_metrics import cascade_diagnostics

log = logging.getLogger("seqmix.reachability")


def fixed_embedding(n: int, d: int, seed: int, kind: str = "orthonormal_fixed", dtype=torch.float32) -> torch.Tensor:
    """U (d, n) with unit columns: a random orthonormal frame (QR of a Gaussian; needs d >= n), or normalised
    Gaussian columns (``random_gaussian_normalised``, mean |<u_v, u_w>| ~ 1/sqrt(d))."""
    g = counter_generator("superposition/embed", n, d, seed)
    G = torch.randn(d, n, generator=g, dtype=torch.float64)
    if kind == "orthonormal_fixed":
        if d < n:
            raise ValueError(f"an orthonormal embedding needs d >= n (d={d}, n={n})")
        Q, R = torch.linalg.qr(G)
        U = Q * torch.sign(torch.diagonal(R))  # unique frame
    elif kind == "random_gaussian_normalised":
        U = G / G.norm(dim=0, keepdim=True)
    else:
        raise ValueError(f"unknown embedding {kind!r}")
    return U.to(dtype)


# ----------------------------------------------------------------------------- cache of the evaluation set


def _cache_file(key: str) -> Path | None:
    root = os.environ.get("SEQMIX_DATA_CACHE")
    return Path(root) / "reachability" / f"{key}.pt" if root else None


def _content_hash(b: GraphBatch) -> str:
    h = hashlib.sha256()
    for t in (b.adj.to(torch.uint8), b.root, b.V.to(torch.uint8), b.lexmin):
        h.update(t.contiguous().numpy().tobytes())
    return h.hexdigest()


@functools.lru_cache(maxsize=8)
def eval_set(n: int, p: float, L: int, eval_seed: int, size: int, semantics: str, min_final_reach: int) -> GraphBatch:
    key = hashlib.sha256(repr((n, p, L, eval_seed, size, semantics, min_final_reach)).encode()).hexdigest()[:16]
    path = _cache_file(key)
    if path is not None and path.exists():
        try:
            d = torch.load(path, weights_only=True)
            b = GraphBatch(d["adj"].float(), d["root"], d["V"].bool(), d["lexmin"])
            if _content_hash(b) == d["sha256"]:
                return b
            log.warning("%s: content hash mismatch; rebuilding", path)
        except Exception as e:  # a corrupted file is rebuilt, never trusted
            log.warning("%s: unreadable (%s); rebuilding", path, e)
    b = sample_graphs(
        counter_generator("superposition/eval", n, p, L, eval_seed), size, n, p, L, semantics, min_final_reach
    )
    if path is not None:
        from ..io import torch_save

        torch_save(
            {
                "adj": b.adj.to(torch.uint8),
                "root": b.root,
                "V": b.V.to(torch.uint8),
                "lexmin": b.lexmin,
                "sha256": _content_hash(b),
            },
            path,
        )
    return b


# ----------------------------------------------------------------------------- the task


@register_task("reachability")
class Reachability(Task):
    example_options: ClassVar[dict] = {"n": 12, "p": 0.15, "L": 2, "d": 16, "eval_size": 8}
    example_model: ClassVar[dict] = {"name": "cascade"}
    # an orthonormal node embedding needs d >= n (config.leaf_rules checks it on every leaf before any job)
    at_most: ClassVar[dict] = {"n": "d if embed == 'orthonormal_fixed' else None"}
    # cascade_diagnostics (reachability_metrics): per slot z<c>, per layer l<c>, and their means
    summary_columns: ClassVar[dict[str, tuple[str, ...]]] = {
        "evaluate": (
            *("cos_z*", "recall_z*", "r_z*", "r_ideal_z*", "gap_z*"),
            *("sel_src_l*", "sel_front_l*", "alpha_eff_med_l*", "alpha_eff_mean_l*", "cos_theory_l*"),
            *("A_l*", "B_l*", "absA_max", "gamma_l*", "gamma_scaled_l*", "qk_specnorm_l*", "alpha_l*"),
            *("qk_*_l*", "ov_*_l*", "qk_*_mean", "ov_*_mean", "grad_norm_l*", "eval_loss"),
            *("acc_new_frontier", "acc_lexmin", "acc_two_candidate", "frac_mf0_last"),
        )
    }
    # a graph entry costs a float32 draw, the float adjacency, its bool test and, for the cached evaluation set,
    # a uint8 copy and the bytes hashed; min_final_reach draws twice the graphs it keeps
    memory: ClassVar[dict[str, str]] = {
        "evaluation graphs (eval_size, n, n)": "eval_size * n * n * 16 * (2 if min_final_reach else 1)",
        "a training batch of graphs (train.batch, n, n)": (
            "(train.batch or 1) * n * n * 12 * (2 if min_final_reach else 1)"
        ),
        "node embedding U (d, n) float64, with its QR": "3 * d * n * 8",
    }

    """Reachability by superposition (frontier-superposition paper). ``batch`` returns (x, y) with
    x = (adj, root) and y the GraphBatch; the model maps x to its slots."""

    def __init__(
        self,
        *,
        n: Annotated[int, Opt(minimum=2, description="nodes")],
        p: Annotated[float, Opt(exclusive_minimum=0, maximum=1, description="edge probability")],
        L: Annotated[int, Opt(minimum=1, description="cascade layers = hops (slots z_0..z_L)")],
        d: Annotated[int, Opt(minimum=1, description="embedding width")] = 64,
        embed: Literal["orthonormal_fixed", "random_gaussian_normalised"] = "orthonormal_fixed",
        embed_seed: NonNegInt = 0,
        set_semantics: Literal["cumulative", "exact"] = "cumulative",
        min_final_reach: NonNegInt = 0,
        loss: Loss = "sup",
        supervised_slots: Literal["all", "intermediate"] = "all",
        eval_size: PosInt = 1024,
        eval_seed: NonNegInt = 10000,
        diag_size: Annotated[int | None, Opt(minimum=1, description="instances per in-training evaluation")] = None,
        node_logit_scale: Annotated[
            float | None,
            Opt(
                exclusive_minimum=0,
                description="init of a learnable readout-softmax scale for the node and "
                "CE losses (spec U9); null = none, as in §3",
            ),
        ] = None,
        dtype: torch.dtype = torch.float32,
    ):
        if loss not in LOSSES:
            raise ValueError(f"unknown loss {loss!r}; known: {', '.join(LOSSES)}")
        self.n, self.p, self.L, self.d = n, p, L, d
        self.semantics, self.min_final_reach = set_semantics, min_final_reach
        self.loss_mode, self.slots = loss, supervised_slots
        self.eval_size, self.eval_seed = eval_size, eval_seed
        self.diag_size = diag_size or eval_size
        self.node_logit_scale = node_logit_scale
        self.dtype = dtype
        self.U = fixed_embedding(n, d, embed_seed, embed, dtype)
        self.d_in = self.d_out = d
        self.seq_len = n

    def model_inputs(self) -> dict:
        """The fixed node embedding U (d, n), the number of layers L and the readout-scale init (spec U9)."""
        return {"U": self.U, "L": self.L, "node_logit_scale": self.node_logit_scale}

    def batch(self, seed: int, step: int, rank: int, size: int):
        g = counter_generator("superposition/train", self.n, self.p, self.L, seed, step, rank)
        b = sample_graphs(g, size, self.n, self.p, self.L, self.semantics, self.min_final_reach)
        b.adj = b.adj.to(self.dtype)
        return (b.adj, b.root), b

    def test_set(self) -> GraphBatch:
        b = eval_set(self.n, self.p, self.L, self.eval_seed, self.eval_size, self.semantics, self.min_final_reach)
        return GraphBatch(b.adj.to(self.dtype), b.root, b.V, b.lexmin)

    def loss(self, pred: dict, target: GraphBatch) -> torch.Tensor:
        return supervision_loss(
            pred["z"], target, self.U.to(pred["z"].dtype), self.loss_mode, self.slots, pred.get("logit_scale")
        )

    def evaluate(self, model: torch.nn.Module) -> dict:
        return cascade_diagnostics(self, model, self.test_set())

    def diagnostics(self, model: torch.nn.Module) -> dict:
        """In-training evaluation (the loop calls it every ``eval.every`` steps)."""
        b = self.test_set()
        if self.diag_size < len(b):
            b = GraphBatch(
                b.adj[: self.diag_size], b.root[: self.diag_size], b.V[: self.diag_size], b.lexmin[: self.diag_size]
            )
        return cascade_diagnostics(self, model, b)


def set_size_table(n: int, p: float, L: int, samples: int, seed: int = 0) -> list[dict]:
    """Monte-Carlo statistics of the cumulative sets per slot c: E[k_c], sd, E[m_f], P(m_f = 0),
    E[1/sqrt(k_c)], E[sqrt(k_c/k_{c+1})], E[sqrt(m_f/k_{c+1})] (superposition spec §2.1 table)."""
    g = counter_generator("superposition/set-sizes", n, p, L, seed)
    ks = []
    edges = []
    for i in range(0, samples, 2000):
        b = sample_graphs(g, min(2000, samples - i), n, p, L)
        ks.append(b.V.sum(-1).double())
        edges.append(b.adj.sum((1, 2)).double())
    k = torch.cat(ks)  # (S, L+1)
    rows = []
    for c in range(L + 1):
        row = {
            "c": c,
            "E_k": float(k[:, c].mean()),
            "sd_k": float(k[:, c].std()),
            "E_inv_sqrt_k": float((1 / k[:, c].sqrt()).mean()),
        }
        if c < L:
            mf = k[:, c + 1] - k[:, c]
            row.update(
                E_mf=float(mf.mean()),
                P_mf0=float((mf == 0).double().mean()),
                E_sqrt_k_ratio=float((k[:, c] / k[:, c + 1]).sqrt().mean()),
                E_sqrt_mf_ratio=float((mf / k[:, c + 1]).sqrt().mean()),
            )
        rows.append(row)
    e = torch.cat(edges)
    rows.append({"c": "edges", "E_k": float(e.mean()), "sd_k": float(e.std())})
    return rows


def expected_sizes(np_: float, L: int) -> list[float]:
    """The paper's tree-regime convention k_c = (np)^c (superposition spec §4)."""
    return [np_**c for c in range(L + 1)]


__all__ = ["Reachability", "fixed_embedding", "set_size_table", "expected_sizes", "eval_set"]
