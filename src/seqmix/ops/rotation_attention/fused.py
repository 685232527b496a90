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
* ALiBi on CUDA (bf16, fp16, float32): FlexAttention with the score_mod ``score - m_h (q_idx - kv_idx)``
  (in the kernel's float32 score dtype) and a causal BlockMask built from its block lists (cached per length
  and device; create_block_mask evaluates all T x T positions). ``_alibi_flex`` (score_mod closure plus the
  flex call) is compiled lazily on the first CUDA call with ``torch.compile(dynamic=True)``: lengths are
  symbolic from the start (the default compiles static, then again on the second length). Dynamo still
  specialises sizes 0 and 1, so q, k, v are zero-padded to whole 128-row blocks, two at least; then one
  compile serves every length (H200, 2026-11-27: 6 graphs over 3 dtypes/head dims, 15 lengths, 4 shapes;
  flex falls back to a dense eager path once Dynamo's recompile limit is hit). float64, which Inductor's
  flex template does not compile, takes the blocked path below.
* ALiBi on CPU (and float64 on CUDA): a query-blocked attention written here (``_BlockedAlibi``): rows in
  blocks of ``_BLOCK``, at most (block x T) logits per (batch, head) alive at once, the row log-sum-exp kept;
  its backward recomputes the blocks from it (``recompute.attention_core_backward``, the Triton backend's
  backward). Not FlexAttention: in torch 2.13's CPU build eager flex_attention refuses backward
  ("FlexAttention does not support backward on CPU"), and a compiled one needs an Inductor C++ build of
  tens of seconds per shape. For bf16/fp16 inputs it computes in float32 throughout (a CPU has no faster
  half-precision matmul) and returns the input dtype.

Dtypes follow the reference: q, k, v are cast to their common dtype, cos/sin once to it, rotations and the
result are in it; SDPA and flex run their matmuls in it and their softmax statistics in float32 (float64
for float64 inputs). slopes are constants (detached). In bf16 the angle gradients (psi, psi_v) carry the
error of bf16 rotations, as the reference's do: at T = 300-1000 both are 4e-2 to 1e-1 from the float64
reference (H200, 2026-11-27), while outputs and q, k, v gradients stay under 1e-2.

Measured fwd+bwd, bf16, (Nb, H, T, d) = (4, 16, 4096, 128), H200: reference 20.8 / 24.4 / 35.3 ms, fused
2.1 / 4.5 / 10.9 ms (NoPE / ALiBi / rotated q, k, v: the O(T d) float64 angle chain and rotations, unfused,
take most of the fused time there). ALiBi fwd+bwd at T = 65536 (1 x 8 heads, d 64): 264 MiB beyond q, k, v.
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

from ..rotary.reference import accumulate_angles, cos_sin, rotate
from .recompute import attention_core_backward
from .reference import checked

_BLOCK = 128  # query rows per block in the CPU ALiBi path: (Nb, H, 128, T) logits at a time
_FLEX_BLOCK = 128  # create_block_mask's default block size


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
    """The causal BlockMask for T a multiple of ``_FLEX_BLOCK``, broadcast over batch and heads, built from
    its block lists: query block i reads key blocks 0 .. i-1 whole and block i through the mask. Not
    create_block_mask, which evaluates the mask at all T x T positions: 10 GiB transient at T = 32768 on an
    H200 (2026-11-27). Built once per length."""
    from torch.nn.attention.flex_attention import BlockMask

    n = T // _FLEX_BLOCK
    blocks = torch.arange(n, device=device, dtype=torch.int32)
    diagonal = blocks.view(1, 1, n, 1).expand(1, 1, n, n).contiguous()  # only column 0 is read
    below = blocks.view(1, 1, 1, n).expand(1, 1, n, n).contiguous()  # row i reads its first i entries
    return BlockMask.from_kv_blocks(
        torch.ones(1, 1, n, device=device, dtype=torch.int32),
        diagonal,
        blocks.view(1, 1, n),
        below,
        BLOCK_SIZE=_FLEX_BLOCK,
        mask_mod=_causal,
    )


def _alibi_flex(q, k, v, slopes, block_mask, scale: float):
    """FlexAttention with the ALiBi score_mod; q, k, v (Nb, H, T, d), slopes (H,) float32."""
    from torch.nn.attention.flex_attention import flex_attention

    def alibi(score, b, h, q_idx, kv_idx):
        return score - slopes[h] * (q_idx - kv_idx)

    return flex_attention(q, k, v, score_mod=alibi, block_mask=block_mask, scale=scale)


@functools.cache
def _compiled_alibi_flex():
    """The compiled ``_alibi_flex``, built on first CUDA use (compiling costs seconds; CPU never needs it)."""
    return torch.compile(_alibi_flex, dynamic=True)


def _alibi_core(q, k, v, slopes, scale: float):
    """Causal attention with the ALiBi bias: flex on CUDA, the blocked path elsewhere (and for float64,
    which Inductor's flex template does not compile)."""
    # FlexAttention's compiled kernel refuses head widths below 16 (seen on an H200, 2026-11-27: d = 8 failed to
    # compile); those take the blocked path too
    if q.device.type != "cuda" or q.dtype == torch.float64 or q.shape[-1] < 16:
        return _BlockedAlibi.apply(q, k, v, slopes, scale)
    return _padded_flex(_compiled_alibi_flex(), q, k, v, slopes, scale)


def _padded_flex(attend, q, k, v, slopes, scale: float):
    """``attend`` (``_alibi_flex`` or its compiled form) on q, k, v zero-padded to whole blocks, two at least;
    returns the first T rows (Nb, H, T, d)."""
    T = q.shape[-2]
    padded = max(2 * _FLEX_BLOCK, -(-T // _FLEX_BLOCK) * _FLEX_BLOCK)
    if padded != T:
        # Zero rows at the end change no real row (causal: row i < T reads keys j <= i) and are cut off after.
        # Whole blocks, two at least, keep the compiled graph's block counts symbolic: Dynamo specialises sizes
        # 0 and 1, so lengths up to one block would each need their own compile and soon exhaust the
        # recompile limit, after which flex runs eagerly (a dense T x T math path).
        q, k, v = (F.pad(t, (0, 0, 0, padded - T)) for t in (q, k, v))
    m = slopes.detach().to(torch.float32).contiguous()
    out = attend(q, k, v, m, _causal_block_mask(padded, q.device), scale)
    return out[..., :T, :]


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
        cos_v, sin_v = (cos, sin) if psi_v is psi else cos_sin(accumulate_angles(psi_v), q.dtype)
        v = rotate(v, cos_v, sin_v, layout)
    if slopes is None:
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)
    else:
        out = _alibi_core(q, k, v, slopes, scale)
    if psi_v is not None:
        out = rotate(out, cos_v, sin_v, layout, inverse=True)
    return out
