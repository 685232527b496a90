"""Selective scan (S4D recurrent form, S6, B2S6): see reference.py for the equations and shapes."""
from __future__ import annotations

from .._select import choose
from . import reference

BACKENDS = {"reference": reference.selective_scan}
phi1 = reference.phi1
linear_scan = reference.linear_scan
selective_scan_step = reference.selective_scan_step


def backend_for(tensor, requested: str | None = None) -> str:
    return choose("selective_scan", BACKENDS, tensor, requested)


def selective_scan(u, delta, A, B, C, B_bias=None, D=None, disc="zoh", x0=None, chunk=None,
                   return_state=False, backend: str | None = None):
    """Dispatch to the chosen backend; arguments as in ``reference.selective_scan``."""
    fn = BACKENDS[backend_for(u, backend)]
    return fn(u, delta, A, B, C, B_bias=B_bias, D=D, disc=disc, x0=x0, chunk=chunk, return_state=return_state)
