"""Causal softmax attention with accumulated SO(2) rotations and an optional ALiBi bias, pure torch: the
one op behind the attention family's rotation variants (RoPE, random or learned accumulated rotations,
on q/k or q/k/v) and ALiBi. Conventions are those of seqmix.ops.rotary and the attention mixer:

    Theta_i   = sum_{t<i} psi_t            exclusive prefix sum of the angle steps, float64, wrapped
    q_i, k_i <- R(Theta_i) q_i, R(Theta_i) k_i          (block layout ``half`` or ``interleaved``)
    v_j      <- R(Theta^v_j) v_j           only with value steps psi_v (the value post-rotation below)
    logit_ij  = scale q_i . k_j - m_h (i - j)           ALiBi only with slopes m (H,); j <= i
    out_i     = R(-Theta^v_i) sum_{j<=i} softmax_j(logit_ij) v_j

so score_ij = q_i^T R(Theta_j - Theta_i) k_j and the value transported is R(Theta^v_j - Theta^v_i) v_j.
RoPE is constant steps psi_t = omega (``rope_steps``): Theta_i = i omega. psi = None: no rotation (NoPE).
This reference forms the T x T logits; the Triton kernel (triton.py) never does.
"""

from __future__ import annotations

import torch

from ..checks import Signature
from ..rotary.reference import accumulate_angles, cos_sin, rotate


def rope_steps(T: int, omega: torch.Tensor) -> torch.Tensor:
    """Constant angle steps psi_t = omega: (1, 1, T, B) float64 (accumulated, they give RoPE's i omega)."""
    return omega.to(torch.float64).expand(1, 1, T, omega.shape[-1])


def checked(op: str, q, k, v, psi, psi_v, slopes, layout: str) -> list:
    """q, k, v (Nb, H, T, d) in their common dtype; psi/psi_v (Nb or 1, H or 1, T, d/2); slopes (H,)."""
    if layout not in ("half", "interleaved"):
        raise ValueError(f"{op}: layout must be 'half' or 'interleaved', got {layout!r}")
    sig = Signature(op)
    for name, t in (("q", q), ("k", k), ("v", v)):
        sig.tensor(name, t, "Nb H T d")
    dtype = sig.common_dtype()
    Nb, H, T, d = q.shape
    if (psi is not None or psi_v is not None) and d % 2:
        raise ValueError(f"{op}: the head dim d must be even to rotate, got {d}")
    for name, t in (("psi", psi), ("psi_v", psi_v)):
        if t is None:
            continue
        Signature(op).tensor(name, t, None)
        ok = t.dim() == 4 and t.shape[0] in (1, Nb) and t.shape[1] in (1, H) and tuple(t.shape[2:]) == (T, d // 2)
        if not ok:
            raise ValueError(
                f"{op}: {name} must have shape (Nb or 1, H or 1, T, d/2) = ({Nb} or 1, {H} or 1, {T}, {d // 2}), "
                f"got {tuple(t.shape)}"
            )
    if slopes is not None:
        Signature(op).tensor("slopes", slopes, "H")
        if slopes.shape != (H,):
            raise ValueError(f"{op}: slopes must have shape (H,) = ({H},), got {tuple(slopes.shape)}")
    return [t.to(dtype) for t in (q, k, v)]


def rotation_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    psi: torch.Tensor | None = None,
    psi_v: torch.Tensor | None = None,
    slopes: torch.Tensor | None = None,
    scale: float | None = None,
    layout: str = "half",
) -> torch.Tensor:
    """q, k, v: (Nb, H, T, d); psi, psi_v: angle steps (Nb or 1, H or 1, T, d/2) or None; slopes: ALiBi
    m_h (H,) or None (a constant: no gradient); scale: default d^-1/2. Returns (Nb, H, T, d) in the common
    dtype of q, k, v, which every step here computes in (as the attention mixer does)."""
    q, k, v = checked("rotation_attention", q, k, v, psi, psi_v, slopes, layout)
    T, d = q.shape[-2:]
    if T == 0:
        return v.clone()
    if psi is not None:
        cos, sin = cos_sin(accumulate_angles(psi), q.dtype)
        q, k = rotate(q, cos, sin, layout), rotate(k, cos, sin, layout)
    if psi_v is not None:
        cos_v, sin_v = cos_sin(accumulate_angles(psi_v), q.dtype)
        v = rotate(v, cos_v, sin_v, layout)
    logits = (q @ k.transpose(-1, -2)) * (d**-0.5 if scale is None else scale)
    i = torch.arange(T, device=q.device)
    if slopes is not None:
        dist = (i[:, None] - i[None, :]).to(q.dtype)
        logits = logits - slopes.detach().to(q.dtype)[:, None, None] * dist
    logits = logits.masked_fill(i[None, :] > i[:, None], float("-inf"))
    out = torch.softmax(logits, dim=-1) @ v
    if psi_v is not None:
        out = rotate(out, cos_v, sin_v, layout, inverse=True)
    return out
