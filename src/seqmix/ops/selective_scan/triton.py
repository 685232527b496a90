"""Selective scan (S6, B2S6) as Triton kernels, with the reference's signature and checks.

Forward (``_forward_kernel``): one program per (batch row, group, block of BD channels of that group), so B_t
and C_t are one length-n vector per program. It walks time in order with the state (BD, n) in registers
(accumulation dtype, re/im pairs), discretisation fused in:
    a_t = exp(Delta_t A),  Bbar_t = Delta_t phi1(Delta_t A) (B_t + B_bias)  (zoh)  or  Delta_t (B_t + B_bias),
    x_t = a_t x_{t-1} + Bbar_t u_t,   y_t = Re sum_n C_t x_t  (+ D u_t, added in torch).
Every ``chunk`` steps it saves the state entering the chunk: (Nb, L/chunk, d, n), never (Nb, L, d, n).
Backward (``_backward_kernel``): chunks from the last; each chunk's states are recomputed from its saved
state into a per-program scratch of chunk + 1 states, then walked in reverse with the adjoint
lambda_t = conj(C_t) gy_t + conj(a_{t+1}) lambda_{t+1} (seeded with the last state's gradient), which gives
    grad u_t = Re sum_n conj(Bbar_t) lambda_t,  grad a_t = conj(x_{t-1}) lambda_t,  grad (Delta A) = conj(a) grad a
    (+ conj(phi1'(Delta A)) conj(B + B_bias) Delta u grad x for zoh), then Delta, A, B, C, B_bias and x0.
Shared gradients are per-program partial sums reduced in torch (no atomics): A and B_bias per batch row,
B and C per channel block.

Everything the reference takes is covered: A, B, C, B_bias real or complex (complex as re/im pairs; a real A
runs the same arithmetic with im = 0, real B/C/B_bias skip their imaginary loads), x0, return_state, G | d.
Accumulation is float32 (float64 for float64 inputs); inputs are read in their (common) dtype. L = 0 runs
the reference (nothing to scan).

Status: parity in Triton's CPU interpreter (tests/ops/test_triton_scan.py) and natively on an H200
(benchmarks/kernels_results_h200_2026-11-27.md), where it runs 15-25x the token-loop reference but at 4-6% of the op's
roofline (its transcendental time). Known costs: the backward's recomputed states go through global memory
(the scratch, chunk + 1 states per program, written and read once per step), and the B/C gradient partials
are (Nb, L, G, blocks, n).
"""

from __future__ import annotations

import math

import torch

from ..triton_support import next_pow2, require_kernel_runtime

require_kernel_runtime("selective_scan")

import triton  # noqa: E402 — only once the runtime is known to run kernels
import triton.language as tl  # noqa: E402

from ..checks import positive_int  # noqa: E402
from . import reference  # noqa: E402
from .triton_math import SMALL_Z2, discretised, load_pair, step_grads  # noqa: E402


@triton.jit
def _tile(pid, p, n, NBLK, BD: tl.constexpr, BN: tl.constexpr):
    """This program's group g, its channels ch (BD,) with their mask, the state indices nn (BN,) with theirs,
    and the (BD, BN) offsets and mask of (channel, n) tensors."""
    g = pid // NBLK
    within = (pid % NBLK) * BD + tl.arange(0, BD)
    cmask = within < p
    ch = g * p + within
    nn = tl.arange(0, BN)
    nmask = nn < n
    return g, ch, cmask, nn, nmask, ch[:, None] * n + nn[None, :], cmask[:, None] & nmask[None, :]


@triton.jit(do_not_specialize=["L", "CH", "n_chunks"])
def _forward_kernel(
    u_ptr, dt_ptr, ar_ptr, ai_ptr, br_ptr, bi_ptr, cr_ptr, ci_ptr, biasr_ptr, biasi_ptr, x0r_ptr, x0i_ptr,
    y_ptr, sr_ptr, si_ptr, fr_ptr, fi_ptr, L, d, n, p, G, NBLK, CH, n_chunks,
    ZOH: tl.constexpr, CPLX_IN: tl.constexpr, ACC_64: tl.constexpr, SMALL: tl.constexpr,
    BD: tl.constexpr, BN: tl.constexpr,
):  # fmt: skip
    acc_t = tl.float64 if ACC_64 else tl.float32
    b = tl.program_id(0).to(tl.int64)
    g, ch, cmask, nn, nmask, dn, m2 = _tile(tl.program_id(1), p, n, NBLK, BD, BN)
    Ar, Ai = load_pair(ar_ptr, ai_ptr, dn, m2, True, acc_t)
    bias_r, bias_i = load_pair(biasr_ptr, biasi_ptr, dn, m2, CPLX_IN, acc_t)
    xr, xi = load_pair(x0r_ptr, x0i_ptr, b * d * n + dn, m2, True, acc_t)
    for c in range(0, n_chunks):
        s_off = (b * n_chunks + c) * d * n + dn
        tl.store(sr_ptr + s_off, xr, mask=m2)
        tl.store(si_ptr + s_off, xi, mask=m2)
        for k in range(0, CH):
            t = c * CH + k
            # steps past L read Delta = u = 0: a = 1, nothing added, the state is kept (masks built as
            # tensors: in the interpreter t is a Python int)
            tc = cmask & (ch * 0 + t < L)
            tn = nmask & (nn * 0 + t < L)
            row = b * L + t
            uu = tl.load(u_ptr + row * d + ch, mask=tc, other=0.0).to(acc_t)
            dl = tl.load(dt_ptr + row * d + ch, mask=tc, other=0.0).to(acc_t)
            Br, Bi = load_pair(br_ptr, bi_ptr, (row * G + g) * n + nn, tn, CPLX_IN, acc_t)
            Cr, Ci = load_pair(cr_ptr, ci_ptr, (row * G + g) * n + nn, tn, CPLX_IN, acc_t)
            _, _, ar, ai, _, _, Pr, Pi, _ = discretised(dl, Ar, Ai, Br[None, :] + bias_r, Bi[None, :] + bias_i,
                                                        ZOH, SMALL)  # fmt: skip
            s = (dl * uu)[:, None]
            xr, xi = ar * xr - ai * xi + s * Pr, ar * xi + ai * xr + s * Pi
            tl.store(y_ptr + row * d + ch, tl.sum(Cr[None, :] * xr - Ci[None, :] * xi, axis=1), mask=tc)
    tl.store(fr_ptr + b * d * n + dn, xr, mask=m2)
    tl.store(fi_ptr + b * d * n + dn, xi, mask=m2)


@triton.jit
def _recompute_chunk(u_ptr, dt_ptr, br_ptr, bi_ptr, xr_ptr, xi_ptr, scr, xr, xi, Ar, Ai, bias_r, bias_i,
                     b, g, ch, cmask, nn, nmask, m2, c, L, d, n, G, CH,
                     ZOH: tl.constexpr, CPLX_IN: tl.constexpr, SMALL: tl.constexpr, acc_t: tl.constexpr):  # fmt: skip
    """Write the chunk's states x_{cCH-1} (the saved one), ..., x_{cCH+CH-1} to the scratch slots 0..CH."""
    tl.store(xr_ptr + scr, xr, mask=m2)
    tl.store(xi_ptr + scr, xi, mask=m2)
    for k in range(0, CH):
        t = c * CH + k
        row = b * L + t
        tc = cmask & (ch * 0 + t < L)
        uu = tl.load(u_ptr + row * d + ch, mask=tc, other=0.0).to(acc_t)
        dl = tl.load(dt_ptr + row * d + ch, mask=tc, other=0.0).to(acc_t)
        Br, Bi = load_pair(br_ptr, bi_ptr, (row * G + g) * n + nn, nmask & (nn * 0 + t < L), CPLX_IN, acc_t)
        _, _, ar, ai, _, _, Pr, Pi, _ = discretised(dl, Ar, Ai, Br[None, :] + bias_r, Bi[None, :] + bias_i,
                                                    ZOH, SMALL)  # fmt: skip
        s = (dl * uu)[:, None]
        xr, xi = ar * xr - ai * xi + s * Pr, ar * xi + ai * xr + s * Pi
        tl.store(xr_ptr + scr + (k + 1) * n, xr, mask=m2)
        tl.store(xi_ptr + scr + (k + 1) * n, xi, mask=m2)


@triton.jit(do_not_specialize=["L", "CH", "n_chunks"])
def _backward_kernel(
    u_ptr, dt_ptr, ar_ptr, ai_ptr, br_ptr, bi_ptr, cr_ptr, ci_ptr, biasr_ptr, biasi_ptr, gy_ptr, gfr_ptr, gfi_ptr,
    sr_ptr, si_ptr, xr_ptr, xi_ptr, gu_ptr, gdt_ptr, gbr_ptr, gbi_ptr, gcr_ptr, gci_ptr, gar_ptr, gai_ptr,
    gbiasr_ptr, gbiasi_ptr, gx0r_ptr, gx0i_ptr, L, d, n, p, G, NBLK, CH, n_chunks,
    ZOH: tl.constexpr, CPLX_IN: tl.constexpr, ACC_64: tl.constexpr, SMALL: tl.constexpr,
    BD: tl.constexpr, BN: tl.constexpr,
):  # fmt: skip
    acc_t = tl.float64 if ACC_64 else tl.float32
    b = tl.program_id(0).to(tl.int64)
    pid = tl.program_id(1)
    g, ch, cmask, nn, nmask, dn, m2 = _tile(pid, p, n, NBLK, BD, BN)
    Ar, Ai = load_pair(ar_ptr, ai_ptr, dn, m2, True, acc_t)
    bias_r, bias_i = load_pair(biasr_ptr, biasi_ptr, dn, m2, CPLX_IN, acc_t)
    lr, li = load_pair(gfr_ptr, gfi_ptr, b * d * n + dn, m2, True, acc_t)  # adjoint dLoss/dx_t, from the end
    g_ar = tl.zeros((BD, BN), dtype=acc_t)
    g_ai = tl.zeros((BD, BN), dtype=acc_t)
    g_bias_r = tl.zeros((BD, BN), dtype=acc_t)
    g_bias_i = tl.zeros((BD, BN), dtype=acc_t)
    scr = (b * d + ch[:, None]) * (CH + 1) * n + nn[None, :]  # this program's scratch: chunk + 1 states
    for cc in range(0, n_chunks):
        c = n_chunks - 1 - cc
        s_off = (b * n_chunks + c) * d * n + dn
        _recompute_chunk(u_ptr, dt_ptr, br_ptr, bi_ptr, xr_ptr, xi_ptr, scr,
                         tl.load(sr_ptr + s_off, mask=m2, other=0.0), tl.load(si_ptr + s_off, mask=m2, other=0.0),
                         Ar, Ai, bias_r, bias_i, b, g, ch, cmask, nn, nmask, m2, c, L, d, n, G, CH,
                         ZOH, CPLX_IN, SMALL, acc_t)  # fmt: skip
        tl.debug_barrier()  # the reverse walk reads these states back, from other threads of this program
        for kk in range(0, CH):
            k = CH - 1 - kk
            t = c * CH + k
            tc = cmask & (ch * 0 + t < L)
            tn = nmask & (nn * 0 + t < L)
            row = b * L + t
            uu = tl.load(u_ptr + row * d + ch, mask=tc, other=0.0).to(acc_t)
            dl = tl.load(dt_ptr + row * d + ch, mask=tc, other=0.0).to(acc_t)
            gy = tl.load(gy_ptr + row * d + ch, mask=tc, other=0.0).to(acc_t)
            Br, Bi = load_pair(br_ptr, bi_ptr, (row * G + g) * n + nn, tn, CPLX_IN, acc_t)
            Cr, Ci = load_pair(cr_ptr, ci_ptr, (row * G + g) * n + nn, tn, CPLX_IN, acc_t)
            binr = Br[None, :] + bias_r
            bini = Bi[None, :] + bias_i
            zr, zi, ar, ai, phr, phi, Pr, Pi, small = discretised(dl, Ar, Ai, binr, bini, ZOH, SMALL)
            x_r = tl.load(xr_ptr + scr + (k + 1) * n, mask=m2, other=0.0)
            x_i = tl.load(xi_ptr + scr + (k + 1) * n, mask=m2, other=0.0)
            xp_r = tl.load(xr_ptr + scr + k * n, mask=m2, other=0.0)
            xp_i = tl.load(xi_ptr + scr + k * n, mask=m2, other=0.0)
            # y_t = Re sum_n C x_t: lambda_t gains conj(C) gy, grad C = conj(x_t) gy
            lr += gy[:, None] * Cr[None, :]
            li -= gy[:, None] * Ci[None, :]
            part = (row * G * NBLK + pid) * n + nn  # this program's share of grad B_t / grad C_t
            tl.store(gcr_ptr + part, tl.sum(gy[:, None] * x_r, axis=0), mask=tn)
            if CPLX_IN:
                tl.store(gci_ptr + part, -tl.sum(gy[:, None] * x_i, axis=0), mask=tn)
            gu, gdl, gzr, gzi, gbin_r, gbin_i = step_grads(lr, li, xp_r, xp_i, uu, dl, zr, zi, ar, ai, phr, phi,
                                                           Pr, Pi, binr, bini, small, ZOH)  # fmt: skip
            tl.store(gu_ptr + row * d + ch, gu, mask=tc)
            gdl += tl.sum(Ar * gzr + Ai * gzi, axis=1)
            tl.store(gdt_ptr + row * d + ch, gdl, mask=tc)
            g_ar += dl[:, None] * gzr
            g_ai += dl[:, None] * gzi
            g_bias_r += gbin_r
            g_bias_i += gbin_i
            tl.store(gbr_ptr + part, tl.sum(gbin_r, axis=0), mask=tn)
            if CPLX_IN:
                tl.store(gbi_ptr + part, tl.sum(gbin_i, axis=0), mask=tn)
            lr, li = ar * lr + ai * li, ar * li - ai * lr  # lambda_{t-1} gets conj(a_t) lambda_t
        tl.debug_barrier()  # the next chunk overwrites the scratch
    out = b * d * n + dn
    tl.store(gar_ptr + out, g_ar, mask=m2)
    tl.store(gai_ptr + out, g_ai, mask=m2)
    tl.store(gbiasr_ptr + out, g_bias_r, mask=m2)
    tl.store(gbiasi_ptr + out, g_bias_i, mask=m2)
    tl.store(gx0r_ptr + out, lr, mask=m2)
    tl.store(gx0i_ptr + out, li, mask=m2)


# (channels per program BD, warps per program) for every launch; None: the rule in ``_launch``. Only
# benchmarks/kernels.py sets it, to time the alternatives on a card.
LAUNCH: tuple[int, int] | None = None


def _launch(p: int, n: int) -> tuple[int, int]:
    """(BD, num_warps): the group's p rounded up to a power of two, at most 32 channels per program (registers
    hold ~25 (BD, n) tiles), and Triton's default 4 warps. One element per thread (16 warps for a 32 x 16
    tile) was tried for occupancy: on an H200 (2026-11-27) it ran forward + backward in 21.7 ms at
    (8, 2048, 1536, 16) where 4 warps ran 13.2 ms on another H200 the day before (not the same run: indicative),
    so 4 stays; ``LAUNCH`` lets
    benchmarks/kernels.py time the alternatives."""
    if LAUNCH is not None:
        return LAUNCH
    return min(next_pow2(p), 32), 4


def _sizes(u, B, chunk):
    Nb, L, d = u.shape
    G, n = B.shape[2], B.shape[3]
    p = d // G
    BD, warps = _launch(p, n)
    return Nb, L, d, G, n, p, -(-p // BD), chunk, -(-L // chunk), BD, warps


class _Scan(torch.autograd.Function):
    """(y without the D u term, last state re, im) of the scan; every input real, complex ones as (re, im).
    u, delta: (Nb, L, d); ar, ai, bias_r, bias_i: (d, n); br, bi, cr, ci: (Nb, L, G, n); x0r, x0i: (Nb, d, n).
    ``cplx_in``: B, C, B_bias have imaginary parts (else bi, ci, bias_i are not read)."""

    @staticmethod
    def forward(ctx, u, delta, ar, ai, br, bi, cr, ci, bias_r, bias_i, x0r, x0i, zoh, cplx_in, chunk):
        ins = [t.contiguous() for t in (u, delta, ar, ai, br, bi, cr, ci, bias_r, bias_i, x0r, x0i)]
        Nb, L, d, G, n, p, NBLK, CH, n_chunks, BD, warps = _sizes(u, br, chunk)
        acc = torch.float64 if u.dtype == torch.float64 else torch.float32
        new = lambda *shape: torch.empty(shape, dtype=acc, device=u.device)
        states, y, last = new(2, Nb, n_chunks, d, n), new(Nb, L, d), new(2, Nb, d, n)  # states entering chunks
        meta = dict(ZOH=zoh, CPLX_IN=cplx_in, ACC_64=acc == torch.float64, SMALL=SMALL_Z2, BD=BD, BN=next_pow2(n))
        meta["num_warps"] = warps
        _forward_kernel[(Nb, G * NBLK)](
            *ins, y, states[0], states[1], last[0], last[1], L, d, n, p, G, NBLK, CH, n_chunks, **meta
        )  # fmt: skip
        ctx.save_for_backward(*ins[:10], states)
        ctx.meta, ctx.sizes, ctx.acc = meta, (Nb, L, d, G, n, p, NBLK, CH, n_chunks), acc
        dt = u.dtype
        return y.to(dt), last[0].to(dt), last[1].to(dt)

    @staticmethod
    def backward(ctx, gy, g_last_r, g_last_i):
        *ins, states = ctx.saved_tensors
        Nb, L, d, G, n, p, NBLK, CH, n_chunks = ctx.sizes
        new = lambda *shape: torch.empty(shape, dtype=ctx.acc, device=gy.device)
        scratch = new(2, Nb, d, CH + 1, n)
        gu, gdt, gb, gc = new(Nb, L, d), new(Nb, L, d), new(2, Nb, L, G, NBLK, n), new(2, Nb, L, G, NBLK, n)
        ga, gbias, gx0 = new(2, Nb, d, n), new(2, Nb, d, n), new(2, Nb, d, n)
        seeds = (t.contiguous() for t in (gy, g_last_r, g_last_i))
        _backward_kernel[(Nb, G * NBLK)](
            *ins, *seeds, states[0], states[1], scratch[0], scratch[1], gu, gdt, gb[0], gb[1], gc[0], gc[1],
            ga[0], ga[1], gbias[0], gbias[1], gx0[0], gx0[1], L, d, n, p, G, NBLK, CH, n_chunks, **ctx.meta,
        )  # fmt: skip
        dt = gy.dtype
        gb, gc, ga, gbias = gb.sum(4).to(dt), gc.sum(4).to(dt), ga.sum(1).to(dt), gbias.sum(1).to(dt)
        return (gu.to(dt), gdt.to(dt), ga[0], ga[1], gb[0], gb[1], gc[0], gc[1], gbias[0], gbias[1],
                gx0[0].to(dt), gx0[1].to(dt), None, None, None)  # fmt: skip


def _pair(t: torch.Tensor | None, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(re, im) of t; zeros for a missing part (or a missing t) shaped like ``like``."""
    if t is None:
        return torch.zeros_like(like), torch.zeros_like(like)
    return (t.real, t.imag) if t.is_complex() else (t, torch.zeros_like(t))


def selective_scan(u, delta, A, B, C, B_bias=None, D=None, disc="zoh", x0=None, chunk=None, return_state=False):
    """As ``reference.selective_scan`` (same shapes, checks, dtype rule and results); ``chunk`` is the
    interval between the states the forward pass keeps for backward (default round(sqrt(L)))."""
    if chunk is not None:
        positive_int("selective_scan", "chunk", chunk)
    if disc not in ("zoh", "euler"):
        raise ValueError(f"disc must be 'zoh' or 'euler', got {disc!r}")
    u, delta, A, B, C, B_bias, D, x0 = reference._checked("selective_scan", u, delta, A, B, C, B_bias, D, x0, True)
    Nb, L, d = u.shape
    if L == 0:  # no steps: nothing for a kernel to do
        return reference.selective_scan(u, delta, A, B, C, B_bias, D, disc, x0, chunk, return_state)
    n = A.shape[-1]
    cplx_in = any(t is not None and t.is_complex() for t in (B, C, B_bias))
    ar, ai = _pair(A.expand(d, n), None)
    (br, bi), (cr, ci) = _pair(B, None), _pair(C, None)
    bias_r, bias_i = _pair(B_bias, ar)
    x0r, x0i = _pair(x0, u.new_empty(Nb, d, n))
    step = chunk if chunk is not None else max(1, int(round(math.sqrt(L))))
    args = (u, delta, ar, ai, br, bi, cr, ci, bias_r, bias_i, x0r, x0i, disc == "zoh", cplx_in, step)
    y, last_r, last_i = _Scan.apply(*args)
    if D is not None:
        y = y + D * u
    if not return_state:
        return y
    cplx = cplx_in or A.is_complex() or (x0 is not None and x0.is_complex())
    return y, (torch.complex(last_r, last_i) if cplx else last_r)
