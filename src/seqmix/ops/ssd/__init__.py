"""Mamba2 SSD (scalar-identity state-space duality): see reference.py for the equations and shapes."""

from __future__ import annotations

from ..dispatch import Op
from . import reference

# Not chosen automatically on CUDA: on an H200 (2026-11-26, benchmarks/RESULTS.md) the kernel passed parity but
# ran forward + backward at 0.47x the speed of the chunked reference; backend="triton" still runs it.
OP = Op("ssd", __name__, reference.ssd_chunked, auto_kernel=False)
BACKENDS = OP.backends
backend_for = OP.backend_for
ssd_recurrent = reference.ssd_recurrent
ssd_step = reference.ssd_step


def ssd(x, dt, A, B, C, D=None, chunk=64, h0=None, return_state=False, backend: str | None = None):
    """Chunked SSD through the chosen backend; arguments as in ``reference.ssd_chunked``."""
    return OP(x, backend, x, dt, A, B, C, D=D, chunk=chunk, h0=h0, return_state=return_state)
