"""Multi-head factorized linear attention with learnable positional features (heads paper, Eq. 6).

    y_i = sum_j (sum_h alpha_ij^(h) V^(h)) x_j,   alpha^(h) = tril(Phi_h Psi_h^T)

Per head: a full p x d value matrix V^(h) (pitfall P1: a rank-deficient value map cannot represent a
rotation block), positional tables Phi_h, Psi_h in R^{n x r}. No softmax, normaliser or positive
feature map (pitfall P2); the causal mask multiplies after the inner product.
"""

from __future__ import annotations

import math
from typing import Annotated, ClassVar

import torch
from torch import nn

from ..options import Opt, PosInt
from ..registry import register_mixer


@register_mixer("factorized_linear_attention")
class FactorizedLinearAttention(nn.Module):
    causal: ClassVar[bool] = True
    fixed_length: ClassVar[bool] = True  # Phi, Psi: one row per position of the training length (config.compatibility)
    # pure torch: the value backend_report gives a model of no declared backend, so the run tags stay the same
    backend: ClassVar[str] = "torch-reference"
    example_options: ClassVar[dict] = {"heads": 2}  # Mixer clause 2

    def __init__(
        self,
        d_model: int,
        *,
        layer_idx: int = 0,
        seq_len: int | None = None,
        d_out: Annotated[int | None, Opt(minimum=1, description="output width p; null = d_model")] = None,
        heads: PosInt = 1,
        r: Annotated[int | None, Opt(minimum=1, description="feature dim; null = seq_len")] = None,
    ):
        super().__init__()
        d_in, d_out = d_model, d_model if d_out is None else d_out
        for name, v in (("d_model", d_in), ("d_out", d_out), ("seq_len", seq_len), ("heads", heads)):
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        r = seq_len if r is None else r
        if r < 1:
            raise ValueError(f"r must be a positive integer, got {r!r}")
        self.d_in, self.d_out, self.n, self.heads, self.r = d_in, d_out, seq_len, heads, r
        self.V = nn.Parameter(torch.randn(heads, d_out, d_in) / math.sqrt(d_in))
        std = r**-0.25  # so that alpha entries are O(1)
        self.Phi = nn.Parameter(torch.randn(heads, seq_len, r) * std)
        self.Psi = nn.Parameter(torch.randn(heads, seq_len, r) * std)
        self.register_buffer("mask", torch.tril(torch.ones(seq_len, seq_len)), persistent=False)

    def coefficients(self) -> torch.Tensor:
        """alpha: (H, n, n), lower triangular."""
        return torch.einsum("hir,hjr->hij", self.Phi, self.Psi) * self.mask

    def interaction_operator(self) -> torch.Tensor:
        """K[i, j] = sum_h alpha_ij^(h) V^(h): (n, n, p, d); equals the Jacobian dy_i/dx_j."""
        return torch.einsum("hij,hpd->ijpd", self.coefficients(), self.V)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: (B, n, d_in) -> (B, n, d_out)."""
        if x.shape[-2:] != (self.n, self.d_in):
            raise ValueError(f"expected input (..., {self.n}, {self.d_in}), got {tuple(x.shape)}")
        return torch.einsum("hij,bjd,hpd->bip", self.coefficients(), x, self.V)
