"""Selective scan, pure torch (the oracle for a future Triton kernel; used for CPU training).

One diagonal, time-varying linear recurrence covers S4D (constant step), S6 and B2S6 (b2s6 spec §2.1-2.3):

    a_k  = exp(Delta_k A)                                  (L, d, n), |a_k| <= 1 because Re A <= 0
    Bbar = Delta_k phi1(Delta_k A) (B_k + B_bias)  (zoh)   or  Delta_k (B_k + B_bias)  (euler)
    x_k  = a_k * x_{k-1} + Bbar_k u_k                      state (d, n), real or complex
    y_k  = Re(sum_n C_k x_k) + D u_k

B_k and C_k are shared by the p = d / G channels of each of G groups (G = 1: S6; G = h blocks: B2S6).

Algorithm (``chunk`` = C): the sequence is cut into chunks; a length-C loop runs every chunk at once from a
zero state, a length-L/C loop carries the chunk-end states, and each chunk adds its carried state times the
within-chunk decay exp(cumsum(Delta A)). That is O(sqrt(L)) Python steps instead of L, and the decay is a
product of factors of modulus <= 1, so it can only underflow (harmless), never overflow; exp(-cumsum),
which overflows, is never formed.

Complex numbers are carried as (real, imag) pairs of real tensors (imag None for real data): torch's complex
kernels (exp, mul, div) run about ten times slower than the real ones on CPU, and the pairs make the
arithmetic explicit for a kernel port.
"""

from __future__ import annotations

import math

import torch

from ..checks import Signature, cast, positive_int

Pair = tuple  # (re: Tensor, im: Tensor | None)


def _pair(z: torch.Tensor | None) -> Pair | None:
    if z is None:
        return None
    return (z.real, z.imag) if z.is_complex() else (z, None)


def _join(p: Pair) -> torch.Tensor:
    return p[0] if p[1] is None else torch.complex(p[0], p[1])


def _mul(x: Pair, y: Pair) -> Pair:
    (xr, xi), (yr, yi) = x, y
    if xi is None and yi is None:
        return xr * yr, None
    if xi is None:
        return xr * yr, xr * yi
    if yi is None:
        return xr * yr, xi * yr
    return xr * yr - xi * yi, xr * yi + xi * yr


def _add(x: Pair, y: Pair) -> Pair:
    (xr, xi), (yr, yi) = x, y
    if xi is None and yi is None:
        return xr + yr, None
    return xr + yr, (xi if yi is None else yi if xi is None else xi + yi)


def _exp(z: Pair) -> Pair:
    r = torch.exp(z[0])
    return (r, None) if z[1] is None else (r * torch.cos(z[1]), r * torch.sin(z[1]))


def _phi1(z: Pair) -> Pair:
    """(e^z - 1) / z on a pair; series near 0 with the double-where trick (finite gradients at z = 0).
    e^z - 1 = (expm1(a) cos b - 2 sin^2(b/2)) + i e^a sin b keeps full relative accuracy for small |z|."""
    a, b = z
    if b is None:
        small = a.abs() < 1e-4
        a_s = torch.where(small, torch.ones_like(a), a)
        return torch.where(small, 1 + a / 2 + a * a / 6, torch.expm1(a_s) / a_s), None
    small = (a * a + b * b) < 1e-8
    a_s = torch.where(small, torch.ones_like(a), a)
    b_s = torch.where(small, torch.zeros_like(b), b)
    num_re = torch.expm1(a_s) * torch.cos(b_s) - 2 * torch.sin(b_s / 2) ** 2
    num_im = torch.exp(a_s) * torch.sin(b_s)
    den = a_s * a_s + b_s * b_s
    re = torch.where(small, 1 + a / 2 + (a * a - b * b) / 6, (num_re * a_s + num_im * b_s) / den)
    im = torch.where(small, b / 2 + a * b / 3, (num_im * a_s - num_re * b_s) / den)
    return re, im


def phi1(z: torch.Tensor) -> torch.Tensor:
    """(e^z - 1) / z, accurate near 0, for real or complex tensors."""
    return _join(_phi1(_pair(z)))


def _default_chunk(L: int) -> int:
    return max(1, int(round(math.sqrt(L))))


def _initial_state(x0: Pair | None, zeros: torch.Tensor, cplx: bool) -> Pair:
    """x0 as a pair (zeros when None), with an imaginary part exactly when the scan is complex."""
    re, im = (zeros, None) if x0 is None else x0
    return re, (im if im is not None else (torch.zeros_like(re) if cplx else None))


def _linear_scan_pairs(la: Pair, v: Pair, x0: Pair | None, chunk: int | None) -> tuple[Pair, Pair]:
    shape = torch.broadcast_shapes(*(t.shape for t in (*la, *v) if t is not None))
    la = tuple(None if t is None else t.expand(shape) for t in la)
    cplx = la[1] is not None or v[1] is not None or (x0 is not None and x0[1] is not None)
    v = (
        v[0].expand(shape),
        (v[1].expand(shape) if v[1] is not None else (torch.zeros_like(v[0]).expand(shape) if cplx else None)),
    )
    Nb, L = shape[:2]
    S = tuple(shape[2:])
    if L == 0:  # no steps: the output is empty and the state is the initial one
        return v, _initial_state(x0, v[0].new_zeros(Nb, *S), cplx)
    C = _default_chunk(L) if chunk is None else chunk  # the public callers checked it
    nC = -(-L // C)
    pad = nC * C - L

    def prep(t):
        if t is None:
            return None
        if pad:  # padded steps have a = 1 (log a = 0) and v = 0; they are cut off at the end
            t = torch.nn.functional.pad(t, [0, 0] * len(S) + [0, pad])
        return t.reshape(Nb, nC, C, *S)

    la, v = tuple(map(prep, la)), tuple(map(prep, v))
    a = _exp(la)
    # Per-step views come from unbind, not indexing: the backward of t[:, :, k] allocates a zero tensor of
    # t's full size for every k, which made the backward pass O(C) times slower than the forward.
    steps = lambda p: [None] * C if p is None else p.unbind(2)
    a_t, v_t = list(zip(steps(a[0]), steps(a[1]))), list(zip(steps(v[0]), steps(v[1])))
    # 1) every chunk from a zero state, all chunks at once
    h = (torch.zeros_like(v[0][:, :, 0]), torch.zeros_like(v[0][:, :, 0]) if cplx else None)
    local_r, local_i = [], []
    for t in range(C):
        h = _add(_mul(a_t[t], h), v_t[t])
        local_r.append(h[0])
        local_i.append(h[1])
    xl = (torch.stack(local_r, 2), torch.stack(local_i, 2) if cplx else None)
    decay = _exp(tuple(None if t is None else torch.cumsum(t, dim=2) for t in la))  # |.| <= 1
    # 2) carry the state across chunk boundaries
    s = _initial_state(x0, torch.zeros_like(v[0][:, 0, 0]), cplx)
    ends = lambda p: [None] * nC if p is None else p[:, :, -1].unbind(1)
    d_end, x_end = list(zip(ends(decay[0]), ends(decay[1]))), list(zip(ends(xl[0]), ends(xl[1])))
    car_r, car_i = [], []
    for c in range(nC):
        car_r.append(s[0])
        car_i.append(s[1])
        s = _add(_mul(d_end[c], s), x_end[c])
    carry = (torch.stack(car_r, 1).unsqueeze(2), torch.stack(car_i, 1).unsqueeze(2) if cplx else None)
    # 3) add the carried state's contribution inside each chunk
    x = _add(xl, _mul(decay, carry))
    x = tuple(None if t is None else t.reshape(Nb, nC * C, *S)[:, :L] for t in x)
    return x, s  # padded steps have a = 1, v = 0, so s is the state after step L-1


def linear_scan(
    log_a: torch.Tensor, v: torch.Tensor, x0: torch.Tensor | None = None, chunk: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """x_k = exp(log_a_k) * x_{k-1} + v_k along dim 1.

    log_a, v: (Nb, L, *S) (broadcastable to each other; real or complex); x0: (Nb, *S) or None (zeros).
    Returns (x: (Nb, L, *S), last state x_{L-1}: (Nb, *S)), complex if any input is.
    """
    if chunk is not None:
        positive_int("linear_scan", "chunk", chunk)
    x, s = _linear_scan_pairs(_pair(log_a), _pair(v), _pair(x0), chunk)
    return _join(x), _join(s)


def _discretise(u, delta, A, B, B_bias, disc, groups) -> tuple[Pair, Pair]:
    """(log_a, v) as pairs of shape (Nb, L, d, n): log a = Delta A, v = Bbar u."""
    Nb, L, d = u.shape
    n = A.shape[-1]
    dl = delta.unsqueeze(-1)
    dA = _mul((dl, None), _pair(A))
    Bin = tuple(
        None if t is None else t.unsqueeze(3).expand(Nb, L, groups, d // groups, n).reshape(Nb, L, d, n)
        for t in _pair(B)
    )
    if B_bias is not None:
        Bin = _add(Bin, _pair(B_bias))
    if disc == "zoh":
        Bbar = _mul(_mul((dl, None), _phi1(dA)), Bin)
    elif disc == "euler":
        Bbar = _mul((dl, None), Bin)
    else:
        raise ValueError(f"disc must be 'zoh' or 'euler', got {disc!r}")
    return dA, _mul(Bbar, (u.unsqueeze(-1), None))


def _readout(x: Pair, C: torch.Tensor, groups: int) -> torch.Tensor:
    """Re(sum_n C x): (Nb, L, d)."""
    Nb, L, d, n = x[0].shape
    Cp = tuple(None if t is None else t.unsqueeze(3) for t in _pair(C))
    xs = tuple(None if t is None else t.reshape(Nb, L, groups, d // groups, n) for t in x)
    y = xs[0] * Cp[0]
    if xs[1] is not None and Cp[1] is not None:
        y = y - xs[1] * Cp[1]
    return y.sum(-1).reshape(Nb, L, d)


def _checked(op: str, u, delta, A, B, C, B_bias, D, x0, seq: bool = False) -> list:
    """The arguments checked against the shapes of ``selective_scan`` (``seq``) or of one step, cast to their
    common dtype; ``x0`` is the initial state (the state of a step)."""
    sig, t = Signature(op), ("L " if seq else "")
    sig.tensor("u", u, f"Nb {t}d")
    sig.tensor("delta", delta, f"Nb {t}d")
    sig.tensor("B", B, f"Nb {t}G n", complex_ok=True)
    sig.tensor("C", C, f"Nb {t}G n", complex_ok=True)
    sig.tensor("A", A, ("d n", "n"), complex_ok=True)
    sig.tensor("B_bias", B_bias, "d n", complex_ok=True)
    sig.tensor("D", D, "d")
    sig.tensor("x0" if seq else "state", x0, "Nb d n", complex_ok=True)
    sig.divides("G", "d", "B")
    dtype = sig.common_dtype()
    return [cast(a, dtype) for a in (u, delta, A, B, C, B_bias, D, x0)]


def selective_scan(
    u: torch.Tensor,
    delta: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    B_bias: torch.Tensor | None = None,
    D: torch.Tensor | None = None,
    disc: str = "zoh",
    x0: torch.Tensor | None = None,
    chunk: int | None = None,
    return_state: bool = False,
):
    """u, delta: (Nb, L, d) real; A: (d, n) or (n,), real or complex, Re A <= 0; B, C: (Nb, L, G, n) with
    G | d (real or complex); B_bias: (d, n) or None; D: (d,) or None; x0: (Nb, d, n) or None.
    Returns y: (Nb, L, d) real (and the last state (Nb, d, n), complex if any input is, when ``return_state``).
    Inputs of mixed floating precisions compute in their common dtype (``seqmix.ops.checks``)."""
    if chunk is not None:
        positive_int("selective_scan", "chunk", chunk)
    u, delta, A, B, C, B_bias, D, x0 = _checked("selective_scan", u, delta, A, B, C, B_bias, D, x0, seq=True)
    groups = B.shape[2]
    log_a, v = _discretise(u, delta, A, B, B_bias, disc, groups)
    x, last = _linear_scan_pairs(log_a, v, _pair(x0), chunk)
    y = _readout(x, C, groups)
    if D is not None:
        y = y + D * u
    return (y, _join(last)) if return_state else y


def selective_scan_step(
    state: torch.Tensor,
    u: torch.Tensor,
    delta: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    B_bias: torch.Tensor | None = None,
    D: torch.Tensor | None = None,
    disc: str = "zoh",
):
    """One step for decoding. state: (Nb, d, n); u, delta: (Nb, d); B, C: (Nb, G, n).
    Returns (y: (Nb, d), new state)."""
    u, delta, A, B, C, B_bias, D, state = _checked("selective_scan_step", u, delta, A, B, C, B_bias, D, state)
    log_a, v = _discretise(u[:, None], delta[:, None], A, B[:, None], B_bias, disc, B.shape[1])
    a = _exp(tuple(None if t is None else t[:, 0] for t in log_a))
    new = _add(_mul(a, _pair(state)), tuple(None if t is None else t[:, 0] for t in v))
    y = _readout(tuple(None if t is None else t[:, None] for t in new), C[:, None], B.shape[1])[:, 0]
    if D is not None:
        y = y + D * u
    out = _join(new)
    return y, (out.to(state.dtype) if state.is_complex() or not out.is_complex() else out)
