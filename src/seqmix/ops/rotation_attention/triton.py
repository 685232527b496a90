"""Rotation attention (see reference.py) as a flash-style Triton forward kernel.

Forward (``_forward_kernel``): one program per (block of BM queries, batch x head). Angles arrive as the
prefix-summed Theta (T x d/2 per batch/head, float64, from ``rotary.accumulate_angles``); cos/sin are taken
in-kernel and q, k (and v) rotated in registers; keys stream in blocks of BN up to the causal limit with an
online softmax (running max m, running sum l); the ALiBi bias -m_h (i - j) is computed from indices; the
output is rotated back by R(-Theta^v_i) before it is stored, with the row's log-sum-exp. No T x T tensor.

Backward: recomputation in query blocks in torch (``recompute.attention_core_backward``, using the saved
log-sum-exp), not a Triton kernel; the rotations' gradients (q, k, v and the angles, hence psi) come from
autograd through the O(T d) rotations only.

Accumulation is float32 (float64 for float64 inputs); the products run in the inputs' dtype (bf16 tensor
cores for bf16; full-precision fp32 for fp32). The output is written in the accumulation dtype and kept for
the backward (its row sums delta and the value rotation's angle gradient: a bf16 copy there doubled the
angle gradients' error in the interpreter checks); the caller gets it cast to the inputs' dtype.
"""

from __future__ import annotations

import torch

from ..triton_support import interpreting, next_pow2, require_kernel_runtime, tuned

require_kernel_runtime("rotation_attention")

import triton  # noqa: E402 — only once the runtime is known to run kernels
import triton.language as tl  # noqa: E402

from ..rotary.reference import accumulate_angles, rotate  # noqa: E402
from .recompute import attention_core_backward  # noqa: E402
from .reference import checked  # noqa: E402

_CONFIGS = tuned(
    [
        triton.Config({"BM": 16, "BN": 16}, num_warps=2),
        triton.Config({"BM": 64, "BN": 32}, num_warps=4),
        triton.Config({"BM": 64, "BN": 64}, num_warps=4),
        triton.Config({"BM": 128, "BN": 64}, num_warps=8),
    ]
)


@triton.jit
def _load_rotated(
    ptr, th_ptr, rows, rmask, e_col, o_col, bmask, s_t, s_d, sth_t, sth_b, jb, ROT: tl.constexpr, acc_t: tl.constexpr
):
    """The (even, odd) halves of rows ``rows`` of a (T, d) head, rotated by R(Theta_row) when ROT."""
    m2 = rmask[:, None] & bmask[None, :]
    x1 = tl.load(ptr + rows[:, None] * s_t + e_col[None, :] * s_d, mask=m2, other=0.0).to(acc_t)
    x2 = tl.load(ptr + rows[:, None] * s_t + o_col[None, :] * s_d, mask=m2, other=0.0).to(acc_t)
    if ROT:
        th = tl.load(th_ptr + rows[:, None] * sth_t + jb[None, :] * sth_b, mask=m2, other=0.0).to(acc_t)
        c, s = tl.cos(th), tl.sin(th)
        x1, x2 = x1 * c - x2 * s, x1 * s + x2 * c
    return x1, x2


@triton.jit
def _dot(a, b, PREC: tl.constexpr, acc_t: tl.constexpr, UPCAST: tl.constexpr):
    """a @ b accumulated in acc_t. UPCAST: the operands (already rounded to the input dtype) enter as
    float32, which is exact; the interpreter's own bf16 tl.dot reads bf16 bits as integers (triton 3.9)."""
    if UPCAST:
        return tl.dot(a.to(tl.float32), b.to(tl.float32), input_precision="ieee", out_dtype=acc_t)
    return tl.dot(a, b, input_precision=PREC, out_dtype=acc_t)


@triton.autotune(configs=_CONFIGS, key=["HALF", "ACC_64"])
@triton.jit(do_not_specialize=["T", "s_b", "s_h", "sth_b", "sth_h", "sthv_b", "sthv_h"])
def _forward_kernel(
    q_ptr, k_ptr, v_ptr, th_ptr, thv_ptr, m_ptr, o_ptr, lse_ptr, T, H, HALF, scale,
    s_b, s_h, s_t, s_d, sth_b, sth_h, sth_t, sth_j, sthv_b, sthv_h, sthv_t, sthv_j,
    ROT_QK: tl.constexpr, ROT_V: tl.constexpr, ALIBI: tl.constexpr, INTERLEAVED: tl.constexpr,
    ACC_64: tl.constexpr, PREC: tl.constexpr, UPCAST: tl.constexpr,
    BH: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
):  # fmt: skip
    acc_t = tl.float64 if ACC_64 else tl.float32
    dot_t = q_ptr.dtype.element_ty
    bh = tl.program_id(1)
    b, h = (bh // H).to(tl.int64), (bh % H).to(tl.int64)
    base = b * s_b + h * s_h  # q, k, v, o share one contiguous layout
    th_base, thv_base = th_ptr + b * sth_b + h * sth_h, thv_ptr + b * sthv_b + h * sthv_h
    jb = tl.arange(0, BH)
    bmask = jb < HALF
    e_col = 2 * jb if INTERLEAVED else jb
    o_col = 2 * jb + 1 if INTERLEAVED else jb + HALF
    qm = tl.program_id(0) * BM + tl.arange(0, BM)
    qmask = qm < T
    q1, q2 = _load_rotated(q_ptr + base, th_base, qm, qmask, e_col, o_col, bmask, s_t, s_d, sth_t, sth_j, jb,
                           ROT_QK, acc_t)  # fmt: skip
    q1, q2 = q1.to(dot_t), q2.to(dot_t)
    slope = tl.load(m_ptr + h).to(acc_t) if ALIBI else 0.0
    m_i = tl.full((BM,), float("-inf"), dtype=acc_t)
    l_i = tl.zeros((BM,), dtype=acc_t)
    acc1 = tl.zeros((BM, BH), dtype=acc_t)
    acc2 = tl.zeros((BM, BH), dtype=acc_t)
    hi = tl.minimum(T, (tl.program_id(0) + 1) * BM)
    for n0 in range(0, hi, BN):  # key 0 is in the first block and visible to every row: m_i is finite after it
        kn = n0 + tl.arange(0, BN)
        kmask = kn < T
        k1, k2 = _load_rotated(k_ptr + base, th_base, kn, kmask, e_col, o_col, bmask, s_t, s_d, sth_t, sth_j, jb,
                               ROT_QK, acc_t)  # fmt: skip
        v1, v2 = _load_rotated(v_ptr + base, thv_base, kn, kmask, e_col, o_col, bmask, s_t, s_d, sthv_t, sthv_j, jb,
                               ROT_V, acc_t)  # fmt: skip
        s = _dot(q1, tl.trans(k1.to(dot_t)), PREC, acc_t, UPCAST) + _dot(
            q2, tl.trans(k2.to(dot_t)), PREC, acc_t, UPCAST
        )
        s = s * scale
        if ALIBI:
            s -= slope * (qm[:, None] - kn[None, :]).to(acc_t)
        s = tl.where((kn[None, :] <= qm[:, None]) & kmask[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        corr = tl.exp(m_i - m_new)
        l_i = l_i * corr + tl.sum(p, axis=1)
        acc1 = acc1 * corr[:, None] + _dot(p.to(dot_t), v1.to(dot_t), PREC, acc_t, UPCAST)
        acc2 = acc2 * corr[:, None] + _dot(p.to(dot_t), v2.to(dot_t), PREC, acc_t, UPCAST)
        m_i = m_new
    o1, o2 = acc1 / l_i[:, None], acc2 / l_i[:, None]
    m2 = qmask[:, None] & bmask[None, :]
    if ROT_V:  # back by R(-Theta^v_i)
        th = tl.load(thv_base + qm[:, None] * sthv_t + jb[None, :] * sthv_j, mask=m2, other=0.0).to(acc_t)
        c, sn = tl.cos(th), tl.sin(th)
        o1, o2 = o1 * c + o2 * sn, o2 * c - o1 * sn
    out_t = o_ptr.dtype.element_ty
    tl.store(o_ptr + base + qm[:, None] * s_t + e_col[None, :] * s_d, o1.to(out_t), mask=m2)
    tl.store(o_ptr + base + qm[:, None] * s_t + o_col[None, :] * s_d, o2.to(out_t), mask=m2)
    tl.store(lse_ptr + bh.to(tl.int64) * T + qm, m_i + tl.log(l_i), mask=qmask)


def _angle_args(theta, shape, dummy):
    """The angle tensor (or a placeholder) and its strides over (Nb, H, T, d/2), broadcast dims at stride 0."""
    if theta is None:
        return dummy, (0, 0, 0, 0)
    return theta, theta.expand(*shape).stride()


def _forward(q, k, v, theta, theta_v, slopes, scale: float, layout: str):
    """o (Nb, H, T, d) and the log-sum-exp (Nb, H, T), both in the accumulation dtype."""
    Nb, H, T, d = q.shape
    acc64 = q.dtype == torch.float64
    o = torch.empty_like(q, dtype=torch.float64 if acc64 else torch.float32)
    lse = torch.empty((Nb, H, T), dtype=torch.float64 if acc64 else torch.float32, device=q.device)
    if o.numel() == 0:
        return o, lse
    half = d // 2
    th, th_strides = _angle_args(theta, (Nb, H, T, half), q)
    thv, thv_strides = _angle_args(theta_v, (Nb, H, T, half), q)
    m = q if slopes is None else slopes.detach().to(torch.float32).contiguous()
    _forward_kernel[lambda meta: (triton.cdiv(T, meta["BM"]), Nb * H)](
        q, k, v, th, thv, m, o, lse, T, H, half, float(scale), *q.stride(), *th_strides, *thv_strides,
        ROT_QK=theta is not None, ROT_V=theta_v is not None, ALIBI=slopes is not None,
        INTERLEAVED=layout == "interleaved", ACC_64=acc64, PREC="ieee" if q.dtype.itemsize >= 4 else "tf32",
        UPCAST=interpreting() and q.dtype.itemsize < 4,
        BH=max(16, next_pow2(half)),
    )  # fmt: skip
    return o, lse


class _RotationAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, theta, theta_v, slopes, scale, layout):
        q, k, v = (t.contiguous() for t in (q, k, v))
        o, lse = _forward(q, k, v, theta, theta_v, slopes, scale, layout)
        ctx.save_for_backward(q, k, v, theta, theta_v, slopes, o, lse)
        ctx.scale, ctx.layout = scale, layout
        return o.to(q.dtype)

    @staticmethod
    def backward(ctx, grad_o):
        q, k, v, theta, theta_v, slopes, o, lse = ctx.saved_tensors
        work = torch.float64 if q.dtype == torch.float64 else torch.float32
        leaves = [t.detach().to(work).requires_grad_() for t in (q, k, v)]
        angles = [None if t is None else t.detach().requires_grad_() for t in (theta, theta_v)]
        with torch.enable_grad():
            qr, kr, vr = leaves
            if angles[0] is not None:
                cos, sin = torch.cos(angles[0]).to(work), torch.sin(angles[0]).to(work)
                qr, kr = rotate(qr, cos, sin, ctx.layout), rotate(kr, cos, sin, ctx.layout)
            o_t, do_t = o.to(work), grad_o.to(work)
            outs, grads = [], []
            if angles[1] is not None:
                cos_v, sin_v = torch.cos(angles[1]).to(work), torch.sin(angles[1]).to(work)
                vr = rotate(vr, cos_v, sin_v, ctx.layout)
                o_t, do_t = rotate(o_t, cos_v, sin_v, ctx.layout), rotate(do_t, cos_v, sin_v, ctx.layout)
                # o = R(-Theta^v) o~ with o~ held fixed: the output rotation's own share of dTheta^v
                outs.append(rotate(o_t.detach(), cos_v, sin_v, ctx.layout, inverse=True))
                grads.append(grad_o.to(work))
            dq, dk, dv = attention_core_backward(qr.detach(), kr.detach(), vr.detach(), o_t.detach(), do_t.detach(),
                                                 lse, slopes, ctx.scale)  # fmt: skip
            inputs = leaves + [a for a in angles if a is not None]
            got = torch.autograd.grad([qr, kr, vr, *outs], inputs, [dq, dk, dv, *grads], allow_unused=True)
        got = list(got[:3]) + _angle_grads(got[3:], angles)
        return (*(g.to(t.dtype) for g, t in zip(got[:3], (q, k, v))), *got[3:], None, None, None)


def _angle_grads(found, angles) -> list:
    """Gradients of (theta, theta_v), None where an angle tensor was absent."""
    found, out = list(found), []
    for a in angles:
        out.append(None if a is None else found.pop(0))
    return out


def rotation_attention(q, k, v, psi=None, psi_v=None, slopes=None, scale=None, layout="half"):
    """As ``reference.rotation_attention``: q, k, v (Nb, H, T, d); psi, psi_v (Nb or 1, H or 1, T, d/2)
    angle steps; slopes (H,) ALiBi (no gradient). The prefix sums run here in float64 (O(T d)); the
    rotation, the bias and the softmax run in the kernel."""
    q, k, v = checked("rotation_attention", q, k, v, psi, psi_v, slopes, layout)
    theta = None if psi is None else accumulate_angles(psi)
    theta_v = None if psi_v is None else accumulate_angles(psi_v)
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    return _RotationAttention.apply(q, k, v, theta, theta_v, slopes, scale, layout)
