"""Selective scan (S4D recurrent form, S6, B2S6): see reference.py for the equations and shapes."""

from __future__ import annotations

from ..dispatch import Op
from . import reference

OP = Op("selective_scan", __name__, reference.selective_scan)
BACKENDS = OP.backends
backend_for = OP.backend_for
phi1 = reference.phi1
linear_scan = reference.linear_scan
selective_scan_step = reference.selective_scan_step


def selective_scan(
    u,
    delta,
    A,
    B,
    C,
    B_bias=None,
    D=None,
    disc="zoh",
    x0=None,
    chunk=None,
    return_state=False,
    backend: str | None = None,
):
    """Dispatch to the chosen backend; arguments as in ``reference.selective_scan``."""
    return OP(
        u, backend, u, delta, A, B, C, B_bias=B_bias, D=D, disc=disc, x0=x0, chunk=chunk, return_state=return_state
    )
