"""Sessa feedback solve (I - B_fb) s = f: see reference.py."""

from __future__ import annotations

from ..dispatch import Op
from . import reference

OP = Op("feedback_solve", __name__, reference.feedback_solve_dense)
BACKENDS = OP.backends
backend_for = OP.backend_for
routing_matrix = reference.routing_matrix
feedback_solve_blocked = reference.feedback_solve_blocked


def feedback_solve(f, gamma, alpha, backend: str | None = None):
    """s with (I - gamma alpha_strict) s = f. f: (Nb, T, D); gamma: (Nb, T); alpha: (Nb, T, T)."""
    return OP(f, backend, f, gamma, alpha)
