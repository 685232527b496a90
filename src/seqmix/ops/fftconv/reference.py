"""Causal long convolution by FFT, pure torch (the S4D convolution form; b2s6 spec §2.1).

    y[..., t, c] = sum_{m=0}^{t} K[m, c] u[..., t - m, c]

Zero-padding to 2L makes the circular FFT product a linear convolution.
"""

from __future__ import annotations

import torch


def causal_conv_fft(u: torch.Tensor, K: torch.Tensor) -> torch.Tensor:
    """u: (Nb, L, d) real; K: (L, d) real kernel. Returns (Nb, L, d)."""
    L = u.shape[1]
    n = 2 * L
    Uf = torch.fft.rfft(u, n=n, dim=1)
    Kf = torch.fft.rfft(K, n=n, dim=0)
    return torch.fft.irfft(Uf * Kf, n=n, dim=1)[:, :L]
