"""The backward of rotation attention by recomputation in query blocks, pure torch (what the Triton
forward's autograd Function and the fused backend's CPU ALiBi path call): no T x T matrix, at most
(block x T) logits per (batch, head).

Given the rotated q, k, v (qr, kr, vr), the un-rotated-back output o~ and its gradient do~, and the
forward's log-sum-exp per row (lse), for each block of query rows I:
    P_I = exp(scale qr_I kr^T + bias - lse_I)     (causal: keys j <= max I only)
    dvr += P_I^T do~_I,   dP = do~_I vr^T,   dS = P_I (dP - delta_I),  delta_i = do~_i . o~_i
    dqr_I = scale dS kr,  dkr += scale dS^T qr_I
"""

from __future__ import annotations

import torch


def attention_core_backward(qr, kr, vr, o_t, do_t, lse, slopes, scale: float, block: int = 128):
    """qr, kr, vr, o_t, do_t: (Nb, H, T, d); lse: (Nb, H, T); slopes: (H,) or None.
    Returns (dqr, dkr, dvr), each (Nb, H, T, d), in the dtype of qr."""
    T = qr.shape[-2]
    delta = (do_t * o_t).sum(-1)
    dq, dk, dv = torch.empty_like(qr), torch.zeros_like(kr), torch.zeros_like(vr)
    pos = torch.arange(T, device=qr.device)
    for i0 in range(0, T, block):
        i1 = min(T, i0 + block)
        rows, keys = pos[i0:i1], pos[:i1]
        s = (qr[..., i0:i1, :] @ kr[..., :i1, :].transpose(-1, -2)) * scale
        if slopes is not None:
            s = s - slopes.to(s.dtype)[:, None, None] * (rows[:, None] - keys[None, :]).to(s.dtype)
        s = s.masked_fill(keys[None, :] > rows[:, None], float("-inf"))
        p = torch.exp(s - lse[..., i0:i1, None])
        dv[..., :i1, :] += p.transpose(-1, -2) @ do_t[..., i0:i1, :]
        ds = p * (do_t[..., i0:i1, :] @ vr[..., :i1, :].transpose(-1, -2) - delta[..., i0:i1, None])
        dq[..., i0:i1, :] = (ds @ kr[..., :i1, :]) * scale
        dk[..., :i1, :] += (ds.transpose(-1, -2) @ qr[..., i0:i1, :]) * scale
    return dq, dk, dv
