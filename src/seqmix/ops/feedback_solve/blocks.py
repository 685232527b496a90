"""Block pieces shared by the fused feedback solve's two methods (fused.py, fused_sweep.py): square-block views,
the unit-lower-triangular inverse by block doubling, and the routing gradients.

Notation as in reference.py: B[t, j] = gamma_t alpha[t, j] for j < t, and the inverse is that of I - B.
"""

from __future__ import annotations

import torch

LEAF = 64  # largest diagonal block inverted by a triangular solve; above it the doubling's matmuls take over
_ALIGN = 8  # leaf rows rounded up to a multiple of this once there are levels: block offsets stay 16-byte aligned
_LOW = (torch.bfloat16, torch.float16)


def work_dtypes(common: torch.dtype) -> tuple[torch.dtype, torch.dtype]:
    """(matmul dtype, leaf-inverse dtype) for the inputs' common dtype: 16-bit inputs multiply in bfloat16
    (float32's range, float32 accumulation inside the GEMM) and invert leaves in float32; float32 and
    float64 inputs do everything in their own dtype."""
    return (torch.bfloat16, torch.float32) if common in _LOW else (common, common)


def leaf_plan(n: int, leaf: int) -> tuple[int, int]:
    """(b0, levels) with b0 * 2**levels >= n rows, b0 <= leaf (up to alignment) and as few levels as that
    allows, so the padding is under 2**levels * _ALIGN rows (n = 600, leaf 64: 40 * 2**4 = 640)."""
    levels = 0
    while leaf << levels < n:
        levels += 1
    if levels == 0:
        return max(n, 1), 0
    b0 = -(-n // (1 << levels))
    return -(-b0 // _ALIGN) * _ALIGN, levels


def square_blocks(x: torch.Tensor, size: int, step: int, row: int = 0, col: int = 0) -> torch.Tensor:
    """The size x size blocks of x (..., n, n) with corners (row + k step, col + k step), k < n // step, as a
    view (..., n // step, size, size): writing into it writes into x."""
    *lead, n, _ = x.shape
    sr, sc = x.stride(-2), x.stride(-1)
    shape, strides = (*lead, n // step, size, size), (*x.stride()[:-2], step * (sr + sc), sr, sc)
    return x.as_strided(shape, strides, x.storage_offset() + row * sr + col * sc)


def unit_lower_inverse(
    alpha: torch.Tensor, gamma: torch.Tensor, levels: int, mm: torch.dtype, inv: torch.dtype
) -> torch.Tensor:
    """(I - B)^{-1} with B = tril(gamma alpha, -1), by block doubling. alpha: (..., n, n), entries on and
    above the diagonal never read; gamma: (..., n); n = b0 * 2**levels. Returns (..., n, n) in ``mm``.

    Leaves: all n / b0 diagonal blocks at once by one batched triangular solve in ``inv``. Level with blocks
    of b rows: all n / (2 b) pairs at once, M21 = M22 (gamma alpha)_21 M11 (two batched matmuls in ``mm``),
    written into the one n x n buffer through strided views (zero above the diagonal, as M is)."""
    *lead, n = gamma.shape
    M = torch.zeros((*lead, n, n), dtype=mm, device=gamma.device)
    if n == 0:
        return M
    b = n >> levels
    # the solve reads the strict lower triangle only (unitriangular): the upper entries of alpha never enter
    neg_b = square_blocks(alpha, b, b).to(inv) * gamma.unflatten(-1, (n // b, b)).to(inv).unsqueeze(-1).neg()
    eye = torch.eye(b, dtype=inv, device=gamma.device).expand_as(neg_b).contiguous()  # broadcast: 40x slower on CPU
    square_blocks(M, b, b).copy_(torch.linalg.solve_triangular(neg_b, eye, upper=False, unitriangular=True))
    for _ in range(levels):
        lower_gamma = gamma.unflatten(-1, (n // (2 * b), 2 * b))[..., b:, None]  # rows of the pairs' lower halves
        b21 = (square_blocks(alpha, b, 2 * b, row=b) * lower_gamma).to(mm)
        m11, m22 = square_blocks(M, b, 2 * b), square_blocks(M, b, 2 * b, b, b)
        square_blocks(M, b, 2 * b, row=b).copy_((m22 @ b21) @ m11)
        b *= 2
    return M


def routing_grads(needs, dtypes, g, s, gamma, alpha, past=None):
    """(grad_f, grad_gamma, grad_alpha), each in its input's dtype or None where ``needs`` says no.
    g = (I - B)^{-T} grad_s and s: (Nb, T, D); gamma: (Nb, T); alpha: (Nb, T, T), all in the matmul dtype;
    ``past`` (Nb, T, D): sum_{j<t} alpha[t, j] s_j where the caller has it (None: one masked copy of alpha
    and a matmul here). dL/dB = g s^T on j < t, so

        grad_alpha = tril((gamma g) s^T, -1)      (scaling g, not the T x T product: one T x T pass fewer)
        grad_gamma_t = sum_{j<t} alpha[t, j] (g_t . s_j) = g_t . past_t

    which leaves one GEMM and one tril_ as the only T x T work besides the masked copy."""
    grads = [g if needs[0] else None, None, None]
    if needs[1]:
        if past is None:
            past = torch.tril(alpha, -1) @ s
        acc = torch.promote_types(g.dtype, torch.float32)  # 16-bit products summed over D in float32
        grads[1] = (g.to(acc) * past.to(acc)).sum(-1)
    if needs[2]:
        grads[2] = ((g * gamma.unsqueeze(-1)) @ s.transpose(1, 2)).tril_(-1)
    return [None if x is None else x.to(dt) for x, dt in zip(grads, dtypes, strict=True)]
