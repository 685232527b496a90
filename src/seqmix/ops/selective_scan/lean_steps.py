"""Chunk-level pieces of the memory-lean selective scan (lean.py): time-major chunks, the in-place
recurrences forward and backward, and the readout and its adjoint.

Every tensor here is time-major, (T, Nb, ...), so that one step ``t`` is a contiguous (Nb, d, n) slab; a pair
is (re, im) with im None for real data, as in reference.py. Complex products are written out on the pairs
(four real multiply-adds per step) because torch's complex kernels are much slower on CPU.

Adjoint convention: for a real loss and a complex z = zr + i zi, the gradient is dL/dzr + i dL/dzi (torch's).
Then z = a w gives grad w = conj(a) grad z and grad a = grad z conj(w), and y = Re(sum_n C x) gives
grad x = gy conj(C), grad C = gy conj(x).
"""

from __future__ import annotations

import torch

Pair = tuple  # (re: Tensor, im: Tensor | None)


def time_major(t: torch.Tensor | None, start: int, stop: int) -> torch.Tensor | None:
    """Steps start..stop-1 of a (Nb, L, ...) tensor as a contiguous (stop - start, Nb, ...) tensor (a copy of
    the chunk only; an expanded, stride-0 input stays unexpanded outside the chunk)."""
    return None if t is None else t.detach()[:, start:stop].transpose(0, 1).contiguous()


def scan_in_place(a: Pair, x: Pair, s: Pair) -> None:
    """x_t <- x_t + a_t x_{t-1} along dim 0, with x_{-1} = s: on entry ``x`` holds v (T, Nb, d, n), on exit
    the states. ``x`` has an imaginary part exactly when the scan is complex (a's may be None)."""
    (ar, ai), (xr, xi), (sr, si) = a, x, s
    for t in range(xr.shape[0]):
        xr[t].addcmul_(ar[t], sr)
        if xi is not None:
            xi[t].addcmul_(ar[t], si)
            if ai is not None:
                xr[t].addcmul_(ai[t], si, value=-1)
                xi[t].addcmul_(ai[t], sr)
        sr, si = xr[t], (None if xi is None else xi[t])


def adjoint_in_place(a: Pair, lam: Pair, mu: Pair) -> Pair:
    """The reverse recurrence lambda_t = g_t + conj(a_{t+1}) lambda_{t+1} along dim 0, in place: on entry
    ``lam`` holds g (the readout's gradient, (T, Nb, d, n)), on exit lambda = dL/dx_t. ``mu`` is the gradient
    reaching the chunk's last state from later chunks. Returns conj(a_0) lambda_0, the gradient that reaches
    the state before the chunk."""
    (ar, ai), (lr, li) = a, lam
    T = lr.shape[0]
    lr[T - 1] += mu[0]
    if li is not None:
        li[T - 1] += mu[1]
    for t in range(T - 1, 0, -1):
        lr[t - 1].addcmul_(ar[t], lr[t])
        if li is not None:
            li[t - 1].addcmul_(ar[t], li[t])
            if ai is not None:
                lr[t - 1].addcmul_(ai[t], li[t])
                li[t - 1].addcmul_(ai[t], lr[t], value=-1)
    return conj_mul(ar[0], None if ai is None else ai[0], lr[0], None if li is None else li[0])


def conj_mul(ar, ai, lr, li) -> Pair:
    """conj(a) * lambda on pairs (im parts may be None)."""
    if li is None:
        return ar * lr, None
    re, im = ar * lr, ar * li
    if ai is not None:
        re = re.addcmul_(ai, li)
        im = im.addcmul_(ai, lr, value=-1)
    return re, im


def readout(x: Pair, C: Pair, groups: int) -> torch.Tensor:
    """Re(sum_n C x) per channel: x (T, Nb, d, n), C (T, Nb, G, n) -> (T, Nb, d)."""
    T, Nb, d, n = x[0].shape
    xs = [None if t is None else t.view(T, Nb, groups, d // groups, n) for t in x]
    Cs = [None if t is None else t.unsqueeze(3) for t in C]
    y = (xs[0] * Cs[0]).sum(-1)
    if xs[1] is not None and Cs[1] is not None:
        y = y - (xs[1] * Cs[1]).sum(-1)
    return y.reshape(T, Nb, d)


def readout_adjoint(gy: torch.Tensor, C: Pair, groups: int, n: int, cplx: bool) -> Pair:
    """dL/dx = gy conj(C), broadcast over each group's channels: gy (T, Nb, d), C (T, Nb, G, n) ->
    a fresh pair (T, Nb, d, n), with an imaginary part exactly when the scan is complex."""
    T, Nb, d = gy.shape
    g = gy.view(T, Nb, groups, d // groups, 1)
    re = (g * C[0].unsqueeze(3)).reshape(T, Nb, d, n)
    if not cplx:
        return re, None
    im = torch.zeros_like(re) if C[1] is None else (g * C[1].unsqueeze(3)).neg_().reshape(T, Nb, d, n)
    return re, im


def readout_grad_C(gy: torch.Tensor, x: Pair, groups: int) -> Pair:
    """dL/dC = sum over each group's channels of gy conj(x): gy (T, Nb, d), x (T, Nb, d, n) ->
    (re, im) of shape (T, Nb, G, n); im None when the state is real."""
    T, Nb, d, n = x[0].shape
    g = gy.view(T, Nb, groups, d // groups, 1)
    re = (g * x[0].view(T, Nb, groups, d // groups, n)).sum(3)
    im = None if x[1] is None else (g * x[1].view(T, Nb, groups, d // groups, n)).sum(3).neg_()
    return re, im


def grad_of_a(lam: Pair, x_prev: Pair, a_complex: bool) -> Pair:
    """dL/da_t = lambda_t conj(x_{t-1}) (only the real part when a is real)."""
    (lr, li), (pr, pi) = lam, x_prev
    if li is None:
        return lr * pr, None
    re = (lr * pr).addcmul_(li, pi)
    return re, ((li * pr).addcmul_(lr, pi, value=-1) if a_complex else None)
