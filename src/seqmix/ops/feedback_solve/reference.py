"""Sessa's feedback solve, pure torch (sessa spec §2.2):

    B_fb[t, j] = gamma_t alpha[t, j]   (j < t; strictly lower, one scalar T x T matrix shared by all features)
    (I - B_fb) s = f    <=>    s_t = f_t + gamma_t sum_{j<t} alpha[t, j] s_j

Two forms: a dense unit-lower-triangular solve (what the Sessa code does; exact autograd) and a blocked
forward substitution (block size ``block``: one GEMM against the solved past plus a small triangular solve
per block), the template for a chunked Triton kernel. The Neumann series is never formed.
The solve runs in at least float32 (spec pitfall (b)) and is cast back to the inputs' common dtype.
"""

from __future__ import annotations

import torch

from ..checks import Signature, cast, positive_int


def _common_dtype(op: str, f, gamma, alpha) -> torch.dtype:
    """f (Nb, T, D), gamma (Nb, T), alpha (Nb, T, T) checked (types, shapes, one device); their common dtype."""
    sig = Signature(op)
    sig.tensor("f", f, "Nb T D")
    sig.tensor("gamma", gamma, "Nb T")
    sig.tensor("alpha", alpha, "Nb T T")
    return sig.common_dtype()


def _checked(op: str, f, gamma, alpha) -> list[torch.Tensor]:
    """f, gamma, alpha checked against their shapes, in their common dtype promoted to at least float32."""
    dtype = torch.promote_types(_common_dtype(op, f, gamma, alpha), torch.float32)
    return [cast(t, dtype) for t in (f, gamma, alpha)]


def routing_matrix(gamma: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    """B_fb = gamma_t alpha[t, j] restricted to j < t. gamma: (Nb, T); alpha: (Nb, T, T) -> (Nb, T, T)."""
    return torch.tril(gamma.unsqueeze(-1) * alpha, diagonal=-1)


def feedback_solve_dense(f: torch.Tensor, gamma: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    """f: (Nb, T, D); gamma: (Nb, T); alpha: (Nb, T, T) (entries j >= t ignored). Returns s: (Nb, T, D)."""
    f32, g32, a32 = _checked("feedback_solve", f, gamma, alpha)
    Bfb = routing_matrix(g32, a32)
    s = torch.linalg.solve_triangular(-Bfb, f32, upper=False, left=True, unitriangular=True)
    return s.to(_result_dtype(f, gamma, alpha))


def feedback_solve_blocked(f: torch.Tensor, gamma: torch.Tensor, alpha: torch.Tensor, block: int = 64) -> torch.Tensor:
    """The same solve by blocked forward substitution: for rows R = [r0, r1),
    rhs_R = f_R + B[R, :r0] s[:r0] and s_R = (I - B[R, R])^{-1} rhs_R."""
    positive_int("feedback_solve_blocked", "block", block)
    f32, g32, a32 = _checked("feedback_solve_blocked", f, gamma, alpha)
    if f.shape[1] == 0:
        return f32.to(_result_dtype(f, gamma, alpha))
    Bfb = routing_matrix(g32, a32)
    T = f.shape[1]
    parts: list[torch.Tensor] = []
    for r0 in range(0, T, block):
        r1 = min(T, r0 + block)
        rhs = f32[:, r0:r1]
        if parts:
            rhs = rhs + Bfb[:, r0:r1, :r0] @ torch.cat(parts, dim=1)
        parts.append(
            torch.linalg.solve_triangular(-Bfb[:, r0:r1, r0:r1], rhs, upper=False, left=True, unitriangular=True)
        )
    return torch.cat(parts, dim=1).to(_result_dtype(f, gamma, alpha))


def _result_dtype(*ts: torch.Tensor) -> torch.dtype:
    """The inputs' common dtype (the solve itself runs in at least float32)."""
    out = ts[0].dtype
    for t in ts[1:]:
        out = torch.promote_types(out, t.dtype)
    return out
