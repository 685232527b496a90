"""PaTH attention (accumulated Householder transforms), pure torch.

Per token t a generalised Householder step H_t = I - beta_t w_t w_t^T (||w_t|| = 1, beta_t in (0, 2)).
Index convention (PaTH's own, which differs by one position from the SO(2) family, rotations spec §2.3):
the route j -> i accumulates the steps of positions j+1 .. i, applied to the key in time order:

    logit_ij = q_i^T H_i H_{i-1} ... H_{j+1} k_j     (j <= i; j = i: no step)
    out_i    = sum_{j<=i} softmax_j(scale * logit_ij) v_j          (values are not transported)

Chunked algorithm (chunk C), O(T^2 d + T^2 d^2 / C) time, no T x T x d tensor:
- inside each chunk a length-C loop carries every key forward through the chunk's steps (giving the
  intra-chunk logits and kR_j = H_{end-1}..H_{j+1} k_j), and a second loop carries every query backward
  (qL_i = H_{start} .. H_i q_i, so q_i^T H_i..H_start = qL_i^T);
- each chunk's full product P_c = H_{end-1} .. H_{start} is a d x d matrix;
- a loop over chunks pushes all earlier keys through P_c, so logit_ij = qL_i^T P_{c-1} .. P_{c'+1} kR_j.

``path_attention`` assembles the (T, T) logits and takes one softmax; ``path_attention_blocked`` takes the
softmax chunk by chunk inside that last loop (chunk c's queries against keys 0 .. (c+1)C - 1), so no T x T
tensor exists: memory linear in T without autograd (long-length evaluation), the same result.
"""

from __future__ import annotations

import torch

from ..checks import Signature, positive_int


def _checked(op: str, q, k, w, beta, v=None) -> list:
    """q, k, w: (Nb, H, T, d), beta: (Nb, H, T), v: (Nb, H, T, dv) checked, in their common dtype."""
    sig = Signature(op)
    for name, t in (("q", q), ("k", k), ("w", w)):
        sig.tensor(name, t, "Nb H T d")
    sig.tensor("beta", beta, "Nb H T")
    sig.tensor("v", v, "Nb H T dv")
    dtype = sig.common_dtype()
    return [None if t is None else t.to(dtype) for t in (q, k, w, beta, v)]


def _householder_rows(X: torch.Tensor, w: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """Apply H = I - beta w w^T to each row of X. X: (..., S, d); w: (..., d); beta: (...)."""
    return X - (beta[..., None, None] * (X @ w[..., :, None])) * w[..., None, :]


def _chunk_terms(q, k, w, beta, chunk: int):
    """Steps 1-3 on inputs padded to whole chunks (identity steps, zero vectors: after every real query).
    Returns per chunk c (lists of length nC): the intra-chunk logits (Nb, H, C, C), kR (keys carried to their
    chunk's end, (Nb, H, C, d)), qL (queries carried to their chunk's start) and P_c (Nb, H, d, d); and C."""
    Nb, Hh, T, d = q.shape
    C = min(chunk, T)
    nC = -(-T // C)
    pad = nC * C - T
    if pad:
        q, k, w = (torch.nn.functional.pad(t, (0, 0, 0, pad)) for t in (q, k, w))
        beta = torch.nn.functional.pad(beta, (0, pad))
    shp = (Nb, Hh, nC, C, d)
    qc, kc, wc = q.reshape(shp), k.reshape(shp), w.reshape(shp)
    bc = beta.reshape(Nb, Hh, nC, C)
    eye = torch.eye(C, dtype=q.dtype, device=q.device)
    # per-step views by unbind (indexing would allocate a full-size zero gradient per step in backward)
    w_t, b_t, q_t, k_t = wc.unbind(-2), bc.unbind(-1), qc.unbind(-2), kc.unbind(-2)
    # 1) keys forward through their chunk; intra-chunk logits row by row
    K = torch.zeros_like(kc)
    rows = []
    for t in range(C):
        K = _householder_rows(K, w_t[t], b_t[t])  # slots > t are still zero: H 0 = 0
        K = K + eye[t][:, None] * k_t[t].unsqueeze(-2)  # slot t = k_t (no step at j = i)
        rows.append((K @ q_t[t].unsqueeze(-1))[..., 0])  # (Nb, H, nC, C): logits of query t vs slots
    intra = torch.stack(rows, dim=-2)  # (Nb, H, nC, C_query, C_key)
    kR = K
    # 2) queries backward: qL_i = H_start .. H_i q_i
    Qm = qc
    for m in range(C - 1, -1, -1):
        moved = _householder_rows(Qm, w_t[m], b_t[m])
        sel = (torch.arange(C, device=q.device) >= m)[:, None]
        Qm = torch.where(sel, moved, Qm)
    qL = Qm
    # 3) chunk products P_c = H_{end-1} .. H_start  (d x d)
    P = torch.eye(d, dtype=q.dtype, device=q.device).expand(Nb, Hh, nC, d, d)
    for m in range(C):
        wm, bm = w_t[m], b_t[m]
        P = P - bm[..., None, None] * wm[..., :, None] * (wm[..., None, :] @ P)
    return intra.unbind(2), kR.unbind(2), qL.unbind(2), P.unbind(2), C


def _carried_keys(Kprop, c: int, kR_c, P_c):
    """Keys of chunks < c carried to the start of chunk c, (Nb, H, c*C, d), from those of chunk c - 1."""
    return kR_c[0] if Kprop is None else torch.cat((Kprop @ P_c[c - 1].transpose(-1, -2), kR_c[c - 1]), dim=2)


def path_logits(q: torch.Tensor, k: torch.Tensor, w: torch.Tensor, beta: torch.Tensor, chunk: int = 32) -> torch.Tensor:
    """Unscaled, unmasked-above-diagonal logits q_i^T H_i..H_{j+1} k_j. q, k, w: (Nb, H, T, d); beta: (Nb, H, T).
    Returns (Nb, H, T, T) with zeros above the diagonal."""
    positive_int("path_logits", "chunk", chunk)
    q, k, w, beta, _ = _checked("path_logits", q, k, w, beta)
    Nb, Hh, T, d = q.shape
    if T == 0:
        return q.new_zeros(Nb, Hh, 0, 0)
    intra_c, kR_c, qL_c, P_c, C = _chunk_terms(q, k, w, beta, chunk)
    nC = len(intra_c)
    # 4) logits between chunks
    row_blocks = []
    Kprop = None  # keys of chunks < c, carried to the start of chunk c: (Nb, H, c*C, d)
    for c in range(nC):
        parts = []
        if c > 0:
            Kprop = _carried_keys(Kprop, c, kR_c, P_c)
            parts.append(qL_c[c] @ Kprop.transpose(-1, -2))
        parts.append(intra_c[c])
        if c < nC - 1:
            parts.append(q.new_zeros(Nb, Hh, C, (nC - 1 - c) * C))
        row_blocks.append(torch.cat(parts, dim=-1))
    S = torch.cat(row_blocks, dim=-2)
    return torch.tril(S[:, :, :T, :T])


def path_attention_blocked(q, k, v, w, beta, scale: float | None = None, chunk: int = 32) -> torch.Tensor:
    """``path_attention`` with the softmax taken one chunk of queries at a time against all earlier keys:
    the (T, T) logits are never formed, so without autograd the peak memory is O(H T (chunk + d)) (the
    carried keys, one block of logits) instead of O(H T^2). Same arguments and result (up to rounding)."""
    positive_int("path_attention_blocked", "chunk", chunk)
    q, k, w, beta, v = _checked("path_attention_blocked", q, k, w, beta, v)
    T, d = q.shape[-2:]
    if T == 0:
        return v.clone()
    scale = d**-0.5 if scale is None else scale
    intra_c, kR_c, qL_c, P_c, C = _chunk_terms(q, k, w, beta, chunk)
    vpad = torch.nn.functional.pad(v, (0, 0, 0, len(intra_c) * C - T))
    above = torch.ones(C, C, dtype=torch.bool, device=q.device).triu(1)
    outs, Kprop = [], None
    for c in range(len(intra_c)):
        # scaled, then masked (as path_attention does); padded keys sit above every real query too
        logits = (intra_c[c] * scale).masked_fill(above, float("-inf"))
        if c > 0:
            Kprop = _carried_keys(Kprop, c, kR_c, P_c)
            logits = torch.cat(((qL_c[c] @ Kprop.transpose(-1, -2)) * scale, logits), dim=-1)
        outs.append(torch.softmax(logits, dim=-1) @ vpad[..., : (c + 1) * C, :])
    return torch.cat(outs, dim=-2)[..., :T, :]


def path_attention(q, k, v, w, beta, scale: float | None = None, chunk: int = 32) -> torch.Tensor:
    """Causal PaTH attention. q, k, w: (Nb, H, T, d); v: (Nb, H, T, dv); beta: (Nb, H, T); chunk >= 1.
    Returns (Nb, H, T, dv) in the inputs' common dtype."""
    positive_int("path_attention", "chunk", chunk)
    q, k, w, beta, v = _checked("path_attention", q, k, w, beta, v)
    T, d = q.shape[-2:]
    if T == 0:
        return v.clone()
    scale = d**-0.5 if scale is None else scale
    logits = path_logits(q, k, w, beta, chunk) * scale
    mask = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
    return torch.softmax(logits.masked_fill(mask, float("-inf")), dim=-1) @ v
