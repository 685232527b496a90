"""Selective scan (S4D recurrent form, S6, B2S6): see reference.py for the equations and shapes, lean.py for the
memory-lean backend that CPU calls run by default."""

from __future__ import annotations

from ..dispatch import Op
from . import lean, reference

# lean (lean.py) is the automatic choice on CPU: the reference's results, a fraction of its backward memory
OP = Op("selective_scan", __name__, reference.selective_scan, lean=lean.selective_scan)
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
