"""Mamba2 SSD in the chunked matmul form, pure torch, built for cuBLAS tensor cores (the "fused" backend).

Same map, signature, argument checks and dtype rule as ``reference.ssd_chunked`` (see reference.py for the
equations); results equal to rounding. Chunk Q, nC = ceil(L / Q) chunks, G groups of R = H / G heads. Per
chunk c, with the discretised input X_s = dt_s x_s (input dtype, as in the reference) and log decays
la_s = dt_s A (float32):

    intra:   y_t  = sum_{s <= t} (C_t . B_s) exp(seg[t, s]) X_s          one (Q, Q) @ (Q, P) matmul per head
    states:  st_c = sum_s exp(seg[Q-1, s]) X_s B_s^T                      one (R P, Q) @ (Q, N) per group
    passing: S_c  = sum_{j <= c} exp(sum_{j <= k < c} T_k) z_j            one (nC, K) @ (K, P N) per head
    inter:   y_t += exp(cs_t) C_t S_c^T                                   one (Q, N) @ (N, P) per head

where seg[t, s] = sum_{s < r <= t} la_r and cs_t = sum_{r <= t} la_r within a chunk, T_k the log decay of
chunk k, z_0 = h0 and z_{j+1} = st_j: the states entering all chunks come from one lower-triangular decay
matrix (K = nC + 1 columns with h0, nC without, padded to a multiple of 8); its row nC, the last state, is
formed only when it is returned.

What this changes against the reference (forward + backward 12.2 to 13.3 ms on an H200 at
(Nb, L, H, P, N, G) = (8, 2048, 24, 64, 128, 1) in bf16; torch.profiler on CPU put half its time in bmm):
- C B^T is one (Q, N) @ (N, Q) matmul per group, broadcast to the group's heads as a view; the reference
  copies B and C per head (``repeat_interleave``) and forms C B^T H / G times over.
- Head-major (..., Q, Q) decay tables, so every product is a plain batched matmul; the reference's tables keep
  heads last, which on CPU runs bmm on batch-innermost strides (~40x slower than contiguous batches).
- The inter-chunk recurrence is one matmul instead of a Python loop over chunks, whose backward also wrote a
  full-size zero gradient of the chunk states per chunk (SelectBackward).
- Causality is imposed on the small per-group C B^T (``tril``) instead of masking each per-head decay table,
  and the decay tables get a hand-written backward (``_Scores``) instead of autograd's chain of copies.
- Exponents and segment sums in float32 where the reference, given bf16, computes them in bf16.

Precision: matmul operands are in the input dtype (bf16 on a GPU: tensor cores, float32 accumulation inside
torch); the log decays, their segment sums, cumulative sums and exponentials are float32 (float64 for float64
inputs), and each decay is cast to the input dtype only as a matmul operand. Segment sums are added up from
their own terms (``segsum``), never as differences of cumulative sums, so steps dt |A| up to 20 stay accurate
to 1e-4 in float32 (tests/ops/test_ssd_fused.py). All exponents are <= 0.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..checks import positive_int
from .reference import _checked


def segsum(la: torch.Tensor) -> torch.Tensor:
    """seg[..., t, s] = sum_{s < r <= t} la[..., r] (0 for t <= s), each a sum of its own terms in the order
    of the reference's ``_segsum``: la_r placed in rows r > s of column s, summed down the rows.
    la: (..., Q) -> (..., Q_t, Q_s)."""
    Q = la.shape[-1]
    below = torch.ones(Q, Q, dtype=torch.bool, device=la.device).tril(-1)  # (r, s): r > s
    terms = torch.where(below, la.unsqueeze(-1), torch.zeros((), dtype=la.dtype, device=la.device))
    return torch.cumsum(terms, dim=-2)


class _Scores(torch.autograd.Function):
    """scores = tril(C B^T) * exp(seg), the per-head decay of each (t, s) pair on its group's C_t . B_s, with
    a backward that reads the (Q, Q) tables a few times instead of autograd's chain through ``segsum``.

    Backward, from g = dL/dscores: gE = g * exp(seg) gives dL/d(C B^T) (summed over the group's heads) and
    dseg = gE * C B^T; since seg[t, s] = sum_{s < r <= t} la_r, dL/dla_r = sum_{t >= r > s} dseg[t, s]:
    a cumulative sum over t >= r, then a masked sum over s < r. Only C B^T and exp(seg) (input dtype) are
    saved, not the float32 segment sums."""

    @staticmethod
    def forward(ctx, la, CB, heads):
        """la: (Nb, H, nC, Q) float32/64; CB: (Nb, G, nC, Q, Q) input dtype, causal -> (Nb, G, R, nC, Q, Q)."""
        Nb, H, nC, Q = la.shape
        E = segsum(la).exp_().to(CB.dtype).view(Nb, CB.shape[1], heads, nC, Q, Q)
        ctx.save_for_backward(CB, E)
        return CB.unsqueeze(2) * E

    @staticmethod
    def backward(ctx, g):
        CB, E = ctx.saved_tensors
        gE = g * E
        acc = torch.promote_types(CB.dtype, torch.float32)
        # Both axes reversed (t' = Q-1-t, s' = Q-1-s), so that the sum over t >= r is a cumulative sum down
        # the rows (CUDA scans the outer axis fast, the innermost one ~20x slower) and s < r becomes s' > r'.
        rev = gE.flip(-2, -1) * CB.flip(-2, -1).to(acc).unsqueeze(2)  # dseg reversed, 0 where s' <= t'
        rows = rev.flatten(1, 2).cumsum_(-2).triu_(1)  # [r', s'] = sum_{t >= r} dseg[t, s], kept where s < r
        dla = rows.sum(-1).flip(-1)  # (Nb, H, nC, Q); 0 for the first step of a chunk, in no segment
        return dla, gE.sum(2), None


def _passing_matrix(T: torch.Tensor) -> torch.Tensor:
    """M[..., c, j] = exp(sum_{j <= k < c} T_k) for j <= c, else 0: the decay from the end of chunk j - 1
    (j = 0: the initial state) to the start of chunk c (c = nC: the end). T: (..., nC) -> (..., nC+1, nC+1)."""
    n = T.shape[-1] + 1
    seg = segsum(F.pad(T, (1, 0)))  # entry r of the padded sums is T_{r-1}
    upper = torch.ones(n, n, dtype=torch.bool, device=T.device).triu(1)
    return torch.exp(seg.masked_fill(upper, float("-inf")))


def ssd(
    x: torch.Tensor,
    dt: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    D: torch.Tensor | None = None,
    chunk: int = 64,
    h0: torch.Tensor | None = None,
    return_state: bool = False,
):
    """x: (Nb, L, H, P); dt: (Nb, L, H) > 0; A: (H,) < 0; B, C: (Nb, L, G, N); D: (H,) or None;
    h0: (Nb, H, P, N) or None. Returns y: (Nb, L, H, P) (and the last state (Nb, H, P, N))."""
    positive_int("ssd", "chunk", chunk)
    x, dt, A, B, C, D, h0 = _checked("ssd", x, dt, A, B, C, D, h0)
    Nb, L, H, P = x.shape
    G, N = B.shape[2], B.shape[3]
    if L == 0:  # no steps: an empty output, the state is the initial one
        s = h0 if h0 is not None else x.new_zeros(Nb, H, P, N)
        return (x * dt.unsqueeze(-1), s) if return_state else x * dt.unsqueeze(-1)
    dtype, R = x.dtype, H // G
    acc = torch.promote_types(dtype, torch.float32)  # exponents: float32, float64 for float64 inputs
    Q = min(chunk, L)
    nC = -(-L // Q)
    pad = nC * Q - L
    X, la = x * dt.unsqueeze(-1), dt.to(acc) * A.to(acc)  # discretised input, log decay
    if pad:  # padded steps: decay 1 (log 0), input 0
        X = F.pad(X, (0, 0, 0, 0, 0, pad))
        la = F.pad(la, (0, 0, 0, pad))
        B = F.pad(B, (0, 0, 0, 0, 0, pad))
        C = F.pad(C, (0, 0, 0, 0, 0, pad))
    la = la.reshape(Nb, nC, Q, H).permute(0, 3, 1, 2).contiguous()  # (Nb, H, nC, Q)
    cs = torch.cumsum(la, dim=-1)  # (Nb, H, nC, Q): from the chunk start, a sum of its own terms
    # to the chunk end: sum_{s < r < Q} la_r, summed from the end (the reference sums these from s + 1 on)
    to_end = F.pad(la[..., 1:].flip(-1).cumsum(-1).flip(-1), (0, 1))

    # group-major views (Nb, G, nC, Q, N); C B^T once per group, causal mask on this small tensor
    Bg = B.reshape(Nb, nC, Q, G, N).permute(0, 3, 1, 2, 4)
    Cg = C.reshape(Nb, nC, Q, G, N).permute(0, 3, 1, 2, 4)
    CB = torch.matmul(Cg, Bg.transpose(-1, -2)).tril()  # (Nb, G, nC, Q_t, Q_s)
    scores = _Scores.apply(la, CB, R)  # (Nb, G, R, nC, Q_t, Q_s)
    Xh = X.reshape(Nb, nC, Q, G, R, P).permute(0, 3, 4, 1, 2, 5)  # (Nb, G, R, nC, Q, P)
    y = torch.matmul(scores, Xh)  # (Nb, G, R, nC, Q, P)

    # chunk states from a zero start, all R heads of a group in one (R P, Q) @ (Q, N) product
    to_end = torch.exp(to_end).permute(0, 2, 3, 1).to(dtype)  # (Nb, nC, Q, H)
    Xs = (X.reshape(Nb, nC, Q, H, P) * to_end.unsqueeze(-1)).reshape(Nb, nC, Q, G, R * P)
    st = torch.matmul(Xs.permute(0, 1, 3, 4, 2), Bg.transpose(1, 2))  # (Nb, nC, G, R P, Q) @ (.., Q, N)
    z = st.reshape(Nb, nC, H, P * N).transpose(1, 2)  # (Nb, H, nC, P N)

    # state passing for all chunks at once: the states entering the chunks, and the last one only if asked.
    # z becomes head-major in one copy; its rows padded to a multiple of 8 keep the decay matrix's rows
    # 16-byte aligned, which cuBLAS needs for its tensor-core kernels (else a slow fallback, 4x here).
    M = _passing_matrix(cs[..., -1])  # (Nb, H, nC+1, nC+1)
    zs = [z] if h0 is None else [h0.reshape(Nb, H, 1, P * N), z]
    M = M[..., 1:] if h0 is None else M  # no initial state: drop its column
    extra = -M.shape[-1] % 8
    if extra:
        zs.append(z.new_zeros(Nb, H, extra, P * N))
    z, M = torch.cat(zs, dim=2), F.pad(M, (0, extra)).to(dtype)
    S = torch.matmul(M[..., :nC, :], z).view(Nb, G, R, nC, P, N)

    # output from the entering states, C broadcast over the group's heads
    y_in = torch.matmul(Cg.unsqueeze(2), S.transpose(-1, -2))  # (Nb, G, R, nC, Q, P)
    decay_in = torch.exp(cs).to(dtype).view(Nb, G, R, nC, Q, 1)
    y = torch.addcmul(y, decay_in, y_in).permute(0, 3, 4, 1, 2, 5).reshape(Nb, nC * Q, H, P)[:, :L]
    # y is a view with heads outermost; the first operand of the sum sets its output's (token-major) layout
    y = D[:, None] * x + y if D is not None else y.contiguous()
    if not return_state:
        return y
    return y, torch.matmul(M[..., nC:, :], z).view(Nb, H, P, N)
