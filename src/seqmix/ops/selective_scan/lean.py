"""Selective scan with a memory-lean backward: the default CPU backend (the reference stays the definition).

Same arguments, outputs and gradients as ``reference.selective_scan`` (b2s6 spec §2.1-2.3, §2.8), computed in
a different order. The reference lets autograd keep every intermediate of the discretisation and of the
chunked scan: 34-46 tensors of the full (Nb, L, d, n) size. Here a ``torch.autograd.Function`` keeps only

- its inputs (u, Delta: (Nb, L, d); B, C: (Nb, L, G, n); A, B_bias, D, x0), and
- the state before each chunk of ``chunk`` = T steps: (L/T, Nb, d, n), about sqrt(L) states by default,

and works one chunk at a time, so that nothing of size (Nb, L, d, n) is ever allocated:

forward   per chunk: discretise (a = exp(Delta A), v = Bbar u: (T, Nb, d, n)), run x_t = a_t x_{t-1} + v_t
          from the chunk's first state, read out y_t = Re(sum_n C_t x_t).
backward  per chunk, last to first: recompute the chunk's discretisation and its states from the saved first
          state, run the adjoint recurrence lambda_t = gy_t conj(C_t) + conj(a_{t+1}) lambda_{t+1} backwards
          through the chunk, and turn dL/da_t = lambda_t conj(x_{t-1}) and dL/dv_t = lambda_t into gradients
          for u, Delta, A, B and B_bias by the discretisation's hand-written chain rule
          (lean_discretise.py). dL/dC and dL/dD are closed forms. No autograd graph is built.

Memory: O(Nb d n (L/T + c T)) with c about 15 (one chunk's discretisation and states) instead of about
40 Nb L d n. Python steps: 3 L small in-place (Nb, d, n) updates (forward, recomputation, adjoint) where
the reference takes about 2 sqrt(L) full-sized ones; each is 1-4 fused multiply-adds on contiguous time-major
slabs (lean_steps.py). The discretisation follows the reference's order of operations with its helpers
(``_phi1``, ``_exp``, ``_mul``); tests/ops/test_selective_scan_lean.py holds the two to 1e-10 in outputs and
every gradient. Not twice differentiable (``once_differentiable``): nothing in seqmix needs it.
"""

from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

from ..checks import positive_int
from . import reference
from .lean_discretise import backward as discretisation_backward
from .lean_discretise import coefficients
from .lean_steps import (
    adjoint_in_place,
    grad_of_a,
    readout,
    readout_adjoint,
    readout_grad_C,
    scan_in_place,
    time_major,
)
from .reference import _checked, _default_chunk, _pair


def _is_complex(*ts) -> bool:
    return any(t is not None and t.is_complex() for t in ts)


class _LeanScan(torch.autograd.Function):
    """y, last state (re, im) of the scan; see the module docstring. ``cfg`` = (disc, chunk T, groups G)."""

    @staticmethod
    def forward(ctx, cfg, u, delta, A, B, C, B_bias, D, x0):
        disc, T, groups = cfg
        Nb, L, d = u.shape
        n = A.shape[-1]
        cplx = _is_complex(A, B, B_bias, x0)
        starts = list(range(0, L, T))
        first = [u.new_zeros(len(starts), Nb, d, n), u.new_zeros(len(starts), Nb, d, n) if cplx else None]
        if x0 is not None:
            first[0][0] = x0.real if x0.is_complex() else x0
            if cplx and x0.is_complex():
                first[1][0] = x0.imag
        y = u.new_empty(L, Nb, d)
        Cp = _pair(C)
        for c, c0 in enumerate(starts):
            c1 = min(L, c0 + T)
            u_c, dl_c, B_c = (time_major(t, c0, c1) for t in (u, delta, B))
            a, x, _ = coefficients(u_c, dl_c, A, B_c, B_bias, disc, groups, cplx)
            scan_in_place(a, x, (first[0][c], None if first[1] is None else first[1][c]))
            y[c0:c1] = readout(x, tuple(time_major(t, c0, c1) for t in Cp), groups)
            last = [x[0][-1], None if x[1] is None else x[1][-1]]
            if c + 1 < len(starts):
                first[0][c + 1] = last[0]
                if cplx:
                    first[1][c + 1] = last[1]
        y = y.transpose(0, 1).contiguous()
        if D is not None:
            y = y + D * u
        ctx.cfg, ctx.cplx, ctx.starts = cfg, cplx, starts
        ctx.save_for_backward(u, delta, A, B, C, B_bias, D, x0, first[0], first[1])
        last_r = last[0].clone()
        return y, last_r, (last[1].clone() if cplx else torch.zeros_like(last_r))

    @staticmethod
    @once_differentiable
    def backward(ctx, gy, g_last_r, g_last_i):
        u, delta, A, B, C, B_bias, D, x0, first_r, first_i = ctx.saved_tensors
        needs = dict(zip(("u", "delta", "A", "B", "C", "B_bias", "D", "x0"), ctx.needs_input_grad[1:]))
        grads = _backward_chunks(ctx, gy, (g_last_r, g_last_i if ctx.cplx else None), needs)
        gD = None
        if D is not None:
            gD = (gy * u).sum((0, 1)) if needs["D"] else None
            if needs["u"]:
                grads["u"] = grads["u"] + gy * D
        gx0 = None
        if x0 is not None and needs["x0"]:
            mu = grads["x0"]
            gx0 = torch.complex(mu[0], mu[1]) if x0.is_complex() else mu[0]
        g = grads.get
        return None, g("u"), g("delta"), g("A"), g("B"), g("C"), g("B_bias"), gD, gx0


def _backward_chunks(ctx, gy, mu, needs: dict) -> dict:
    """The gradients of u, delta, A, B, C, B_bias (and the state gradient reaching x0, as a pair under "x0"),
    chunk by chunk from the last; see the module docstring."""
    u, delta, A, B, C, B_bias, D, x0, first_r, first_i = ctx.saved_tensors
    disc, T, groups = ctx.cfg
    cplx, (Nb, L, _), n = ctx.cplx, u.shape, A.shape[-1]
    per_step = {"u": u, "delta": delta, "B": B, "C": C}
    out_tm = {k: t.new_zeros((L, Nb, *t.shape[2:])) for k, t in per_step.items() if needs[k]}
    out_const = {k: None for k in ("A", "B_bias") if needs[k]}
    discretisation_needed = any(needs[k] for k in ("u", "delta", "A", "B", "B_bias"))
    Cp = _pair(C)
    for c in reversed(range(len(ctx.starts))):
        c0 = ctx.starts[c]
        c1 = min(L, c0 + T)
        u_c, dl_c, B_c = (time_major(t, c0, c1) for t in (u, delta, B))
        a, v, keep = coefficients(u_c, dl_c, A, B_c, B_bias, disc, groups, cplx)
        states, prev = _chunk_states(a, v, (first_r[c], None if first_i is None else first_i[c]))
        gy_c = time_major(gy, c0, c1)
        if needs["C"]:
            gC = readout_grad_C(gy_c, states, groups)
            out_tm["C"][c0:c1] = gC[0] if Cp[1] is None else torch.complex(gC[0], _or_zeros(gC[1], gC[0]))
        lam = readout_adjoint(gy_c, tuple(time_major(t, c0, c1) for t in Cp), groups, n, cplx)
        mu = adjoint_in_place(a, lam, mu)
        if not discretisation_needed:
            continue
        ga = grad_of_a(lam, prev, a[1] is not None)
        got = discretisation_backward(ga, lam, a, keep, u_c, dl_c, A, B_c, B_bias, needs)
        for k, g in got.items():
            if k in out_tm:
                out_tm[k][c0:c1] = g
            else:
                out_const[k] = g if out_const[k] is None else out_const[k] + g
    grads = {k: t.transpose(0, 1) for k, t in out_tm.items()}
    grads.update(out_const)
    grads["x0"] = mu
    return grads


def _or_zeros(t, like):
    return torch.zeros_like(like) if t is None else t


def _chunk_states(a: tuple, v: tuple, s0: tuple) -> tuple[tuple, tuple]:
    """The states x_t of one chunk recomputed from its first state ``s0`` (Nb, d, n): (x_t, x_{t-1}) as pairs
    of views (T, Nb, d, n) of one buffer whose row 0 holds s0."""
    parts = []
    for s, vp in zip(s0, v):
        if s is None:
            parts.append(None)
            continue
        buf = s.new_empty((vp.shape[0] + 1, *s.shape))
        buf[0], buf[1:] = s, vp.detach()
        parts.append(buf)
    cur = tuple(None if p is None else p[1:] for p in parts)
    prev = tuple(None if p is None else p[:-1] for p in parts)
    scan_in_place(a, cur, tuple(None if p is None else p[0] for p in parts))
    return cur, prev


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
    """Arguments, shapes and results as in ``reference.selective_scan``; ``chunk`` (default round(sqrt(L)))
    is the number of steps between the states kept for the backward pass."""
    if chunk is not None:
        positive_int("selective_scan", "chunk", chunk)
    u, delta, A, B, C, B_bias, D, x0 = _checked("selective_scan", u, delta, A, B, C, B_bias, D, x0, seq=True)
    if disc not in ("zoh", "euler"):
        raise ValueError(f"disc must be 'zoh' or 'euler', got {disc!r}")
    L = u.shape[1]
    if L == 0:  # no step: nothing to keep, the reference's answer is the empty output and the initial state
        return reference.selective_scan(u, delta, A, B, C, B_bias, D, disc, x0, chunk, return_state)
    T = _default_chunk(L) if chunk is None else min(chunk, L)
    y, last_r, last_i = _LeanScan.apply((disc, T, B.shape[2]), u, delta, A, B, C, B_bias, D, x0)
    if not return_state:
        return y
    return y, (torch.complex(last_r, last_i) if _is_complex(A, B, B_bias, x0) else last_r)
