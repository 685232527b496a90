"""Sessa feedback solve (I - B_fb) s = f: see reference.py."""
from __future__ import annotations

from .._select import choose
from . import reference

BACKENDS = {"reference": reference.feedback_solve_dense}
routing_matrix = reference.routing_matrix
feedback_solve_blocked = reference.feedback_solve_blocked


def backend_for(tensor, requested: str | None = None) -> str:
    return choose("feedback_solve", BACKENDS, tensor, requested)


def feedback_solve(f, gamma, alpha, backend: str | None = None):
    """s with (I - gamma alpha_strict) s = f. f: (Nb, T, D); gamma: (Nb, T); alpha: (Nb, T, T)."""
    return BACKENDS[backend_for(f, backend)](f, gamma, alpha)
