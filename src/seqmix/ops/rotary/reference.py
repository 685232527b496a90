"""Rotations of 2-d blocks of a head vector (RoPE and accumulated SO(2) rotations), pure torch.

Direction convention (ONE for every rotation variant in seqmix, see the rotations spec §2.2 direction
check): position i carries the angle Theta_i (per block), and q_i, k_i (and v_i when values are rotated)
are rotated FORWARD by R(Theta_i); the attention output at i is rotated back by R(-Theta_i). Hence

    score_ij = q_i^T R(Theta_j - Theta_i) k_j ,   out_i = sum_j alpha_ij R(Theta_j - Theta_i) v_j

so keys and values move the same way along a route. RoPE is Theta_i = i omega; accumulated rotations are
the EXCLUSIVE prefix sum Theta_i = sum_{t<i} psi_t (route j -> i accumulates the steps of positions
j .. i-1). With psi_t = omega the two coincide, so the learned variant (psi = omega + g, g = 0 at init)
equals RoPE at initialisation, and zero steps give NoPE.

Block layouts: ``half`` (block b = coordinates (b, b + d/2), GPT-NeoX, default for the attention family) and
``interleaved`` (block b = (2b, 2b + 1), the Sessa code's RoPE). In block b, R(theta) maps
(x_e, x_o) -> (x_e cos - x_o sin, x_e sin + x_o cos).

Angles are accumulated in float64 and wrapped to (-pi, pi] before cos/sin (rotations spec pitfall 1);
cos/sin are then cast once, so the forward and inverse rotation use bit-identical tensors (pitfall 2).
"""

from __future__ import annotations

import math

import torch

from ..checks import Signature


def rope_frequencies(head_dim: int, base: float = 10000.0) -> torch.Tensor:
    """omega_b = base^(-2b / head_dim), b = 0 .. head_dim // 2 - 1, float64 (an odd head_dim gives its floor;
    ``rotate`` refuses odd head dims, and mixers that never rotate still build this table)."""
    if isinstance(head_dim, bool) or not isinstance(head_dim, int) or head_dim < 1:
        raise ValueError(f"rope_frequencies: head_dim must be a positive integer, got {head_dim!r}")
    return base ** (-torch.arange(0, head_dim // 2, dtype=torch.float64) * 2 / head_dim)


def wrap(theta: torch.Tensor) -> torch.Tensor:
    """Angles reduced to [-pi, pi) (float64 in, float64 out)."""
    return torch.remainder(theta + math.pi, 2 * math.pi) - math.pi


def rope_angles(T: int, omega: torch.Tensor, offset: int = 0) -> torch.Tensor:
    """Theta_i = (offset + i) omega: (T, B) float64, wrapped."""
    if isinstance(T, bool) or not isinstance(T, int) or T < 0:
        raise ValueError(f"rope_angles: T must be a non-negative integer, got {T!r}")
    pos = torch.arange(offset, offset + T, dtype=torch.float64, device=omega.device)
    return wrap(pos[:, None] * omega.to(torch.float64)[None, :])


def accumulate_angles(psi: torch.Tensor, theta0: torch.Tensor | None = None) -> torch.Tensor:
    """Exclusive prefix sum along dim -2: Theta_i = theta0 + sum_{t<i} psi_t. psi: (..., T, B) -> float64,
    wrapped. The sum runs in float64 so that |Theta| ~ T max|psi| keeps ~1e-12 rad accuracy; the autograd
    graph is kept (learned angles need it). theta0: broadcastable to (..., B)."""
    sig = Signature("accumulate_angles")
    sig.tensor("psi", psi, None)
    if psi.dim() < 2:
        raise ValueError(f"accumulate_angles: psi must have shape (..., T, B), got {tuple(psi.shape)}")
    if sig.tensor("theta0", theta0, None) is not None:
        want = psi.shape[:-2] + psi.shape[-1:]
        if _broadcast(theta0.shape, want) != want:
            raise ValueError(
                f"accumulate_angles: theta0 must have shape (..., B) = {tuple(want)} (from psi {tuple(psi.shape)}), "
                f"got {tuple(theta0.shape)}"
            )
    p = psi.to(torch.float64)
    incl = torch.cumsum(p, dim=-2)
    theta = torch.cat((torch.zeros_like(incl[..., :1, :]), incl[..., :-1, :]), dim=-2)  # shift: exclusive
    if theta0 is not None:
        theta = theta + theta0.to(torch.float64).unsqueeze(-2)
    return wrap(theta)


def cos_sin(theta: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of float64 angles, cast once to ``dtype``."""
    return torch.cos(theta).to(dtype), torch.sin(theta).to(dtype)


def rotate(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str = "half", inverse: bool = False
) -> torch.Tensor:
    """R(Theta) x (or R(-Theta) x when ``inverse``). x: (..., T, d) with d even; cos, sin: broadcastable to
    (..., T, d/2). Mixed floating dtypes compute in their common dtype."""
    if layout not in ("half", "interleaved"):
        raise ValueError(f"layout must be 'half' or 'interleaved', got {layout!r}")
    x, cos, sin = _checked_rotation(x, cos, sin)
    if inverse:
        sin = -sin
    if layout == "half":
        B = x.shape[-1] // 2
        x1, x2 = x[..., :B], x[..., B:]
        return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


def _broadcast(shape: torch.Size, target: torch.Size) -> torch.Size | None:
    """The broadcast of ``shape`` with ``target`` (None when they do not broadcast)."""
    try:
        return torch.broadcast_shapes(shape, target)
    except RuntimeError:
        return None


def _checked_rotation(x, cos, sin) -> list[torch.Tensor]:
    """x (..., T, d) with d even, cos and sin of one shape broadcastable to (..., T, d/2); common dtype."""
    sig = Signature("rotate")
    for name, t in (("x", x), ("cos", cos), ("sin", sin)):
        sig.tensor(name, t, None)
    if x.dim() == 0:
        raise ValueError("rotate: x must have shape (..., T, d), got a scalar")
    if x.shape[-1] % 2:
        raise ValueError(f"rotate: x's last dimension (the head dim d) must be even, got {x.shape[-1]}")
    want = x.shape[:-1] + (x.shape[-1] // 2,)
    if _broadcast(cos.shape, want) != want:
        raise ValueError(
            f"rotate: cos must have a shape broadcastable to (..., T, {want[-1]}) = {tuple(want)} "
            f"(x is {tuple(x.shape)}), got {tuple(cos.shape)}"
        )
    if sin.shape != cos.shape:
        raise ValueError(f"rotate: sin must have the shape of cos {tuple(cos.shape)}, got {tuple(sin.shape)}")
    dtype = sig.common_dtype()
    return [t.to(dtype) for t in (x, cos, sin)]
