"""Mamba2's scalar-identity state-space duality (SSD), pure torch: a chunked form and a recurrent form.

Per head h (state N, head dim P), A_h a negative real scalar (sessa spec §2.5):

    h_t = exp(dt_t A_h) h_{t-1} + dt_t x_t B_t^T       h: (P, N)
    y_t = h_t C_t + D_h x_t

B_t, C_t: (N,) shared by the H / G heads of each of G groups.

Chunked form (chunk Q): inside a chunk the map is the masked quadratic form
Y = (L o C B^T) (dt x) with L[t, s] = exp(sum_{s < r <= t} dt_r A) for s <= t; between chunks one P x N state
per head is carried. Because A is a scalar per head, L is only (Q, Q) per head, which is what makes SSD
cheap compared with a diagonal-A scan. Exponents are differences of within-chunk cumulative sums, always
<= 0, so nothing overflows.
"""

from __future__ import annotations

import torch


def _expand_groups(M: torch.Tensor, H: int) -> torch.Tensor:
    """(Nb, L, G, N) -> (Nb, L, H, N): head h reads group h // (H / G)."""
    G = M.shape[2]
    return M.repeat_interleave(H // G, dim=2)


def ssd_chunked(
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
    Nb, L, H, P = x.shape
    Bh, Ch = _expand_groups(B, H), _expand_groups(C, H)
    N = Bh.shape[-1]
    Q = min(chunk, L)
    nC = -(-L // Q)
    pad = nC * Q - L
    X, la = x * dt.unsqueeze(-1), dt * A  # discretised input and log decay
    if pad:  # padded steps: decay 1 (log 0), input 0
        X = torch.nn.functional.pad(X, (0, 0, 0, 0, 0, pad))
        la = torch.nn.functional.pad(la, (0, 0, 0, pad))
        Bh = torch.nn.functional.pad(Bh, (0, 0, 0, 0, 0, pad))
        Ch = torch.nn.functional.pad(Ch, (0, 0, 0, 0, 0, pad))
    X = X.reshape(Nb, nC, Q, H, P)
    Bc, Cc = Bh.reshape(Nb, nC, Q, H, N), Ch.reshape(Nb, nC, Q, H, N)
    cs = torch.cumsum(la.reshape(Nb, nC, Q, H), dim=2)  # (Nb, nC, Q, H)
    # intra-chunk: L[t, s] = exp(cs_t - cs_s) for s <= t
    diff = cs.unsqueeze(3) - cs.unsqueeze(2)  # (Nb, nC, Q_t, Q_s, H)
    causal = torch.ones(Q, Q, dtype=torch.bool, device=x.device).tril()[:, :, None]
    Lmat = torch.exp(torch.where(causal, diff, torch.full_like(diff, float("-inf"))))
    scores = torch.einsum("bctHn,bcsHn->bctsH", Cc, Bc) * Lmat
    y = torch.einsum("bctsH,bcsHp->bctHp", scores, X)
    # state each chunk produces from a zero start: sum_s exp(cs_end - cs_s) X_s B_s^T
    to_end = torch.exp(cs[:, :, -1:] - cs)  # (Nb, nC, Q, H)
    states = torch.einsum("bcsH,bcsHp,bcsHn->bcHpn", to_end, X, Bc)
    # carry across chunks
    s = torch.zeros(Nb, H, P, N, dtype=X.dtype, device=x.device) if h0 is None else h0.to(X.dtype)
    entering = []
    for c in range(nC):
        entering.append(s)
        s = torch.exp(cs[:, c, -1])[:, :, None, None] * s + states[:, c]
    S = torch.stack(entering, dim=1)  # (Nb, nC, H, P, N)
    y = y + torch.einsum("bctHn,bcHpn,bctH->bctHp", Cc, S, torch.exp(cs))
    y = y.reshape(Nb, nC * Q, H, P)[:, :L]
    if D is not None:
        y = y + D[:, None] * x
    return (y, s) if return_state else y


def ssd_step(
    state: torch.Tensor,
    x: torch.Tensor,
    dt: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    D: torch.Tensor | None = None,
):
    """One step. state: (Nb, H, P, N); x: (Nb, H, P); dt: (Nb, H); B, C: (Nb, G, N).
    Returns (y: (Nb, H, P), new state)."""
    H = x.shape[1]
    Bh, Ch = B.repeat_interleave(H // B.shape[1], dim=1), C.repeat_interleave(H // C.shape[1], dim=1)
    state = torch.exp(dt * A)[:, :, None, None] * state + (dt[:, :, None] * x)[..., None] * Bh[:, :, None, :]
    y = (state * Ch[:, :, None, :]).sum(-1)
    if D is not None:
        y = y + D[:, None] * x
    return y, state


def ssd_recurrent(x, dt, A, B, C, D=None, h0=None, return_state=False):
    """The same map by a token-by-token loop (arguments as ``ssd_chunked``)."""
    Nb, L, H, P = x.shape
    s = torch.zeros(Nb, H, P, B.shape[-1], dtype=x.dtype, device=x.device) if h0 is None else h0
    ys = []
    for t in range(L):
        y, s = ssd_step(s, x[:, t], dt[:, t], A, B[:, t], C[:, t], D)
        ys.append(y)
    y = torch.stack(ys, dim=1)
    return (y, s) if return_state else y
