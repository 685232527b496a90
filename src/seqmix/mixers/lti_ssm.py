"""A bare linear time-invariant SSM (heads paper, Exp. II; heads spec §2.3.3).

    h_t = A h_{t-1} + B x_t,   y_t = C h_t,   h_{-1} = 0

A, B, C are bias-free ``nn.Linear`` maps (state N, width d). No D skip term and no discretisation step.

Inits (``init``):
- ``default``: PyTorch's own nn.Linear init (Kaiming-uniform, entries U(-1/sqrt(fan_in), 1/sqrt(fan_in))),
  the spec's reading of "standard initialization": the spectral radius rho(A) is about 1/sqrt(3) while
  ||A||_2 is above 1, so the Thm 5.1 bound ||C|| ||B|| ||A||^tau grows although the Jacobian decays;
- ``orthogonal``: A = rho Q with Q Haar-orthogonal (the spec's "stable-by-construction" ablation), so
  ||A^tau||_2 = rho^tau exactly and the bound is tight in slope. B and C keep the default init.

The input-output Jacobian is input-independent: dy_i/dx_j = C A^(i-j) B (``lag_operator``). Three
equivalent forward computations (heads spec §2.2): the sequential scan (``forward``), the causal convolution with
the materialised kernel (``forward_conv``) and the FFT convolution (``forward_fft``).
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

import torch
from torch import nn

from ..options import Opt
from ..registry import register_mixer


def haar_orthogonal(
    n: int, dtype: torch.dtype = torch.float64, generator: torch.Generator | None = None
) -> torch.Tensor:
    """A Haar-distributed orthogonal matrix: QR of a Gaussian with the signs of R's diagonal moved into Q."""
    g = torch.randn(n, n, dtype=torch.float64, generator=generator)
    q, r = torch.linalg.qr(g)
    q = q * torch.sign(torch.diagonal(r))[None, :]
    return q.to(dtype)


@register_mixer("linear_ssm")
class LinearSSM(nn.Module):
    causal: ClassVar[bool] = True
    # pure torch: the value backend_report gives a model of no declared backend, so the run tags stay the same
    backend: ClassVar[str] = "torch-reference"
    example_options: ClassVar[dict] = {"state": 16}  # Mixer clause 2

    def __init__(
        self,
        d_model: int,
        *,
        layer_idx: int = 0,
        seq_len: int | None = None,
        d_out: Annotated[int | None, Opt(minimum=1, description="output width; null = d_model")] = None,
        state: Annotated[int, Opt(minimum=1, description="state dimension N")] = 64,
        init: Literal["default", "orthogonal"] = "default",
        rho: Annotated[
            float | None, Opt(exclusive_minimum=0, description="spectral radius of A = rho Q (init: orthogonal only)")
        ] = None,
    ):
        super().__init__()
        d_in, d_out = d_model, d_model if d_out is None else d_out
        for name, v in (("d_model", d_in), ("d_out", d_out), ("state", state)):
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if init not in ("default", "orthogonal"):
            raise ValueError(f"init must be 'default' or 'orthogonal', got {init!r}")
        if (init == "orthogonal") != (rho is not None):
            raise ValueError("rho is set exactly when init is 'orthogonal'")
        self.d_in, self.d_out, self.state, self.init, self.rho = d_in, d_out, state, init, rho
        # seq_len and layer_idx are not used: the map is defined for any length
        self.A = nn.Linear(state, state, bias=False)
        self.B = nn.Linear(d_in, state, bias=False)
        self.C = nn.Linear(state, d_out, bias=False)
        if init == "orthogonal":
            with torch.no_grad():
                self.A.weight.copy_(rho * haar_orthogonal(state))

    # ------------------------------------------------------------------ forward computations

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Sequential scan. x: (B, T, d_in) -> (B, T, d_out)."""
        if x.shape[-1] != self.d_in:
            raise ValueError(f"expected input (..., T, {self.d_in}), got {tuple(x.shape)}")
        u = self.B(x)  # (B, T, N)
        h = torch.zeros(x.shape[0], self.state, dtype=x.dtype, device=x.device)
        hs = []
        for t in range(x.shape[1]):
            h = self.A(h) + u[:, t]
            hs.append(h)
        return self.C(torch.stack(hs, dim=1))

    def kernel(self, n: int) -> torch.Tensor:
        """W(tau) = C A^tau B for tau = 0..n-1: (n, d_out, d_in), in the parameters' dtype."""
        A, B, C = self.A.weight, self.B.weight, self.C.weight
        out, P = [], B
        for _ in range(n):
            out.append(C @ P)
            P = A @ P
        return torch.stack(out)

    def lag_operator(self, tau: int) -> torch.Tensor:
        """C A^tau B (d_out, d_in) by a matrix power (the closed form of dy_i/dx_j, i - j = tau)."""
        A, B, C = self.A.weight, self.B.weight, self.C.weight
        return C @ torch.linalg.matrix_power(A, tau) @ B

    def forward_conv(self, x: torch.Tensor) -> torch.Tensor:
        """Causal convolution with the materialised kernel: y_i = sum_{j <= i} W(i - j) x_j."""
        T = x.shape[1]
        W = self.kernel(T)
        y = x.new_zeros(x.shape[0], T, self.d_out)
        for tau in range(T):  # one shifted matmul per lag, never the (T, T, p, d) block operator
            y[:, tau:] += x[:, : T - tau] @ W[tau].T
        return y

    def forward_fft(self, x: torch.Tensor) -> torch.Tensor:
        """The same convolution through the FFT (zero-padded to 2T, so it is linear, not circular)."""
        T = x.shape[1]
        W = self.kernel(T)  # (T, p, d)
        L = 2 * T
        Wf = torch.fft.rfft(W, n=L, dim=0)  # (L/2+1, p, d)
        xf = torch.fft.rfft(x, n=L, dim=1)  # (B, L/2+1, d)
        return torch.fft.irfft(torch.einsum("fpd,bfd->bfp", Wf, xf), n=L, dim=1)[:, :T]

    # ------------------------------------------------------------------ spectral quantities

    def spectral_radius(self) -> float:
        """rho(A) = max |eigenvalue|, in float64."""
        return float(torch.linalg.eigvals(self.A.weight.detach().double()).abs().max())

    def jacobian_bound(self, tau: int) -> float:
        """Thm 5.1 (1): ||C A^tau B||_2 <= ||C||_2 ||B||_2 ||A||_2^tau, in float64."""
        A, B, C = (m.weight.detach().double() for m in (self.A, self.B, self.C))
        n2 = lambda M: float(torch.linalg.matrix_norm(M, ord=2))
        return n2(C) * n2(B) * n2(A) ** tau
