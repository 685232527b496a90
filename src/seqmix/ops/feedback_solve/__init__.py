"""Sessa feedback solve (I - B_fb) s = f: see reference.py; from the feedback projections with one T x T
saved for backward (what the Sessa mixer calls): see saved_once.py."""

from __future__ import annotations

from ..dispatch import Op
from . import fused, reference, saved_once

# Which backend runs on CUDA is read from ops/speed_table.json (the measured speedups; see dispatch.py).
OP = Op("feedback_solve", __name__, reference.feedback_solve_dense, fused=fused.feedback_solve)
BACKENDS = OP.backends
backend_for = OP.backend_for
routing_matrix = reference.routing_matrix
feedback_solve_blocked = reference.feedback_solve_blocked
feedback_alpha = saved_once.feedback_alpha
ATTENTION_OP = Op(
    "feedback_attention_solve", __name__, saved_once.feedback_attention_solve, fused=fused.feedback_attention_solve
)


def feedback_solve(f, gamma, alpha, backend: str | None = None):
    """s with (I - gamma alpha_strict) s = f. f: (Nb, T, D); gamma: (Nb, T); alpha: (Nb, T, T)."""
    return OP(f, backend, f, gamma, alpha)


def feedback_attention_solve(f, gamma, qb, kb, scale: float, backend: str | None = None):
    """s with (I - gamma alpha) s = f, alpha = softmax_{j<t}(scale qb kb^T). f: (Nb, T, D); gamma: (Nb, T);
    qb, kb: (Nb, T, d). Saves one T x T (alpha) per sequence for backward."""
    return ATTENTION_OP(f, backend, f, gamma, qb, kb, scale)
