"""Mamba2 SSD (scalar-identity state-space duality): see reference.py for the equations and shapes."""

from __future__ import annotations

from ..dispatch import Op
from . import fused, reference

# Which backend runs on CUDA is read from ops/speed_table.json (the measured speedups; see dispatch.py).
OP = Op("ssd", __name__, reference.ssd_chunked, fused=fused.ssd)
BACKENDS = OP.backends
backend_for = OP.backend_for
ssd_recurrent = reference.ssd_recurrent
ssd_step = reference.ssd_step


def ssd(x, dt, A, B, C, D=None, chunk=64, h0=None, return_state=False, backend: str | None = None):
    """Chunked SSD through the chosen backend; arguments as in ``reference.ssd_chunked``."""
    return OP(x, backend, x, dt, A, B, C, D=D, chunk=chunk, h0=h0, return_state=return_state)
