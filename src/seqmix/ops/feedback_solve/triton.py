"""Sessa's feedback solve (I - B) s = f, B[t, j] = gamma_t alpha[t, j] (j < t), as Triton kernels.

Forward (``_solve_kernel``): one program per (batch row, block of BD features) walks the row tiles of
BT rows in order (blocked forward substitution, the reference's ``feedback_solve_blocked``):
    rhs_R = f_R + sum_{C < R} B[R, C] s_C      (tl.dot per earlier tile, B read from alpha on the fly)
    s_R   = (I - B[R, R])^{-1} rhs_R           (forward substitution row by row inside the tile)
Backward: g = (I - B)^{-T} grad_s by the mirrored backward substitution over tiles from the last
(``_transposed_solve_kernel``); then dL/dB = g s^T on j < t, so
    grad_alpha[t, j] = gamma_t (g_t . s_j)  (j < t, else 0),   grad_gamma_t = sum_{j<t} alpha[t, j] (g_t . s_j)
tile by tile (``_routing_grad_kernel``). grad_f = g.

B is never materialised: every tile of it is gamma * alpha computed in registers, so the only T x T
tensors are alpha (the attention weights the caller already holds) and, in backward, grad_alpha.
Accumulation is float32 (float64 for float64 inputs); bf16/fp16/fp32/fp64 inputs of any mix are read in
place and the result has their common dtype, as in the reference. The solution is kept in the
accumulation dtype between the forward and backward passes.
"""

from __future__ import annotations

import torch

from ..triton_support import require_kernel_runtime, tuned

require_kernel_runtime("feedback_solve")

import triton  # noqa: E402 — only once the runtime is known to run kernels
import triton.language as tl  # noqa: E402

from ..checks import Signature  # noqa: E402

_CONFIGS = tuned(
    [
        triton.Config({"BT": 16, "BD": 32}, num_warps=2),
        triton.Config({"BT": 32, "BD": 32}, num_warps=4),
        triton.Config({"BT": 32, "BD": 64}, num_warps=4),
        triton.Config({"BT": 64, "BD": 64}, num_warps=8),
    ]
)


@triton.autotune(configs=_CONFIGS, key=["D", "ACC_64"])
@triton.jit(do_not_specialize=["T", "sf_b", "sg_b", "sa_b", "sa_t", "ss_b"])
def _solve_kernel(
    f_ptr, g_ptr, a_ptr, s_ptr, T, D,
    sf_b, sf_t, sf_d, sg_b, sg_t, sa_b, sa_t, sa_j, ss_b, ss_t, ss_d,
    ACC_64: tl.constexpr, PREC: tl.constexpr, BT: tl.constexpr, BD: tl.constexpr,
):  # fmt: skip
    acc_t = tl.float64 if ACC_64 else tl.float32
    b = tl.program_id(0).to(tl.int64)
    dcol = tl.program_id(1) * BD + tl.arange(0, BD)
    dmask = dcol < D
    rows = tl.arange(0, BT)
    for r0 in range(0, T, BT):
        ri = r0 + rows
        rmask = ri < T
        acc = tl.load(f_ptr + b * sf_b + ri[:, None] * sf_t + dcol[None, :] * sf_d,
                      mask=rmask[:, None] & dmask[None, :], other=0.0).to(acc_t)  # fmt: skip
        gam = tl.load(g_ptr + b * sg_b + ri * sg_t, mask=rmask, other=0.0).to(acc_t)
        for c0 in range(0, r0, BT):  # earlier tiles: every entry is strictly below the diagonal
            cj = c0 + rows
            a = tl.load(a_ptr + b * sa_b + ri[:, None] * sa_t + cj[None, :] * sa_j, mask=rmask[:, None], other=0.0)
            s_c = tl.load(s_ptr + b * ss_b + cj[:, None] * ss_t + dcol[None, :] * ss_d, mask=dmask[None, :], other=0.0)
            acc += tl.dot(gam[:, None] * a.to(acc_t), s_c, input_precision=PREC, out_dtype=acc_t)
        cj = r0 + rows
        strict = (cj[None, :] < ri[:, None]) & rmask[:, None]
        a = tl.load(a_ptr + b * sa_b + ri[:, None] * sa_t + cj[None, :] * sa_j, mask=strict, other=0.0)
        b_diag = gam[:, None] * a.to(acc_t)
        sol = tl.zeros((BT, BD), dtype=acc_t)
        for i in range(0, BT):  # s_i = rhs_i + sum_{j<i} B_ij s_j, rows of unsolved tiles still zero
            sel = (rows == i)[:, None]
            b_row = tl.sum(tl.where(sel, b_diag, 0.0), axis=0)
            s_i = tl.sum(tl.where(sel, acc, 0.0), axis=0) + tl.sum(b_row[:, None] * sol, axis=0)
            sol = tl.where(sel, s_i[None, :], sol)
        tl.store(
            s_ptr + b * ss_b + ri[:, None] * ss_t + dcol[None, :] * ss_d, sol, mask=rmask[:, None] & dmask[None, :]
        )
        tl.debug_barrier()  # the next tiles read these rows back, from other threads of this program


@triton.autotune(configs=_CONFIGS, key=["D", "ACC_64"])
@triton.jit(do_not_specialize=["T", "sgs_b", "sg_b", "sa_b", "sa_t", "sx_b"])
def _transposed_solve_kernel(
    gs_ptr, g_ptr, a_ptr, x_ptr, T, D,
    sgs_b, sgs_t, sgs_d, sg_b, sg_t, sa_b, sa_t, sa_j, sx_b, sx_t, sx_d,
    ACC_64: tl.constexpr, PREC: tl.constexpr, BT: tl.constexpr, BD: tl.constexpr,
):  # fmt: skip
    """x = (I - B)^{-T} grad_s: x_t = grad_s_t + sum_{i>t} B[i, t] x_i, tiles from the last."""
    acc_t = tl.float64 if ACC_64 else tl.float32
    b = tl.program_id(0).to(tl.int64)
    dcol = tl.program_id(1) * BD + tl.arange(0, BD)
    dmask = dcol < D
    rows = tl.arange(0, BT)
    n_tiles = tl.cdiv(T, BT)
    for tt in range(0, n_tiles):
        r0 = (n_tiles - 1 - tt) * BT
        ri = r0 + rows
        rmask = ri < T
        acc = tl.load(gs_ptr + b * sgs_b + ri[:, None] * sgs_t + dcol[None, :] * sgs_d,
                      mask=rmask[:, None] & dmask[None, :], other=0.0).to(acc_t)  # fmt: skip
        for c0 in range(r0 + BT, T, BT):  # later tiles: bt[r, c] = B[c, r] = gamma_c alpha[c, r]
            cj = c0 + rows
            cmask = cj < T
            gam_c = tl.load(g_ptr + b * sg_b + cj * sg_t, mask=cmask, other=0.0).to(acc_t)
            a = tl.load(a_ptr + b * sa_b + cj[None, :] * sa_t + ri[:, None] * sa_j, mask=cmask[None, :], other=0.0)
            x_c = tl.load(x_ptr + b * sx_b + cj[:, None] * sx_t + dcol[None, :] * sx_d,
                          mask=cmask[:, None] & dmask[None, :], other=0.0)  # fmt: skip
            acc += tl.dot(a.to(acc_t) * gam_c[None, :], x_c, input_precision=PREC, out_dtype=acc_t)
        cj = r0 + rows
        cmask = cj < T
        gam_c = tl.load(g_ptr + b * sg_b + cj * sg_t, mask=cmask, other=0.0).to(acc_t)
        strict = (cj[None, :] > ri[:, None]) & cmask[None, :]
        a = tl.load(a_ptr + b * sa_b + cj[None, :] * sa_t + ri[:, None] * sa_j, mask=strict, other=0.0)
        bt_diag = a.to(acc_t) * gam_c[None, :]
        sol = tl.zeros((BT, BD), dtype=acc_t)
        for ii in range(0, BT):  # backward substitution inside the tile
            sel = (rows == BT - 1 - ii)[:, None]
            b_row = tl.sum(tl.where(sel, bt_diag, 0.0), axis=0)
            x_i = tl.sum(tl.where(sel, acc, 0.0), axis=0) + tl.sum(b_row[:, None] * sol, axis=0)
            sol = tl.where(sel, x_i[None, :], sol)
        tl.store(
            x_ptr + b * sx_b + ri[:, None] * sx_t + dcol[None, :] * sx_d, sol, mask=rmask[:, None] & dmask[None, :]
        )
        tl.debug_barrier()


@triton.autotune(configs=_CONFIGS, key=["D", "ACC_64"])
@triton.jit(do_not_specialize=["T", "sx_b", "ss_b", "sg_b", "sa_b", "sa_t", "sda_b", "sda_t"])
def _routing_grad_kernel(
    x_ptr, s_ptr, g_ptr, a_ptr, da_ptr, dg_ptr, T, D,
    sx_b, sx_t, sx_d, ss_b, ss_t, ss_d, sg_b, sg_t, sa_b, sa_t, sa_j, sda_b, sda_t, sda_j,
    ACC_64: tl.constexpr, PREC: tl.constexpr, BT: tl.constexpr, BD: tl.constexpr,
):  # fmt: skip
    """Per row tile R: G = x_R s^T (over D), grad_alpha[R] = gamma_R G on j < t, grad_gamma_R = rowsum(alpha G)."""
    acc_t = tl.float64 if ACC_64 else tl.float32
    b = tl.program_id(0).to(tl.int64)
    r0 = tl.program_id(1) * BT
    rows = tl.arange(0, BT)
    ri = r0 + rows
    rmask = ri < T
    gam = tl.load(g_ptr + b * sg_b + ri * sg_t, mask=rmask, other=0.0).to(acc_t)
    dgam = tl.zeros((BT,), dtype=acc_t)
    for c0 in range(0, r0 + BT, BT):  # tiles holding some j < t
        cj = c0 + rows
        gm = tl.zeros((BT, BT), dtype=acc_t)
        for d0 in range(0, D, BD):
            dcol = d0 + tl.arange(0, BD)
            dmask = dcol < D
            x_r = tl.load(x_ptr + b * sx_b + ri[:, None] * sx_t + dcol[None, :] * sx_d,
                          mask=rmask[:, None] & dmask[None, :], other=0.0)  # fmt: skip
            s_c = tl.load(s_ptr + b * ss_b + cj[None, :] * ss_t + dcol[:, None] * ss_d,
                          mask=(cj[None, :] < T) & dmask[:, None], other=0.0)  # fmt: skip
            gm += tl.dot(x_r, s_c, input_precision=PREC, out_dtype=acc_t)
        strict = (cj[None, :] < ri[:, None]) & rmask[:, None]
        a = tl.load(a_ptr + b * sa_b + ri[:, None] * sa_t + cj[None, :] * sa_j, mask=strict, other=0.0).to(acc_t)
        dgam += tl.sum(a * gm, axis=1)
        da = tl.where(strict, gam[:, None] * gm, 0.0)
        tl.store(da_ptr + b * sda_b + ri[:, None] * sda_t + cj[None, :] * sda_j, da.to(da_ptr.dtype.element_ty),
                 mask=rmask[:, None] & (cj[None, :] < T))  # fmt: skip
    for c0 in range(r0 + BT, T, BT):  # tiles wholly above the diagonal: B ignores alpha there
        cj = c0 + rows
        zero = tl.zeros((BT, BT), dtype=da_ptr.dtype.element_ty)
        tl.store(da_ptr + b * sda_b + ri[:, None] * sda_t + cj[None, :] * sda_j, zero,
                 mask=rmask[:, None] & (cj[None, :] < T))  # fmt: skip
    tl.store(dg_ptr + b * T + ri, dgam, mask=rmask)


def _grid(Nb: int, D: int):
    return lambda meta: (Nb, triton.cdiv(D, meta["BD"]))


def _dot_precision(dtype: torch.dtype) -> str:
    """Full-precision products for fp32/fp64 problems; TF32 suffices for bf16/fp16 inputs."""
    return "ieee" if dtype in (torch.float32, torch.float64) else "tf32"


class _FeedbackSolve(torch.autograd.Function):
    @staticmethod
    def forward(ctx, f, gamma, alpha):
        sig = Signature("feedback_solve")
        sig.tensor("f", f, "Nb T D")
        sig.tensor("gamma", gamma, "Nb T")
        sig.tensor("alpha", alpha, "Nb T T")
        out_dtype = sig.common_dtype()
        acc = torch.float64 if out_dtype == torch.float64 else torch.float32
        Nb, T, D = f.shape
        s = torch.empty((Nb, T, D), dtype=acc, device=f.device)
        ctx.acc, ctx.prec = acc, _dot_precision(out_dtype)
        if s.numel():
            _solve_kernel[_grid(Nb, D)](
                f, gamma, alpha, s, T, D, *f.stride(), *gamma.stride(), *alpha.stride(), *s.stride(),
                ACC_64=acc == torch.float64, PREC=ctx.prec,
            )  # fmt: skip
        ctx.save_for_backward(gamma, alpha, s)
        ctx.f_dtype = f.dtype
        return s.to(out_dtype)

    @staticmethod
    def backward(ctx, grad_s):
        gamma, alpha, s = ctx.saved_tensors
        Nb, T, D = s.shape
        x = torch.empty_like(s)  # (I - B)^{-T} grad_s
        if x.numel():
            _transposed_solve_kernel[_grid(Nb, D)](
                grad_s, gamma, alpha, x, T, D, *grad_s.stride(), *gamma.stride(), *alpha.stride(), *x.stride(),
                ACC_64=ctx.acc == torch.float64, PREC=ctx.prec,
            )  # fmt: skip
        grad_gamma = grad_alpha = None
        if ctx.needs_input_grad[1] or ctx.needs_input_grad[2]:
            grad_alpha = torch.empty_like(alpha, memory_format=torch.contiguous_format)
            dgam = torch.zeros((Nb, T), dtype=ctx.acc, device=s.device)
            if x.numel():
                _routing_grad_kernel[lambda meta: (Nb, triton.cdiv(T, meta["BT"]))](
                    x, s, gamma, alpha, grad_alpha, dgam, T, D, *x.stride(), *s.stride(), *gamma.stride(),
                    *alpha.stride(), *grad_alpha.stride(), ACC_64=ctx.acc == torch.float64, PREC=ctx.prec,
                )  # fmt: skip
            elif grad_alpha.numel():
                grad_alpha.zero_()
            grad_gamma = dgam.to(gamma.dtype)
        return x.to(ctx.f_dtype), grad_gamma, grad_alpha


def feedback_solve(f: torch.Tensor, gamma: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    """s with (I - gamma alpha_strict) s = f, as ``reference.feedback_solve_dense``.
    f: (Nb, T, D); gamma: (Nb, T); alpha: (Nb, T, T) (entries j >= t ignored) -> s: (Nb, T, D)."""
    return _FeedbackSolve.apply(f, gamma, alpha)


def feedback_attention_solve(
    f: torch.Tensor, gamma: torch.Tensor, qb: torch.Tensor, kb: torch.Tensor, scale: float
) -> torch.Tensor:
    """What the Sessa mixer calls (``saved_once.feedback_attention_solve``'s signature) on CUDA: alpha by the
    torch softmax over the strict past, the solve by the kernel above. Autograd keeps the softmax output for
    its backward and the kernel keeps alpha: two T x T per sequence (plus a bool mask), never B itself.
    f: (Nb, T, D); gamma: (Nb, T); qb, kb: (Nb, T, d) -> s: (Nb, T, D)."""
    from .saved_once import check_attention_solve_args, strict_past_softmax

    check_attention_solve_args(f, gamma, qb, kb)
    return _FeedbackSolve.apply(f, gamma, strict_past_softmax(qb, kb, float(scale)))
