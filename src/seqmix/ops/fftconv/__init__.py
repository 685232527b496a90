"""Causal FFT convolution (S4D's convolution form): see reference.py."""
from __future__ import annotations

from .._select import choose
from . import reference

BACKENDS = {"reference": reference.causal_conv_fft}


def backend_for(tensor, requested: str | None = None) -> str:
    return choose("fftconv", BACKENDS, tensor, requested)


def causal_conv_fft(u, K, backend: str | None = None):
    return BACKENDS[backend_for(u, backend)](u, K)
