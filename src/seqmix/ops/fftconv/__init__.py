"""Causal FFT convolution (S4D's convolution form): see reference.py."""

from __future__ import annotations

from ..dispatch import Op
from . import reference

OP = Op("causal_conv_fft", __name__, reference.causal_conv_fft)
BACKENDS = OP.backends
backend_for = OP.backend_for


def causal_conv_fft(u, K, backend: str | None = None):
    """u: (B, L, d), K: (L, d) -> (B, L, d); see ``reference.causal_conv_fft``."""
    return OP(u, backend, u, K)
