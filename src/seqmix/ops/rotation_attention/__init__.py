"""Causal softmax attention with accumulated SO(2) rotations (q/k, optionally v) and ALiBi: see reference.py;
the flash-style kernel is triton.py."""

from __future__ import annotations

from ..dispatch import Op
from . import reference

# Not chosen automatically on CUDA: on an H200 (2026-11-26, benchmarks/RESULTS.md) the kernel passed parity but
# ran forward + backward at 0.38-0.40x the speed of this reference; backend="triton" still runs it.
OP = Op("rotation_attention", __name__, reference.rotation_attention, auto_kernel=False)
BACKENDS = OP.backends
backend_for = OP.backend_for
rope_steps = reference.rope_steps


def rotation_attention(q, k, v, psi=None, psi_v=None, slopes=None, scale=None, layout="half", backend=None):
    """Arguments and shapes as in ``reference.rotation_attention``."""
    return OP(q, backend, q, k, v, psi=psi, psi_v=psi_v, slopes=slopes, scale=scale, layout=layout)
