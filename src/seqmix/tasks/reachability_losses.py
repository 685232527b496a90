"""Losses of the reachability task (frontier-superposition paper, §3 and spec U1/U9).

The loss mode is a task setting: sup (per-slot cosine to IDEAL), node (set-level CE), e2e_cos (cosine on the
last slot), e2e_ce (CE to the lex-min node on the last slot), composite_sup / composite_node (lex-min CE on the
last slot plus sup / node on the earlier slots). Slots z: (B, S, d); sets V: (B, S, n) bool; U: (d, n).
"""

from __future__ import annotations

import typing
from typing import Literal

import torch

from ..ops.graphs import GraphBatch

# the loss modes, once: the Literal types the task's `loss` option (its config schema), LOSSES the checks
Loss = Literal["sup", "node", "e2e_cos", "e2e_ce", "composite_sup", "composite_node"]
LOSSES = typing.get_args(Loss)


def ideal_targets(V: torch.Tensor, U: torch.Tensor) -> torch.Tensor:
    """z_c* = k_c^{-1/2} U 1_{V_c}: (B, S, n) bool, (d, n) -> (B, S, d)."""
    Vf = V.to(U.dtype)
    return (Vf @ U.T) / Vf.sum(-1, keepdim=True).clamp(min=1).sqrt()


def cosine(a: torch.Tensor, b: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    return (a * b).sum(-1) / (a.norm(dim=-1).clamp(min=eps) * b.norm(dim=-1).clamp(min=eps))


def slot_losses(z: torch.Tensor, V: torch.Tensor, U: torch.Tensor, kind: str, scale=None) -> torch.Tensor:
    """Per-slot losses (B, S) for slots z: (B, S, d) against sets V: (B, S, n).
    sup: 1 - cos(z_c, z_c*); node: CE(softmax(s U^T z_c), uniform on V_c), s = ``scale`` (None = 1)."""
    if kind == "sup":
        return 1.0 - cosine(z, ideal_targets(V, U))
    if kind == "node":
        logp = torch.log_softmax(_readout(z, U, scale), dim=-1)
        Vf = V.to(z.dtype)
        return -(logp * Vf).sum(-1) / Vf.sum(-1).clamp(min=1)
    raise ValueError(kind)


def _readout(z: torch.Tensor, U: torch.Tensor, scale=None) -> torch.Tensor:
    """Readout logits U^T z (§3: no temperature), times the learnable ``scale`` when the model has one (U9)."""
    logits = z @ U
    return logits if scale is None else scale * logits


def supervision_loss(
    z: torch.Tensor, batch: GraphBatch, U: torch.Tensor, mode: str, slots: str = "all", scale=None
) -> torch.Tensor:
    """The training loss. z: (B, L+1, d) slots z_0..z_L (z_0 = u_r is never supervised).

    ``slots``: all -> z_1..z_L supervised (default, spec U1); intermediate -> z_1..z_{L-1} (the literal §3 sum).
    ``scale``: the readout-softmax scale of the node and cross-entropy losses (None = 1, §3).
    """
    L = z.shape[1] - 1
    last = L + 1 if slots == "all" else L
    if mode in ("sup", "node"):
        return slot_losses(z[:, 1:last], batch.V[:, 1:last], U, mode, scale).sum(-1).mean()
    if mode == "e2e_cos":
        return (1.0 - cosine(z[:, L], ideal_targets(batch.V[:, L : L + 1], U)[:, 0])).mean()
    ce = torch.nn.functional.cross_entropy(_readout(z[:, L], U, scale), batch.lexmin)
    if mode == "e2e_ce":
        return ce
    if mode in ("composite_sup", "composite_node"):
        inter = slot_losses(z[:, 1:L], batch.V[:, 1:L], U, mode.split("_")[1], scale).sum(-1).mean() if L > 1 else 0.0
        return ce + inter
    raise ValueError(f"unknown loss {mode!r}; known: {', '.join(LOSSES)}")
