"""Sessa's feedback solve (I - B) s = f, B[t, j] = gamma_t alpha[t, j] (j < t), from batched matmuls only
(sessa spec §2.2): the "fused" backend, pure torch, written to reach cuBLAS's tensor-core GEMMs on a GPU
instead of walking T row by row (the Triton kernel) or calling a triangular solve (the reference).

Two methods, chosen by ``method=`` (default ``METHOD``); both share the block inverses of blocks.py.

``"inverse"``: M = (I - B)^{-1}, unit lower triangular, by block doubling (blocks.unit_lower_inverse): every
diagonal block of <= ``LEAF`` rows inverted at once by one batched triangular solve in float32, then
log2(T / leaf) levels, each joining all neighbouring pairs of blocks at once,

    [[M11, 0], [-B21, M22]]^{-1} = [[M11^{-1}, 0], [M22^{-1} B21 M11^{-1}, M22^{-1}]],

as two batched matmuls. Then s = M f; backward g = M^T grad_s, dB = g s^T on j < t, and

    grad_f = g ;  grad_alpha = tril((gamma g) s^T, -1) ;  grad_gamma_t = sum_{j<t} alpha[t, j] dB[t, j]
                                                                     = g_t . (tril(alpha, -1) s)_t

(zero on and above the diagonal: those entries of alpha are never read). Saved: M (one T x T per sequence,
as large as alpha) and s.

Work, in multiply-adds per sequence: the doubling costs ~T^3/3 (level with blocks of b rows: T/(2b) pairs
of two b^3 products, summed over b < T), plus T^2 D each for M f, M^T g, g s^T and tril(alpha) s (dense
products, half of them on zeros), against ~T^2 D / 2 for each triangular solve and for dB (1.5 T^2 D in
all): at T = 2048, D = 256 about 3.8x the solves' work, at T = 4096 about 5.6x. It can still win on tensor
cores because it is a few dozen large, fully parallel matmuls, where a triangular solve is a chain of T
dependent row updates (or T / block dependent panel steps) that leaves a GPU's matrix units mostly idle.
Measured on an H200 in bf16, forward + backward at (Nb, T, D) = (16, 2048, 256): reference 6.1 ms, Triton
kernel 4.0 ms, inverse 1.9 ms, sweep 1.8 ms; at (16, 4096, 256): 18.9, 11.8, 4.6 and 2.7 ms. Both are
bound by torch's per-op launch cost there (replayed as a CUDA graph the sweep with 512-row blocks takes
0.8 and 2.0 ms), and neither reaches 20% of the bf16 peak by the benchmark's 3 Nb T^2 D count: the
T x T elementwise passes (masking, dB) alone take ~0.1 ms at T = 2048.

``"sweep"``: blocked forward substitution over row blocks of ``SWEEP_BLOCK`` rows (fused_sweep.py): the
diagonal-block inverses by the same doubling, then per block one panel GEMM against the solved past and
one with the block's inverse; backward the mirrored sweep with the blocks transposed. Work ~2 T^2 D + 5 T b D
(b the block), close to the solves', in 2 (T / b - 1) dependent steps, and nothing T x T saved beside alpha.

Precision and dtypes: the inputs' common dtype is the result's (as in the reference); gradients come back in
each input's own dtype. bfloat16/float16 inputs: the matmuls run in bfloat16 (torch accumulates in
float32 inside them; bfloat16 keeps float32's range for M's entries), the leaf inverses in float32.
float32/float64 inputs: everything in that dtype. Length 0 returns an empty s; any T >= 1 works (blocks
beyond T are padded with zero routing, which leaves the leading T x T of the inverse unchanged). Not twice
differentiable (``once_differentiable``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.autograd.function import once_differentiable

from ..checks import cast, positive_int
from .blocks import LEAF, leaf_plan, routing_grads, unit_lower_inverse, work_dtypes
from .fused_sweep import SWEEP_BLOCK, sweep
from .reference import _common_dtype
from .saved_once import check_attention_solve_args, strict_past_softmax

# the sweep: on an H200 in bf16 it beat the inverse at T = 2048 (1.77 vs 1.86 ms) and T = 4096 (2.71 vs
# 4.56 ms) and saves nothing T x T beside alpha (helper measurement, 2026-11-27; benchmarks/RESULTS.md)
METHOD = "sweep"
METHODS = ("inverse", "sweep")
__all__ = ["METHOD", "METHODS", "feedback_attention_solve", "feedback_solve"]


class _Inverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, f, gamma, alpha, common, leaf):
        mm, inv = work_dtypes(common)
        f_w, gamma_w, alpha_w = (cast(t, mm) for t in (f, gamma, alpha))
        T = f.shape[1]
        b0, levels = leaf_plan(T, leaf)
        pad = (b0 << levels) - T  # zero routing on the padding: M's leading T x T is the inverse we want
        M = unit_lower_inverse(
            F.pad(alpha_w, (0, pad, 0, pad)) if pad else alpha_w,
            F.pad(gamma_w, (0, pad)) if pad else gamma_w,
            levels,
            mm,
            inv,
        )[:, :T, :T]
        s = M @ f_w
        ctx.save_for_backward(M, s, gamma_w, alpha_w)
        ctx.dtypes = (f.dtype, gamma.dtype, alpha.dtype)
        return s.to(common)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_s):
        M, s, gamma_w, alpha_w = ctx.saved_tensors
        g = M.transpose(1, 2) @ grad_s.to(M.dtype)
        return (*routing_grads(ctx.needs_input_grad, ctx.dtypes, g, s, gamma_w, alpha_w), None, None)


def feedback_solve(
    f: torch.Tensor, gamma: torch.Tensor, alpha: torch.Tensor, *, method: str | None = None, block: int | None = None
) -> torch.Tensor:
    """s with (I - B) s = f, B[t, j] = gamma_t alpha[t, j] for j < t (entries j >= t of alpha are ignored and
    get zero gradient). f: (Nb, T, D); gamma: (Nb, T); alpha: (Nb, T, T). Returns s: (Nb, T, D) in the
    inputs' common dtype. ``method``: "inverse" or "sweep" (None: ``METHOD``); ``block``: for "inverse" the
    largest diagonal block inverted by a triangular solve (None: ``LEAF``), for "sweep" the rows per sweep
    step (None: ``SWEEP_BLOCK``)."""
    common = _common_dtype("feedback_solve", f, gamma, alpha)
    method = METHOD if method is None else method
    if method not in METHODS:
        raise ValueError(f"feedback_solve: method must be one of {METHODS}, got {method!r}")
    default = SWEEP_BLOCK if method == "sweep" else LEAF
    block = positive_int("feedback_solve", "block", default if block is None else block)
    if method == "sweep":
        return sweep(f, gamma, alpha, common, block)
    return _Inverse.apply(f, gamma, alpha, common, block)


def feedback_attention_solve(
    f: torch.Tensor, gamma: torch.Tensor, qb: torch.Tensor, kb: torch.Tensor, scale: float
) -> torch.Tensor:
    """What the Sessa mixer calls (``saved_once.feedback_attention_solve``'s signature and checks): alpha by
    the softmax over the strict past (autograd keeps its output), then the solve above. f: (Nb, T, D);
    gamma: (Nb, T); qb, kb: (Nb, T, d) -> s: (Nb, T, D)."""
    check_attention_solve_args(f, gamma, qb, kb)
    return feedback_solve(f, gamma, strict_past_softmax(qb, kb, float(scale)))
