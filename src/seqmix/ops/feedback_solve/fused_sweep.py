"""The fused feedback solve's "sweep" method (fused.py's docstring compares it with "inverse"): blocked
forward substitution with precomputed diagonal-block inverses, a panel GEMM against the solved past per block.

Row blocks R = [r0, r0 + b); D_R = (I - B_RR)^{-1} for all blocks at once (block doubling,
blocks.unit_lower_inverse) and E_R = D_R diag(gamma_R). Forward, blocks in order (two GEMMs each):

    p_R = alpha[R, :r0] s[:r0]        (the panel against the solved past)
    s_R = D_R f_R + E_R p_R           (D f for all blocks at once, before the sweep)

Backward, g = (I - B)^{-T} grad_s by the mirrored sweep from the last block, carrying h = gamma g:

    y_Q = grad_Q + alpha[r1:, Q]^T h[r1:]   (r1 the end of block Q)
    h_Q = E_Q^T y_Q                         (= gamma_Q g_Q, since g_Q = D_Q^T y_Q)

then g = D^T y for all blocks at once and the routing gradients of blocks.routing_grads, which take the
panels p (completed by the diagonal blocks' strictly lower part) as sum_{j<t} alpha[t, j] s_j. Saved: the
diagonal-block inverses (T b per sequence), s and p: no T x T beyond alpha. Work ~2 T^2 D + 5 T b D
multiply-adds per sequence (the sweeps T^2 D / 2 each, g s^T T^2 D), close to the solves' 1.5 T^2 D, in
2 (T / b - 1) dependent steps of two GEMMs.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.autograd.function import once_differentiable

from ..checks import cast
from .blocks import LEAF, leaf_plan, routing_grads, square_blocks, unit_lower_inverse, work_dtypes

SWEEP_BLOCK = 1024  # rows per step: on an H200 at T = 2048 and 4096, fewer steps beat the T b^2 / 3 of the inverses


class _Sweep(torch.autograd.Function):
    @staticmethod
    def forward(ctx, f, gamma, alpha, common, block):
        mm, inv = work_dtypes(common)
        f_w, gamma_w, alpha_w = (cast(t, mm) for t in (f, gamma, alpha))
        T = f.shape[1]
        b0, levels = leaf_plan(min(T, block), LEAF)  # one block when T fits in one
        b = b0 << levels
        nb = -(-T // b)
        pad = nb * b - T  # zero rows of routing and of f: the padded solution's first T rows are s
        a_p = F.pad(alpha_w, (0, pad, 0, pad)) if pad else alpha_w
        g_p = F.pad(gamma_w, (0, pad)) if pad else gamma_w
        a_diag = square_blocks(a_p, b, b)
        d_inv = unit_lower_inverse(a_diag, g_p.unflatten(1, (nb, b)), levels, mm, inv)  # (Nb, nb, b, b)
        e = d_inv * g_p.unflatten(1, (nb, 1, b))
        f_p = F.pad(f_w, (0, 0, 0, pad)) if pad else f_w
        s = (d_inv @ f_p.unflatten(1, (nb, b))).flatten(1, 2)
        past = torch.zeros_like(s)  # the first block has no past
        for r0 in range(b, nb * b, b):
            torch.bmm(a_p[:, r0 : r0 + b, :r0], s[:, :r0], out=past[:, r0 : r0 + b])
            s[:, r0 : r0 + b].baddbmm_(e[:, r0 // b], past[:, r0 : r0 + b])
        if ctx.needs_input_grad[1]:  # grad_gamma reads all of sum_{j<t} alpha s_j: add each block's own part
            past += (torch.tril(a_diag, -1) @ s.unflatten(1, (nb, b))).flatten(1, 2)
        ctx.save_for_backward(d_inv, e, s, past, gamma_w, a_p)
        ctx.dtypes = (f.dtype, gamma.dtype, alpha.dtype)
        return s[:, :T].to(common)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_s):
        d_inv, e, s, past, gamma_w, a_p = ctx.saved_tensors
        Nb, nb, b, _ = d_inv.shape
        T = gamma_w.shape[1]
        y = s.new_zeros(s.shape)
        y[:, :T] = grad_s
        h = torch.empty_like(y)
        last = (nb - 1) * b
        if nb > 1:  # h of the last block feeds the steps below it
            torch.bmm(e[:, -1].transpose(1, 2), y[:, last:], out=h[:, last:])
        for r1 in range(last, 0, -b):
            y[:, r1 - b : r1].baddbmm_(a_p[:, r1:, r1 - b : r1].transpose(1, 2), h[:, r1:])
            if r1 > b:  # h of the first block is never read by a later step
                torch.bmm(e[:, r1 // b - 1].transpose(1, 2), y[:, r1 - b : r1], out=h[:, r1 - b : r1])
        g = (d_inv.transpose(-1, -2) @ y.unflatten(1, (nb, b))).flatten(1, 2)[:, :T]
        alpha_w, past = a_p[:, :T, :T], past[:, :T]
        grads = routing_grads(ctx.needs_input_grad, ctx.dtypes, g, s[:, :T], gamma_w, alpha_w, past)
        return (*grads, None, None)


def sweep(f: torch.Tensor, gamma: torch.Tensor, alpha: torch.Tensor, common: torch.dtype, block: int) -> torch.Tensor:
    """s = (I - B)^{-1} f by the sweep. f: (Nb, T, D); gamma: (Nb, T); alpha: (Nb, T, T), already checked by
    the caller (fused.feedback_solve), ``common`` their common dtype (the result's); ``block`` rows per step."""
    return _Sweep.apply(f, gamma, alpha, common, block)
