"""Mamba2 SSD (scalar-identity state-space duality): see reference.py for the equations and shapes."""
from __future__ import annotations

from .._select import choose
from . import reference

BACKENDS = {"reference": reference.ssd_chunked}
ssd_recurrent = reference.ssd_recurrent
ssd_step = reference.ssd_step


def backend_for(tensor, requested: str | None = None) -> str:
    return choose("ssd", BACKENDS, tensor, requested)


def ssd(x, dt, A, B, C, D=None, chunk=64, h0=None, return_state=False, backend: str | None = None):
    """Chunked SSD through the chosen backend; arguments as in ``reference.ssd_chunked``."""
    return BACKENDS[backend_for(x, backend)](x, dt, A, B, C, D=D, chunk=chunk, h0=h0, return_state=return_state)
