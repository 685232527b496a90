"""Mamba2 SSD as Triton kernels, with the reference's signature and checks (``reference.ssd_chunked``).

Forward (``_forward_kernel``): one program per (batch row, head h, block of BP head-dim columns). It walks
time in order with the state (BP, N) in registers (float32; float64 for float64 inputs), the decay a scalar
per head as in Mamba2:
    a_t = exp(dt_t A_h),   S_t = a_t S_{t-1} + dt_t x_t B_t^T,   y_t = S_t C_t   (+ D x_t, added in torch),
with B_t, C_t the vectors of head h's group g = h // (H / G). Every ``chunk`` steps it saves the state
entering the chunk: (Nb, L/chunk, H, P, N), never one state per step.
Backward (``_backward_kernel``): chunks from the last; each chunk's states are recomputed from its saved state
into a per-program scratch of chunk + 1 states, then walked in reverse with the adjoint
lambda_t = gy_t C_t^T + a_{t+1} lambda_{t+1} (seeded with the last state's gradient), which gives
    grad x_t = dt_t lambda_t B_t,  grad B_t = dt_t lambda_t^T x_t,  grad C_t = S_t^T gy_t,
    grad dt_t = x_t^T lambda_t B_t + A a_t <lambda_t, S_{t-1}>,  grad A = sum_t dt_t a_t <lambda_t, S_{t-1}>,
and grad h0 = lambda_0. Shared gradients are per-program partials reduced in torch (no atomics): dt per
column block, A per (batch row, column block), B and C per (head, column block), summed over a group's heads.

Inputs are padded in torch to a whole number of chunks with dt = 0 (decay 1, nothing added), so the kernels
need no time masks; L = 0 runs the reference (nothing to scan). The ``chunk`` argument is the checkpoint
interval here (the reference's chunk size; either way it does not change the result).

Status: checked in Triton's CPU interpreter only (tests/ops/test_triton_ssd.py), never compiled or timed on a
GPU. Known cost on a GPU: the padding copies, and the backward's recomputed states go through global memory
(the scratch, chunk + 1 states per program). This is the sequential-scan design, not Mamba2's chunked
matmul form: it does O(L P N) work per head like the recurrence, without tensor cores.
"""

from __future__ import annotations

import torch

from ..triton_support import next_pow2, require_kernel_runtime

require_kernel_runtime("ssd")

import triton  # noqa: E402 — only once the runtime is known to run kernels
import triton.language as tl  # noqa: E402

from ..checks import positive_int  # noqa: E402
from . import reference  # noqa: E402


@triton.jit
def _tile(pid, P, N, NBLK, BP: tl.constexpr, BN: tl.constexpr):
    """This program's head h, column block blk, its columns pp (BP,) with their mask, the state indices nn
    (BN,) with theirs, and the (BP, BN) offsets (within one head's P x N state) and mask."""
    h = pid // NBLK
    blk = pid % NBLK
    pp = blk * BP + tl.arange(0, BP)
    pmask = pp < P
    nn = tl.arange(0, BN)
    nmask = nn < N
    return h, blk, pp, pmask, nn, nmask, pp[:, None] * N + nn[None, :], pmask[:, None] & nmask[None, :]


@triton.jit
def _step_inputs(x_ptr, dt_ptr, a_ptr, b_ptr, c_ptr, b, t, h, g, pp, pmask, nn, nmask, Lp, H, G, P, N,
                 acc_t: tl.constexpr):  # fmt: skip
    """Step t's x (BP,), dt and A (both (BP,), every entry the head's scalar), B and C (BN,)."""
    row = b * Lp + t
    xx = tl.load(x_ptr + (row * H + h) * P + pp, mask=pmask, other=0.0).to(acc_t)
    dt = tl.load(dt_ptr + (row * H + h) + pp * 0).to(acc_t)
    A = tl.load(a_ptr + h + pp * 0).to(acc_t)
    Bt = tl.load(b_ptr + (row * G + g) * N + nn, mask=nmask, other=0.0).to(acc_t)
    Ct = tl.load(c_ptr + (row * G + g) * N + nn, mask=nmask, other=0.0).to(acc_t)
    return xx, dt, A, Bt, Ct


@triton.jit(do_not_specialize=["Lp", "CH", "n_chunks"])
def _forward_kernel(
    x_ptr, dt_ptr, a_ptr, b_ptr, c_ptr, h0_ptr, y_ptr, st_ptr, last_ptr, Lp, H, G, P, N, NBLK, CH, n_chunks,
    ACC_64: tl.constexpr, BP: tl.constexpr, BN: tl.constexpr,
):  # fmt: skip
    acc_t = tl.float64 if ACC_64 else tl.float32
    b = tl.program_id(0).to(tl.int64)
    h, blk, pp, pmask, nn, nmask, pn, m2 = _tile(tl.program_id(1), P, N, NBLK, BP, BN)
    g = h // (H // G)
    head = (b * H + h) * P * N + pn
    s = tl.load(h0_ptr + head, mask=m2, other=0.0).to(acc_t)
    for c in range(0, n_chunks):
        tl.store(st_ptr + ((b * n_chunks + c) * H + h) * P * N + pn, s, mask=m2)
        for k in range(0, CH):
            t = c * CH + k
            xx, dt, A, Bt, Ct = _step_inputs(x_ptr, dt_ptr, a_ptr, b_ptr, c_ptr, b, t, h, g, pp, pmask, nn, nmask,
                                             Lp, H, G, P, N, acc_t)  # fmt: skip
            s = tl.exp(dt * A)[:, None] * s + (dt * xx)[:, None] * Bt[None, :]
            tl.store(y_ptr + ((b * Lp + t) * H + h) * P + pp, tl.sum(s * Ct[None, :], axis=1), mask=pmask)
    tl.store(last_ptr + head, s, mask=m2)


@triton.jit
def _recompute_chunk(x_ptr, dt_ptr, a_ptr, b_ptr, c_ptr, scr_ptr, scr, s, b, c, h, g, pp, pmask, nn, nmask, m2,
                     Lp, H, G, P, N, CH, acc_t: tl.constexpr):  # fmt: skip
    """Write the chunk's states S_{cCH-1} (the saved one), ..., S_{cCH+CH-1} to the scratch slots 0..CH."""
    tl.store(scr_ptr + scr, s, mask=m2)
    for k in range(0, CH):
        t = c * CH + k
        xx, dt, A, Bt, _ = _step_inputs(x_ptr, dt_ptr, a_ptr, b_ptr, c_ptr, b, t, h, g, pp, pmask, nn, nmask,
                                        Lp, H, G, P, N, acc_t)  # fmt: skip
        s = tl.exp(dt * A)[:, None] * s + (dt * xx)[:, None] * Bt[None, :]
        tl.store(scr_ptr + scr + (k + 1) * N, s, mask=m2)


@triton.jit(do_not_specialize=["Lp", "CH", "n_chunks"])
def _backward_kernel(
    x_ptr, dt_ptr, a_ptr, b_ptr, c_ptr, gy_ptr, glast_ptr, st_ptr, scr_ptr,
    gx_ptr, gdt_ptr, ga_ptr, gb_ptr, gc_ptr, gh0_ptr, Lp, H, G, P, N, NBLK, CH, n_chunks,
    ACC_64: tl.constexpr, BP: tl.constexpr, BN: tl.constexpr,
):  # fmt: skip
    acc_t = tl.float64 if ACC_64 else tl.float32
    b = tl.program_id(0).to(tl.int64)
    h, blk, pp, pmask, nn, nmask, pn, m2 = _tile(tl.program_id(1), P, N, NBLK, BP, BN)
    g = h // (H // G)
    head = (b * H + h) * P * N + pn
    lam = tl.load(glast_ptr + head, mask=m2, other=0.0).to(acc_t)  # adjoint dLoss/dS_t, from the end
    g_a = tl.zeros((BP,), dtype=acc_t)
    scr = ((b * H + h) * P + pp[:, None]) * (CH + 1) * N + nn[None, :]  # this program's chunk + 1 states
    for cc in range(0, n_chunks):
        c = n_chunks - 1 - cc
        saved = tl.load(st_ptr + ((b * n_chunks + c) * H + h) * P * N + pn, mask=m2, other=0.0)
        _recompute_chunk(x_ptr, dt_ptr, a_ptr, b_ptr, c_ptr, scr_ptr, scr, saved, b, c, h, g, pp, pmask, nn, nmask,
                         m2, Lp, H, G, P, N, CH, acc_t)  # fmt: skip
        tl.debug_barrier()  # the reverse walk reads these states back, from other threads of this program
        for kk in range(0, CH):
            k = CH - 1 - kk
            t = c * CH + k
            row = b * Lp + t
            xx, dt, A, Bt, Ct = _step_inputs(x_ptr, dt_ptr, a_ptr, b_ptr, c_ptr, b, t, h, g, pp, pmask, nn, nmask,
                                             Lp, H, G, P, N, acc_t)  # fmt: skip
            gy = tl.load(gy_ptr + (row * H + h) * P + pp, mask=pmask, other=0.0).to(acc_t)
            s_t = tl.load(scr_ptr + scr + (k + 1) * N, mask=m2, other=0.0)
            s_prev = tl.load(scr_ptr + scr + k * N, mask=m2, other=0.0)
            lam += gy[:, None] * Ct[None, :]
            part = ((row * H + h) * NBLK + blk) * N + nn  # this program's share of grad B_t / grad C_t
            tl.store(gc_ptr + part, tl.sum(gy[:, None] * s_t, axis=0), mask=nmask)
            lam_b = tl.sum(lam * Bt[None, :], axis=1)  # (BP,)
            tl.store(gx_ptr + (row * H + h) * P + pp, dt * lam_b, mask=pmask)
            tl.store(gb_ptr + part, tl.sum((dt * xx)[:, None] * lam, axis=0), mask=nmask)
            a = tl.exp(dt * A)
            decay = a * tl.sum(lam * s_prev, axis=1)  # (BP,): d Loss / d log a_t, per column
            tl.store(gdt_ptr + (row * H + h) * NBLK + blk, tl.sum(xx * lam_b + A * decay, axis=0))
            g_a += dt * decay
            lam = a[:, None] * lam  # lambda_{t-1} gets a_t lambda_t
        tl.debug_barrier()  # the next chunk overwrites the scratch
    tl.store(ga_ptr + (b * H + h) * NBLK + blk, tl.sum(g_a, axis=0))
    tl.store(gh0_ptr + head, lam, mask=m2)


def _block(P: int) -> int:
    """Head-dim columns per program: P rounded up to a power of two, at most 32."""
    return min(next_pow2(P), 32)


class _SSD(torch.autograd.Function):
    """(y without the D x term, last state) of the scan over inputs already padded to n_chunks * CH steps.
    x: (Nb, Lp, H, P); dt: (Nb, Lp, H); A: (H,); B, C: (Nb, Lp, G, N); h0: (Nb, H, P, N)."""

    @staticmethod
    def forward(ctx, x, dt, A, B, C, h0, chunk):
        ins = [t.contiguous() for t in (x, dt, A, B, C, h0)]
        Nb, Lp, H, P = x.shape
        G, N = B.shape[2], B.shape[3]
        BP = _block(P)
        NBLK, n_chunks = -(-P // BP), Lp // chunk
        acc = torch.float64 if x.dtype == torch.float64 else torch.float32
        new = lambda *shape: torch.empty(shape, dtype=acc, device=x.device)
        states, y, last = new(Nb, n_chunks, H, P, N), new(Nb, Lp, H, P), new(Nb, H, P, N)
        meta = dict(ACC_64=acc == torch.float64, BP=BP, BN=next_pow2(N))
        sizes = (Lp, H, G, P, N, NBLK, chunk, n_chunks)
        _forward_kernel[(Nb, H * NBLK)](*ins, y, states, last, *sizes, **meta)
        ctx.save_for_backward(*ins[:5], states)
        ctx.meta, ctx.sizes, ctx.acc = meta, sizes, acc
        return y.to(x.dtype), last.to(x.dtype)

    @staticmethod
    def backward(ctx, gy, g_last):
        *ins, states = ctx.saved_tensors
        Lp, H, G, P, N, NBLK, CH, n_chunks = ctx.sizes
        Nb = gy.shape[0]
        new = lambda *shape: torch.empty(shape, dtype=ctx.acc, device=gy.device)
        scratch, gx, gdt = new(Nb, H, P, CH + 1, N), new(Nb, Lp, H, P), new(Nb, Lp, H, NBLK)
        gb, gc, ga, gh0 = new(Nb, Lp, H, NBLK, N), new(Nb, Lp, H, NBLK, N), new(Nb, H, NBLK), new(Nb, H, P, N)
        seeds = [t.contiguous() for t in (gy, g_last)]
        _backward_kernel[(Nb, H * NBLK)](
            *ins, *seeds, states, scratch, gx, gdt, ga, gb, gc, gh0, *ctx.sizes, **ctx.meta
        )  # fmt: skip
        per_group = lambda t: t.reshape(Nb, Lp, G, H // G, NBLK, N).sum((3, 4))  # heads of a group
        dt = gy.dtype
        return (gx.to(dt), gdt.sum(3).to(dt), ga.sum((0, 2)).to(dt), per_group(gb).to(dt), per_group(gc).to(dt),
                gh0.to(dt), None)  # fmt: skip


def _pad_time(t: torch.Tensor, pad: int) -> torch.Tensor:
    """t (Nb, L, ...) with ``pad`` zero steps appended."""
    if not pad:
        return t
    return torch.cat([t, t.new_zeros((t.shape[0], pad, *t.shape[2:]))], dim=1)


def ssd(x, dt, A, B, C, D=None, chunk=64, h0=None, return_state=False):
    """As ``reference.ssd_chunked`` (same shapes, checks, dtype rule and results); ``chunk`` is the interval
    between the states the forward pass keeps for backward (at most L)."""
    positive_int("ssd", "chunk", chunk)
    x, dt, A, B, C, D, h0 = reference._checked("ssd", x, dt, A, B, C, D, h0)
    Nb, L, H, P = x.shape
    if L == 0:  # no steps: nothing for a kernel to do
        return reference.ssd_chunked(x, dt, A, B, C, D, chunk, h0, return_state)
    step = min(chunk, L)
    pad = -L % step  # padded steps: dt = 0, so decay 1 and no input
    if h0 is None:
        h0 = x.new_zeros(Nb, H, P, B.shape[-1])
    padded = [_pad_time(t, pad) for t in (x, dt)] + [A] + [_pad_time(t, pad) for t in (B, C)]
    y, last = _SSD.apply(*padded, h0, step)
    y = y[:, :L]
    if D is not None:
        y = y + D[:, None] * x
    return (y, last) if return_state else y
