"""Rotation attention (see reference.py) on torch's own attention kernels: the "fused" backend.

The rotations are relative (score_ij = q_i^T R(Theta_j - Theta_i) k_j), so they factor out of the attention:

    qr, kr = R(Theta) q, R(Theta) k        vr = R(Theta^v) v      (only with psi_v)
    o~     = causal_softmax(scale qr kr^T - m_h (i - j)) vr       (the ALiBi term only with slopes)
    out    = R(-Theta^v) o~

The rotations are O(T d) elementwise torch ops (``rotary.accumulate_angles``, ``cos_sin``, ``rotate``, the
same calls as the reference, so psi and psi_v get their gradients from autograd). The core o~ runs on:

* no ALiBi, any device: ``F.scaled_dot_product_attention(..., is_causal=True)``. On CUDA torch picks flash
  attention (bf16/fp16) or memory-efficient attention; on CPU its flash kernel (float32, float64, bf16, with
  backward). No T x T tensor on either device.
* ALiBi on CUDA: FlexAttention with the score_mod ``score - m_h (q_idx - kv_idx)`` (evaluated in the kernel's
  float32 / float64 score dtype) and a causal block mask (``create_block_mask``, cached per length and
  device). ``_alibi_flex`` (the score_mod closure plus the flex call) is compiled lazily on the first CUDA
  call with ``torch.compile(dynamic=True)``: symbolic lengths from the start, so a new T reuses the kernel
  instead of recompiling (the default would compile once static and recompile on the second length).
* ALiBi on CPU: a query-blocked attention written here (``_BlockedAlibi``): rows in blocks of ``_BLOCK``,
  at most (block x T) logits per (batch, head) alive at once, the row log-sum-exp kept; its backward
  recomputes the blocks from that (``recompute.attention_core_backward``, the Triton backend's backward).
  Not FlexAttention: in torch 2.13's CPU build eager flex_attention refuses backward ("FlexAttention does not
  support backward on CPU"), and a compiled one needs an Inductor C++ build of tens of seconds per shape.

Dtypes follow the reference: q, k, v are cast to their common dtype, cos/sin once to it, the matmuls and the
result are in it. The softmax statistics run as torch's kernels run them: float32 for bf16/fp16 (SDPA,
flex, and the blocked path's logits, exp and sums), float64 for float64. slopes are constants (detached).
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

from ..rotary import accumulate_angles, cos_sin, rotate
from .recompute import attention_core_backward
from .reference import checked

_BLOCK = 128  # query rows per block in the CPU ALiBi path: (Nb, H, 128, T) logits at a time


def _work_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype of softmax statistics: float64 stays, everything else runs them in float32."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def _blocked_forward(q, k, v, slopes, scale: float, block: int = _BLOCK):
    """q, k, v: (Nb, H, T, d) in the work dtype; slopes (H,) in it. Returns o~ (Nb, H, T, d) and the row
    log-sum-exp (Nb, H, T). Keys past a block's last row are never read (causal)."""
    T = q.shape[-2]
    out, lse = torch.empty_like(q), q.new_empty(q.shape[:-1])
    pos = torch.arange(T, device=q.device)
    m = slopes[:, None, None]
    for i0 in range(0, T, block):
        i1 = min(T, i0 + block)
        rows, keys = pos[i0:i1], pos[:i1]
        dist = (rows[:, None] - keys[None, :]).to(q.dtype)
        s = (q[..., i0:i1, :] @ k[..., :i1, :].transpose(-1, -2)) * scale - m * dist
        s = s.masked_fill(dist < 0, float("-inf"))
        top = s.amax(-1, keepdim=True)  # finite: key 0 is visible to every row
        p = torch.exp(s - top)
        total = p.sum(-1, keepdim=True)
        out[..., i0:i1, :] = (p @ v[..., :i1, :]) / total
        lse[..., i0:i1] = (top + torch.log(total)).squeeze(-1)
    return out, lse


class _BlockedAlibi(torch.autograd.Function):
    """o~ = causal_softmax(scale q k^T - m_h (i - j)) v by query blocks; nothing T x T saved or formed."""

    @staticmethod
    def forward(ctx, q, k, v, slopes, scale):
        work = _work_dtype(q.dtype)
        qw, kw, vw = (t.to(work) for t in (q, k, v))
        m = slopes.detach().to(work)
        o, lse = _blocked_forward(qw, kw, vw, m, scale)
        ctx.save_for_backward(q, k, v, m, o, lse)
        ctx.scale = scale
        return o.to(q.dtype)

    @staticmethod
    def backward(ctx, grad_o):
        q, k, v, m, o, lse = ctx.saved_tensors
        work = o.dtype
        dq, dk, dv = attention_core_backward(
            q.to(work), k.to(work), v.to(work), o, grad_o.to(work), lse, m, ctx.scale, block=_BLOCK
        )
        return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype), None, None


def _causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


@functools.lru_cache(maxsize=16)
def _causal_block_mask(T: int, device: torch.device):
    """The causal BlockMask for length T, broadcast over batch and heads (built once per length)."""
    from torch.nn.attention.flex_attention import create_block_mask

    return create_block_mask(_causal, None, None, T, T, device=device)


def _alibi_flex(q, k, v, slopes, block_mask, scale: float):
    """FlexAttention with the ALiBi score_mod; slopes (H,) in the score dtype (float32, or float64)."""
    from torch.nn.attention.flex_attention import flex_attention

    def alibi(score, b, h, q_idx, kv_idx):
        return score - slopes[h] * (q_idx - kv_idx)

    return flex_attention(q, k, v, score_mod=alibi, block_mask=block_mask, scale=scale)


@functools.cache
def _compiled_alibi_flex():
    """The compiled ``_alibi_flex``, built on first CUDA use (compiling costs seconds; CPU never needs it)."""
    return torch.compile(_alibi_flex, dynamic=True)


def _alibi_core(q, k, v, slopes, scale: float):
    """Causal attention with the ALiBi bias: flex on CUDA, the blocked path elsewhere."""
    if q.device.type != "cuda":
        return _BlockedAlibi.apply(q, k, v, slopes, scale)
    m = slopes.detach().to(_work_dtype(q.dtype)).contiguous()
    mask = _causal_block_mask(q.shape[-2], q.device)
    return _compiled_alibi_flex()(q, k, v, m, mask, scale)


def rotation_attention(q, k, v, psi=None, psi_v=None, slopes=None, scale=None, layout="half"):
    """As ``reference.rotation_attention``: q, k, v (Nb, H, T, d); psi, psi_v angle steps (Nb or 1, H or 1,
    T, d/2) or None; slopes ALiBi m_h (H,) or None (no gradient); scale default d^-1/2. Returns (Nb, H, T, d)
    in the common dtype of q, k, v. Gradients reach q, k, v, psi and psi_v."""
    q, k, v = checked("rotation_attention", q, k, v, psi, psi_v, slopes, layout)
    T, d = q.shape[-2:]
    if T == 0:
        return v.clone()
    scale = d**-0.5 if scale is None else float(scale)
    if psi is not None:
        cos, sin = cos_sin(accumulate_angles(psi), q.dtype)
        q, k = rotate(q, cos, sin, layout), rotate(k, cos, sin, layout)
    if psi_v is not None:
        cos_v, sin_v = cos_sin(accumulate_angles(psi_v), q.dtype)
        v = rotate(v, cos_v, sin_v, layout)
    if slopes is None:
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)
    else:
        out = _alibi_core(q, k, v, slopes, scale)
    if psi_v is not None:
        out = rotate(out, cos_v, sin_v, layout, inverse=True)
    return out
