"""Mamba2's scalar-identity state-space duality (SSD), pure torch: a chunked form and a recurrent form.

Per head h (state N, head dim P), A_h a negative real scalar (sessa spec §2.5):

    h_t = exp(dt_t A_h) h_{t-1} + dt_t x_t B_t^T       h: (P, N)
    y_t = h_t C_t + D_h x_t

B_t, C_t: (N,) shared by the H / G heads of each of G groups.

Chunked form (chunk Q): inside a chunk the map is the masked quadratic form
Y = (L o C B^T) (dt x) with L[t, s] = exp(sum_{s < r <= t} dt_r A) for s <= t; between chunks one P x N state
per head is carried. Because A is a scalar per head, L is only (Q, Q) per head, which is what makes SSD
cheap compared with a diagonal-A scan.

Every exponent is a segment sum sum_{s < r <= t} dt_r A formed by adding the segment's own terms (``_segsum``),
never as the difference cs_t - cs_s of two cumulative sums: after a few large steps (dt |A| up to 20) the
cumulative sum is ~Q * 20, its float32 rounding (~1e-4) swamps a following run of small steps, and the
gradient of A came out up to 17% wrong (tests/ops/test_float32_steps.py). All exponents are <= 0,
so nothing overflows.
"""

from __future__ import annotations

import torch

from ..checks import Signature, cast, positive_int


def _checked(op: str, x, dt, A, B, C, D, h, seq: bool = True) -> list:
    """The arguments checked against the shapes of the sequence form (``seq``) or of one step, cast to their
    common dtype; ``h`` is the initial state (the state of a step)."""
    sig, t = Signature(op), ("L " if seq else "")
    sig.tensor("x", x, f"Nb {t}H P")
    sig.tensor("dt", dt, f"Nb {t}H")
    sig.tensor("A", A, "H")
    sig.tensor("B", B, f"Nb {t}G N")
    sig.tensor("C", C, f"Nb {t}G N")
    sig.tensor("D", D, "H")
    sig.tensor("h0" if seq else "state", h, "Nb H P N")
    sig.divides("G", "H", "B")
    dtype = sig.common_dtype()
    return [cast(a, dtype) for a in (x, dt, A, B, C, D, h)]


def _segsum(la: torch.Tensor) -> torch.Tensor:
    """Segment sums seg[..., t, s, :] = sum_{s < r <= t} la[..., r, :] (0 for t <= s), each added up from its own
    terms: the column s of a (Q, Q) table holding la_r in rows r > s, summed down the rows. la: (..., Q, H) ->
    (..., Q_t, Q_s, H)."""
    Q = la.shape[-2]
    below = torch.ones(Q, Q, dtype=torch.bool, device=la.device).tril(-1)[:, :, None]  # r > s
    terms = torch.where(below, la.unsqueeze(-2), torch.zeros((), dtype=la.dtype, device=la.device))
    return torch.cumsum(terms, dim=-3)


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
    positive_int("ssd", "chunk", chunk)
    x, dt, A, B, C, D, h0 = _checked("ssd", x, dt, A, B, C, D, h0)
    Nb, L, H, P = x.shape
    N = B.shape[-1]
    if L == 0:  # no steps: an empty output, the state is the initial one
        s = h0 if h0 is not None else x.new_zeros(Nb, H, P, N)
        return (x * dt.unsqueeze(-1), s) if return_state else x * dt.unsqueeze(-1)
    Bh, Ch = _expand_groups(B, H), _expand_groups(C, H)
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
    la = la.reshape(Nb, nC, Q, H)
    cs = torch.cumsum(la, dim=2)  # (Nb, nC, Q, H): from the chunk start, a sum of its own terms
    seg = _segsum(la)  # (Nb, nC, Q_t, Q_s, H)
    # intra-chunk: L[t, s] = exp(seg[t, s]) for s <= t
    causal = torch.ones(Q, Q, dtype=torch.bool, device=x.device).tril()[:, :, None]
    Lmat = torch.exp(seg.masked_fill(~causal, float("-inf")))
    scores = torch.einsum("bctHn,bcsHn->bctsH", Cc, Bc) * Lmat
    y = torch.einsum("bctsH,bcsHp->bctHp", scores, X)
    # state each chunk produces from a zero start: sum_s exp(seg[end, s]) X_s B_s^T
    to_end = torch.exp(seg[:, :, -1])  # (Nb, nC, Q, H)
    states = torch.einsum("bcsH,bcsHp,bcsHn->bcHpn", to_end, X, Bc)
    # carry across chunks
    s = torch.zeros(Nb, H, P, N, dtype=X.dtype, device=x.device) if h0 is None else h0
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
    x, dt, A, B, C, D, state = _checked("ssd_step", x, dt, A, B, C, D, state, seq=False)
    H = x.shape[1]
    Bh, Ch = B.repeat_interleave(H // B.shape[1], dim=1), C.repeat_interleave(H // C.shape[1], dim=1)
    state = torch.exp(dt * A)[:, :, None, None] * state + (dt[:, :, None] * x)[..., None] * Bh[:, :, None, :]
    y = (state * Ch[:, :, None, :]).sum(-1)
    if D is not None:
        y = y + D[:, None] * x
    return y, state


def ssd_recurrent(x, dt, A, B, C, D=None, h0=None, return_state=False):
    """The same map by a token-by-token loop (arguments as ``ssd_chunked``)."""
    x, dt, A, B, C, D, h0 = _checked("ssd_recurrent", x, dt, A, B, C, D, h0)
    Nb, L, H, P = x.shape
    s = x.new_zeros(Nb, H, P, B.shape[-1]) if h0 is None else h0
    ys = []
    for t in range(L):
        y, s = ssd_step(s, x[:, t], dt[:, t], A, B[:, t], C[:, t], D)
        ys.append(y)
    y = torch.stack(ys, dim=1) if ys else x * dt.unsqueeze(-1)  # L = 0: empty
    return (y, s) if return_state else y
