"""Selective scan (S6, B2S6) as Triton kernels, with the reference's signature and checks.

Forward (``_forward_kernel``): one program per (batch row, group, block of BD channels of that group), so B_t
and C_t are one length-n vector per program. It walks time in order with the state (BD, n) in registers
(accumulation dtype, re/im pairs), discretisation fused in:
    a_t = exp(Delta_t A),  Bbar_t = Delta_t phi1(Delta_t A) (B_t + B_bias)  (zoh)  or  Delta_t (B_t + B_bias),
    x_t = a_t x_{t-1} + Bbar_t u_t,   y_t = sum_n C_t x_t  (+ D u_t, added in torch).
Every ``chunk`` steps it saves the state entering the chunk: (Nb, L/chunk, d, n), never (Nb, L, d, n).
Backward (``_backward_kernel``): chunks from the last; each chunk's states are recomputed from its saved
state into a per-program scratch of chunk + 1 states, then walked in reverse with the adjoint
lambda_t = gy_t C_t + conj(a_{t+1}) lambda_{t+1}, which gives per step
    grad u_t = Re sum_n conj(Bbar_t) lambda_t,  grad a_t = conj(x_{t-1}) lambda_t,  grad (Delta A) = conj(a) grad a
    (+ conj(phi1'(Delta A)) Delta (B + B_bias) grad Bbar for zoh), and from them Delta, A, B, C, B_bias.
Shared gradients are per-program partial sums reduced in torch (no atomics): A and B_bias per batch row,
B and C per channel block.

A is real or complex (carried as re/im pairs; a real A runs the same arithmetic with im = 0). Not covered
(the call warns and runs the reference, or raises ``KernelFallbackError`` under strict kernels): complex B,
C or B_bias, an initial state ``x0``, ``return_state``.
"""

from __future__ import annotations

import math
import warnings

import torch

from ..triton_support import next_pow2, require_kernel_runtime

require_kernel_runtime("selective_scan")

import triton  # noqa: E402 — only once the runtime is known to run kernels
import triton.language as tl  # noqa: E402

from .. import dispatch  # noqa: E402
from ..checks import positive_int  # noqa: E402
from . import reference  # noqa: E402

SMALL_Z2 = 0.01  # |Delta A|^2 below which phi1 and phi1' use their series (|z| < 0.1: error < 1e-12)


@triton.jit
def _horner(pr, pi, zr, zi, coef):
    """p z + coef for complex p, z."""
    return pr * zr - pi * zi + coef, pr * zi + pi * zr


@triton.jit
def _cdiv_z(nr, ni, zr, zi):
    """(nr + i ni) / (zr + i zi)."""
    den = zr * zr + zi * zi
    return (nr * zr + ni * zi) / den, (ni * zr - nr * zi) / den


@triton.jit
def _phi1(zr, zi, ar, ai, small):
    """phi1(z) = (e^z - 1) / z given a = e^z; the series 1 + z/2 + ... + z^6/7! where |z| < 0.1, where
    e^z - 1 would lose digits to cancellation."""
    pr, pi = _horner(zr * 0 + 1.0 / 5040, zi * 0, zr, zi, 1.0 / 720)
    pr, pi = _horner(pr, pi, zr, zi, 1.0 / 120)
    pr, pi = _horner(pr, pi, zr, zi, 1.0 / 24)
    pr, pi = _horner(pr, pi, zr, zi, 1.0 / 6)
    pr, pi = _horner(pr, pi, zr, zi, 0.5)
    pr, pi = _horner(pr, pi, zr, zi, 1.0)
    qr, qi = _cdiv_z(ar - 1.0, ai, tl.where(small, 1.0, zr), tl.where(small, 0.0, zi))
    return tl.where(small, pr, qr), tl.where(small, pi, qi)


@triton.jit
def _dphi1(zr, zi, ar, ai, phr, phi, small):
    """phi1'(z) = (e^z - phi1(z)) / z; series sum_j (j+1) z^j / (j+2)! (to z^6) where |z| < 0.1."""
    pr, pi = _horner(zr * 0 + 1.0 / 5760, zi * 0, zr, zi, 1.0 / 840)
    pr, pi = _horner(pr, pi, zr, zi, 1.0 / 144)
    pr, pi = _horner(pr, pi, zr, zi, 1.0 / 30)
    pr, pi = _horner(pr, pi, zr, zi, 1.0 / 8)
    pr, pi = _horner(pr, pi, zr, zi, 1.0 / 3)
    pr, pi = _horner(pr, pi, zr, zi, 0.5)
    qr, qi = _cdiv_z(ar - phr, ai - phi, tl.where(small, 1.0, zr), tl.where(small, 0.0, zi))
    return tl.where(small, pr, qr), tl.where(small, pi, qi)


@triton.jit
def _step_terms(dl, Ar, Ai, bin_, ZOH: tl.constexpr, SMALL: tl.constexpr):
    """z = Delta A, a = e^z, phi1(z) (1 for euler) and Bbar's factor dl * phi1 (per (channel, n))."""
    zr = dl[:, None] * Ar
    zi = dl[:, None] * Ai
    e = tl.exp(zr)
    ar = e * tl.cos(zi)
    ai = e * tl.sin(zi)
    small = zr * zr + zi * zi < SMALL
    if ZOH:
        phr, phi = _phi1(zr, zi, ar, ai, small)
    else:
        phr = zr * 0 + 1.0
        phi = zr * 0
    return zr, zi, ar, ai, phr, phi, small


@triton.jit
def _forward_kernel(
    u_ptr, dt_ptr, ar_ptr, ai_ptr, b_ptr, c_ptr, bias_ptr, y_ptr, sr_ptr, si_ptr,
    L, d, n, p, G, NBLK, CH, n_chunks,
    ZOH: tl.constexpr, ACC_64: tl.constexpr, SMALL: tl.constexpr, BD: tl.constexpr, BN: tl.constexpr,
):  # fmt: skip
    acc_t = tl.float64 if ACC_64 else tl.float32
    b = tl.program_id(0).to(tl.int64)
    pid = tl.program_id(1)
    g = pid // NBLK
    within = (pid % NBLK) * BD + tl.arange(0, BD)
    cmask = within < p
    ch = g * p + within
    nn = tl.arange(0, BN)
    nmask = nn < n
    m2 = cmask[:, None] & nmask[None, :]
    dn = ch[:, None] * n + nn[None, :]
    Ar = tl.load(ar_ptr + dn, mask=m2, other=0.0).to(acc_t)
    Ai = tl.load(ai_ptr + dn, mask=m2, other=0.0).to(acc_t)
    bias = tl.load(bias_ptr + dn, mask=m2, other=0.0).to(acc_t)
    xr = tl.zeros((BD, BN), dtype=acc_t)
    xi = tl.zeros((BD, BN), dtype=acc_t)
    for c in range(0, n_chunks):
        s_off = (b * n_chunks + c) * d * n + dn
        tl.store(sr_ptr + s_off, xr, mask=m2)
        tl.store(si_ptr + s_off, xi, mask=m2)
        for k in range(0, CH):
            t = c * CH + k
            # steps past L read Delta = u = 0: a = 1, nothing added, the state is kept (masks as tensors:
            # in the interpreter t is a Python int)
            tc = cmask & (within * 0 + t < L)
            tn = nmask & (nn * 0 + t < L)
            row = b * L + t
            uu = tl.load(u_ptr + row * d + ch, mask=tc, other=0.0).to(acc_t)
            dl = tl.load(dt_ptr + row * d + ch, mask=tc, other=0.0).to(acc_t)
            Bv = tl.load(b_ptr + (row * G + g) * n + nn, mask=tn, other=0.0).to(acc_t)
            Cv = tl.load(c_ptr + (row * G + g) * n + nn, mask=tn, other=0.0).to(acc_t)
            bin_ = Bv[None, :] + bias
            zr, zi, ar, ai, phr, phi, small = _step_terms(dl, Ar, Ai, bin_, ZOH, SMALL)
            w = (dl * uu)[:, None] * bin_
            xr, xi = ar * xr - ai * xi + w * phr, ar * xi + ai * xr + w * phi
            y = tl.sum(Cv[None, :] * xr, axis=1)
            tl.store(y_ptr + row * d + ch, y, mask=tc)


@triton.jit
def _backward_kernel(
    u_ptr, dt_ptr, ar_ptr, ai_ptr, b_ptr, c_ptr, bias_ptr, gy_ptr, sr_ptr, si_ptr, xr_ptr, xi_ptr,
    gu_ptr, gdt_ptr, gb_ptr, gc_ptr, gar_ptr, gai_ptr, gbias_ptr,
    L, d, n, p, G, NBLK, CH, n_chunks,
    ZOH: tl.constexpr, ACC_64: tl.constexpr, SMALL: tl.constexpr, BD: tl.constexpr, BN: tl.constexpr,
):  # fmt: skip
    acc_t = tl.float64 if ACC_64 else tl.float32
    b = tl.program_id(0).to(tl.int64)
    pid = tl.program_id(1)
    g = pid // NBLK
    within = (pid % NBLK) * BD + tl.arange(0, BD)
    cmask = within < p
    ch = g * p + within
    nn = tl.arange(0, BN)
    nmask = nn < n
    m2 = cmask[:, None] & nmask[None, :]
    dn = ch[:, None] * n + nn[None, :]
    Ar = tl.load(ar_ptr + dn, mask=m2, other=0.0).to(acc_t)
    Ai = tl.load(ai_ptr + dn, mask=m2, other=0.0).to(acc_t)
    bias = tl.load(bias_ptr + dn, mask=m2, other=0.0).to(acc_t)
    lr = tl.zeros((BD, BN), dtype=acc_t)  # the adjoint dLoss/dx_t, carried backwards in time
    li = tl.zeros((BD, BN), dtype=acc_t)
    g_ar = tl.zeros((BD, BN), dtype=acc_t)
    g_ai = tl.zeros((BD, BN), dtype=acc_t)
    g_bias = tl.zeros((BD, BN), dtype=acc_t)
    scr = (b * d + ch[:, None]) * (CH + 1) * n + nn[None, :]  # this program's scratch: chunk + 1 states
    for cc in range(0, n_chunks):
        c = n_chunks - 1 - cc
        s_off = (b * n_chunks + c) * d * n + dn
        xr = tl.load(sr_ptr + s_off, mask=m2, other=0.0)
        xi = tl.load(si_ptr + s_off, mask=m2, other=0.0)
        tl.store(xr_ptr + scr, xr, mask=m2)
        tl.store(xi_ptr + scr, xi, mask=m2)
        for k in range(0, CH):  # recompute the chunk's states, as in the forward kernel
            t = c * CH + k
            row = b * L + t
            uu = tl.load(u_ptr + row * d + ch, mask=cmask & (within * 0 + t < L), other=0.0).to(acc_t)
            dl = tl.load(dt_ptr + row * d + ch, mask=cmask & (within * 0 + t < L), other=0.0).to(acc_t)
            Bv = tl.load(b_ptr + (row * G + g) * n + nn, mask=nmask & (nn * 0 + t < L), other=0.0).to(acc_t)
            bin_ = Bv[None, :] + bias
            zr, zi, ar, ai, phr, phi, small = _step_terms(dl, Ar, Ai, bin_, ZOH, SMALL)
            w = (dl * uu)[:, None] * bin_
            xr, xi = ar * xr - ai * xi + w * phr, ar * xi + ai * xr + w * phi
            tl.store(xr_ptr + scr + (k + 1) * n, xr, mask=m2)
            tl.store(xi_ptr + scr + (k + 1) * n, xi, mask=m2)
        tl.debug_barrier()  # the reverse walk reads these states back, from other threads of this program
        for kk in range(0, CH):
            k = CH - 1 - kk
            t = c * CH + k
            tc = cmask & (within * 0 + t < L)
            tn = nmask & (nn * 0 + t < L)
            row = b * L + t
            uu = tl.load(u_ptr + row * d + ch, mask=tc, other=0.0).to(acc_t)
            dl = tl.load(dt_ptr + row * d + ch, mask=tc, other=0.0).to(acc_t)
            gy = tl.load(gy_ptr + row * d + ch, mask=tc, other=0.0).to(acc_t)
            Bv = tl.load(b_ptr + (row * G + g) * n + nn, mask=tn, other=0.0).to(acc_t)
            Cv = tl.load(c_ptr + (row * G + g) * n + nn, mask=tn, other=0.0).to(acc_t)
            x_r = tl.load(xr_ptr + scr + (k + 1) * n, mask=m2, other=0.0)
            xp_r = tl.load(xr_ptr + scr + k * n, mask=m2, other=0.0)
            xp_i = tl.load(xi_ptr + scr + k * n, mask=m2, other=0.0)
            bin_ = Bv[None, :] + bias
            zr, zi, ar, ai, phr, phi, small = _step_terms(dl, Ar, Ai, bin_, ZOH, SMALL)
            lr += gy[:, None] * Cv[None, :]
            part = (row * G * NBLK + pid) * n + nn  # this program's share of grad B_t / grad C_t
            tl.store(gc_ptr + part, tl.sum(gy[:, None] * x_r, axis=0), mask=tn)
            # x_t = a x_{t-1} + dl phi1 bin u: the gradients of the product's factors
            scale = dl[:, None] * bin_
            tl.store(gu_ptr + row * d + ch, tl.sum(scale * (phr * lr + phi * li), axis=1), mask=tc)
            gwr = lr * uu[:, None]  # grad of (dl phi1 bin), complex
            gwi = li * uu[:, None]
            re_phi_gw = phr * gwr + phi * gwi  # Re(conj(phi1) gw)
            gzr = ar * (xp_r * lr + xp_i * li) + ai * (xp_r * li - xp_i * lr)  # conj(a) conj(x_{t-1}) lambda
            gzi = ar * (xp_r * li - xp_i * lr) - ai * (xp_r * lr + xp_i * li)
            if ZOH:
                dpr, dpi = _dphi1(zr, zi, ar, ai, phr, phi, small)
                gzr += scale * (dpr * gwr + dpi * gwi)
                gzi += scale * (dpr * gwi - dpi * gwr)
            gbin = dl[:, None] * re_phi_gw
            gdl = tl.sum(bin_ * re_phi_gw + Ar * gzr + Ai * gzi, axis=1)
            tl.store(gdt_ptr + row * d + ch, gdl, mask=tc)
            g_ar += dl[:, None] * gzr
            g_ai += dl[:, None] * gzi
            g_bias += gbin
            tl.store(gb_ptr + part, tl.sum(gbin, axis=0), mask=tn)
            lr, li = ar * lr + ai * li, ar * li - ai * lr  # lambda_{t-1} gets conj(a_t) lambda_t
        tl.debug_barrier()  # the next chunk overwrites the scratch
    tl.store(gar_ptr + b * d * n + dn, g_ar, mask=m2)
    tl.store(gai_ptr + b * d * n + dn, g_ai, mask=m2)
    tl.store(gbias_ptr + b * d * n + dn, g_bias, mask=m2)


def _block(p: int) -> int:
    """Channels per program: the group's p rounded up to a power of two, at most 32 (registers hold
    ~20 (BD, n) tiles)."""
    return min(next_pow2(p), 32)


class _Scan(torch.autograd.Function):
    """y = scan(u, Delta, A = Ar + i Ai, B, C, B_bias) without the D u term; every tensor real.
    u, delta: (Nb, L, d); ar, ai, bias: (d, n); B, C: (Nb, L, G, n)."""

    @staticmethod
    def forward(ctx, u, delta, ar, ai, B, C, bias, zoh: bool, chunk: int):
        u, delta, ar, ai, B, C, bias = (t.contiguous() for t in (u, delta, ar, ai, B, C, bias))
        Nb, L, d = u.shape
        G, n = B.shape[2], B.shape[3]
        acc = torch.float64 if u.dtype == torch.float64 else torch.float32
        n_chunks = -(-L // chunk)
        states = torch.empty((2, Nb, n_chunks, d, n), dtype=acc, device=u.device)  # chunk-entry states
        y = torch.empty((Nb, L, d), dtype=acc, device=u.device)
        p = d // G
        BD = _block(p)
        NBLK = -(-p // BD)
        meta = dict(ZOH=zoh, ACC_64=acc == torch.float64, SMALL=SMALL_Z2, BD=BD, BN=next_pow2(n))
        _forward_kernel[(Nb, G * NBLK)](
            u, delta, ar, ai, B, C, bias, y, states[0], states[1], L, d, n, p, G, NBLK, chunk, n_chunks, **meta
        )  # fmt: skip
        ctx.save_for_backward(u, delta, ar, ai, B, C, bias, states)
        ctx.meta, ctx.sizes = meta, (Nb, L, d, G, n, p, NBLK, chunk, n_chunks, acc)
        return y.to(u.dtype)

    @staticmethod
    def backward(ctx, gy):
        u, delta, ar, ai, B, C, bias, states = ctx.saved_tensors
        Nb, L, d, G, n, p, NBLK, chunk, n_chunks, acc = ctx.sizes
        gy = gy.contiguous()
        scratch = torch.empty((2, Nb, d, chunk + 1, n), dtype=acc, device=u.device)
        gu, gdt = (torch.empty((Nb, L, d), dtype=acc, device=u.device) for _ in range(2))
        gb_part, gc_part = (torch.empty((Nb, L, G, NBLK, n), dtype=acc, device=u.device) for _ in range(2))
        gar, gai, gbias = (torch.empty((Nb, d, n), dtype=acc, device=u.device) for _ in range(3))
        _backward_kernel[(Nb, G * NBLK)](
            u, delta, ar, ai, B, C, bias, gy, states[0], states[1], scratch[0], scratch[1],
            gu, gdt, gb_part, gc_part, gar, gai, gbias, L, d, n, p, G, NBLK, chunk, n_chunks, **ctx.meta,
        )  # fmt: skip
        dt = u.dtype
        return (
            gu.to(dt), gdt.to(dt), gar.sum(0).to(dt), gai.sum(0).to(dt), gb_part.sum(3).to(dt),
            gc_part.sum(3).to(dt), gbias.sum(0).to(dt), None, None,
        )  # fmt: skip


def _unsupported(B, C, B_bias, x0, return_state) -> str | None:
    """Why the kernel cannot run this call (None when it can)."""
    for name, t in (("B", B), ("C", C), ("B_bias", B_bias)):
        if t is not None and t.is_complex():
            return f"complex {name} is not covered by the kernel (complex A is)"
    if x0 is not None:
        return "an initial state x0 is not covered by the kernel"
    if return_state:
        return "return_state is not covered by the kernel"
    return None


_WARNED: set[str] = set()


def _fall_back(why: str) -> None:
    """The dispatcher's fallback rule for a call the kernel does not cover: KernelFallbackError under strict
    kernels, else one warning per reason (then the caller runs the reference)."""
    msg = f"op 'selective_scan': the triton kernel cannot run ({why}); running the reference"
    if dispatch.strict():
        raise dispatch.KernelFallbackError(
            msg + " — refused because strict kernels are on (config key `kernels: strict` or SEQMIX_STRICT_KERNELS=1)"
        )
    if why not in _WARNED:
        _WARNED.add(why)
        warnings.warn(msg, RuntimeWarning, stacklevel=3)


def selective_scan(u, delta, A, B, C, B_bias=None, D=None, disc="zoh", x0=None, chunk=None, return_state=False):
    """As ``reference.selective_scan`` (same shapes, checks and dtype rule); ``chunk`` is the interval
    between the states saved for backward (default round(sqrt(L)))."""
    if chunk is not None:
        positive_int("selective_scan", "chunk", chunk)
    if disc not in ("zoh", "euler"):
        raise ValueError(f"disc must be 'zoh' or 'euler', got {disc!r}")
    args = reference._checked("selective_scan", u, delta, A, B, C, B_bias, D, x0, seq=True)
    why = _unsupported(*args[3:6], args[7], return_state)
    if why is not None or u.shape[1] == 0:  # no steps: nothing for a kernel to do
        if why is not None:
            _fall_back(why)
        return reference.selective_scan(u, delta, A, B, C, B_bias, D, disc, x0, chunk, return_state)
    u, delta, A, B, C, B_bias, D, _ = args
    d, n = u.shape[2], A.shape[-1]
    A = A.expand(d, n)
    ar, ai = (A.real, A.imag) if A.is_complex() else (A, torch.zeros_like(A))
    bias = B_bias if B_bias is not None else torch.zeros_like(ar)
    step = chunk if chunk is not None else max(1, int(round(math.sqrt(u.shape[1]))))
    y = _Scan.apply(u, delta, ar, ai, B, C, bias, disc == "zoh", step)
    return y + D * u if D is not None else y
