"""Causal long convolution by FFT, pure torch (the S4D convolution form; b2s6 spec §2.1).

    y[..., t, c] = sum_{m=0}^{t} K[m, c] u[..., t - m, c]

Zero-padding to 2L makes the circular FFT product a linear convolution. A kernel with more than L taps is
cut to its first L (taps m >= L never reach an output t < L); an uncut one would wrap around the FFT
length. A shorter kernel is zero-padded by the FFT.
"""

from __future__ import annotations

import torch

from ..checks import Signature, cast


def causal_conv_fft(u: torch.Tensor, K: torch.Tensor) -> torch.Tensor:
    """u: (Nb, L, d) real; K: (taps, d) real kernel, taps >= 1. Returns (Nb, L, d) in the common dtype of u, K."""
    sig = Signature("causal_conv_fft")
    sig.tensor("u", u, "Nb L d")
    sig.tensor("K", K, "taps d")
    if K.shape[0] == 0:
        raise ValueError(f"causal_conv_fft: K must have shape (taps, d) with taps >= 1, got {tuple(K.shape)}")
    dtype = sig.common_dtype()
    L = u.shape[1]
    u, K = cast(u, dtype), cast(K[:L], dtype)
    if L == 0:
        return u.clone()
    n = 2 * L
    Uf = torch.fft.rfft(u, n=n, dim=1)
    Kf = torch.fft.rfft(K, n=n, dim=0)
    return torch.fft.irfft(Uf * Kf, n=n, dim=1)[:, :L]
