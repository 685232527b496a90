"""Causal softmax attention with accumulated SO(2) rotations (q/k, optionally v) and ALiBi: see reference.py;
the flash-style kernel is triton.py."""

from __future__ import annotations

from ..dispatch import Op
from . import fused, reference

# Which backend runs on CUDA is read from ops/speed_table.json (the measured speedups; see dispatch.py).
# fused: torch's flash SDPA / FlexAttention, whose backward accumulates with atomics (declared nondeterministic:
# deterministic mode skips it; benchmarks/kernels.py checks bitwise repeatability on the card)
OP = Op(
    "rotation_attention",
    __name__,
    reference.rotation_attention,
    fused=fused.rotation_attention,
    nondeterministic={"fused"},
)
BACKENDS = OP.backends
backend_for = OP.backend_for
rope_steps = reference.rope_steps


def rotation_attention(q, k, v, psi=None, psi_v=None, slopes=None, scale=None, layout="half", backend=None):
    """Arguments and shapes as in ``reference.rotation_attention``."""
    return OP(q, backend, q, k, v, psi=psi, psi_v=psi_v, slopes=slopes, scale=scale, layout=layout)
