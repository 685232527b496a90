"""Sessa's feedback branch from the projections to the solved output, with one T x T saved for backward
(sessa spec §2.2; issue 13's memory contract):

    alpha[t, j] = softmax_{j<t}(scale q_b[t] . k_b[j])   (row 0 empty: all zero)
    B_fb[t, j]  = gamma_t alpha[t, j] (j < t)
    (I - B_fb) s = f

Composed from torch ops (the mixer's old path: softmax, mask, ``solve_triangular``), autograd keeps the
softmax output, the masked alpha, the negated routing matrix and two (T, T) masks: three T x T matrices per
sequence plus the masks. This ``autograd.Function`` keeps only alpha (plus s, gamma, q_b, k_b: O(T D)) and
recomputes the rest in backward, which is the transposed solve and the softmax adjoint:

    (I - B_fb)^T g = dL/ds                            unit upper-triangular solve
    df = g ;  dB[t, j] = <g_t, s_j> (j < t) ;  P = alpha * dB
    dgamma_t = sum_j P[t, j] ;  dlogit = gamma_t (P - alpha dgamma_t)   (= alpha (dalpha - rowsum(alpha dalpha)))
    dq_b = scale dlogit k_b ;  dk_b = scale dlogit^T q_b

The forward runs the old path's ops in the same order (some in place, which keeps the values and drops
temporaries), so s is bitwise the same; gradients agree to rounding (tests/mixers/test_sessa_memory.py: 1e-10
in float64; measured 1e-6 relative in float32 at the cpu scale's sizes). Transients beside the saved alpha:
at most two T x T per sequence at a time (-B_fb or dB, and LAPACK's copy for the solve). Not twice
differentiable (``once_differentiable``: a second derivative raises instead of silently missing the path
through alpha).
"""

from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

from ..checks import Signature
from .reference import _checked, _result_dtype


def feedback_alpha(qb: torch.Tensor, kb: torch.Tensor, scale: float, *, inplace: bool = False) -> torch.Tensor:
    """alpha_fb: softmax over j < t of scale q_b[t] . k_b[j], row 0 all zero. qb, kb: (Nb, T, d) -> (Nb, T, T).
    ``inplace`` (no autograd only) scales, masks and zeroes in place: the same values with three T x T
    temporaries fewer (the scaled logits, the masked logits, a float mask)."""
    T = qb.shape[1]
    logits = qb @ kb.transpose(1, 2)
    logits = logits.mul_(scale) if inplace else logits * scale
    strict = torch.ones(T, T, dtype=torch.bool, device=qb.device).tril(-1)
    strict_row0 = strict.clone()
    strict_row0[0:1, 0:1] = True  # row 0 has no past: give the softmax one finite entry, zero the row after
    if inplace:  # zeroing by masked_fill_ gives the product's values (alpha is finite and >= 0 there)
        alpha = torch.softmax(logits.masked_fill_(~strict_row0, float("-inf")), dim=-1)
        del logits
        return alpha.masked_fill_(~strict, 0.0)
    alpha = torch.softmax(logits.masked_fill(~strict_row0, float("-inf")), dim=-1)
    return alpha * strict.to(alpha.dtype)


def strict_past_softmax(qb: torch.Tensor, kb: torch.Tensor, scale: float) -> torch.Tensor:
    """``feedback_alpha``'s values for autograd with one saved float T x T (the softmax output) and a bool mask,
    where ``feedback_alpha`` multiplies by a float mask that autograd would keep too. (Nb, T, d) -> (Nb, T, T)."""
    T = qb.shape[1]
    strict = torch.ones(T, T, dtype=torch.bool, device=qb.device).tril(-1)
    strict_row0 = strict.clone()
    strict_row0[0:1, 0:1] = True  # row 0 has no past: one finite entry for the softmax, zeroed below
    alpha = torch.softmax((qb @ kb.transpose(1, 2) * scale).masked_fill(~strict_row0, float("-inf")), dim=-1)
    return alpha.masked_fill(~strict, 0.0)


def _neg_routing(gamma: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    """-B_fb with one T x T allocation (reference.routing_matrix's values, negated). (Nb, T), (Nb, T, T)."""
    return (alpha * gamma[..., None]).tril_(-1).neg_()


class _FeedbackAttentionSolve(torch.autograd.Function):
    @staticmethod
    def forward(ctx, f, gamma, qb, kb, scale):
        with torch.no_grad():
            alpha = feedback_alpha(qb, kb, scale, inplace=True)
            f_w, gamma_w, alpha_w = _checked("feedback_attention_solve", f, gamma, alpha)
            neg_b = _neg_routing(gamma_w, alpha_w)
            s = torch.linalg.solve_triangular(neg_b, f_w, upper=False, left=True, unitriangular=True)
            del neg_b, alpha_w
        ctx.scale, ctx.dtypes = scale, (f.dtype, gamma.dtype, qb.dtype, kb.dtype)
        ctx.save_for_backward(alpha, gamma, qb, kb, s)  # s in the solve's dtype; alpha the one T x T
        ctx.save_for_forward(alpha, gamma, qb, kb, s)  # forward mode (jvp) reads the same tensors
        ctx.out_dtype = _result_dtype(f, gamma, alpha)
        return s.to(ctx.out_dtype)

    @staticmethod
    def jvp(ctx, df, dgamma, dqb, dkb, _dscale):
        """Forward mode (the D4 diagnostic's JVPs, sessa spec §3.6): ds = (I - B_fb)^{-1} (df + dB s) with
        dB = (dgamma alpha + gamma dalpha) strictly lower, dalpha = alpha (dlogit - rowsum(alpha dlogit)) and
        dlogit = scale (dq_b k_b^T + q_b dk_b^T). Inputs without a tangent arrive as None (zero)."""
        alpha, gamma, qb, kb, s = ctx.saved_tensors
        work = s.dtype
        a, gam = alpha.to(work), gamma.to(work)
        rhs = df.to(work) if df is not None else torch.zeros_like(s)
        d_b = torch.zeros_like(a)
        if dgamma is not None:
            d_b = d_b + dgamma.to(work)[..., None] * a
        if dqb is not None or dkb is not None:
            dlogit = torch.zeros_like(a)
            if dqb is not None:
                dlogit = dlogit + dqb.to(work) @ kb.to(work).transpose(1, 2)
            if dkb is not None:
                dlogit = dlogit + qb.to(work) @ dkb.to(work).transpose(1, 2)
            dlogit = dlogit * ctx.scale
            dalpha = a * (dlogit - (a * dlogit).sum(-1, keepdim=True))  # alpha is zero off the strict past
            d_b = d_b + gam[..., None] * dalpha
        rhs = rhs + d_b.tril(-1) @ s
        ds = torch.linalg.solve_triangular(_neg_routing(gam, a), rhs, upper=False, left=True, unitriangular=True)
        return ds.to(ctx.out_dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_s):
        alpha, gamma, qb, kb, s = ctx.saved_tensors
        work = s.dtype  # the solve's dtype (at least float32), as in the forward
        gam = gamma.to(work)[..., None]
        # (I - B)^T g = grad: with A = -B unit lower-triangular, A^T is unit upper-triangular
        neg_bt = _neg_routing(gamma.to(work), alpha.to(work)).transpose(1, 2)
        g = torch.linalg.solve_triangular(neg_bt, grad_s.to(work), upper=True, left=True, unitriangular=True)
        del neg_bt
        grads = [None] * 5
        if ctx.needs_input_grad[0]:
            grads[0] = g
        if any(ctx.needs_input_grad[1:4]):
            a = alpha.to(work)
            p = (g @ s.transpose(1, 2)).tril_(-1).mul_(a)  # alpha * dB
            dgamma = p.sum(-1)
            grads[1] = dgamma if ctx.needs_input_grad[1] else None
            dlogit = p.addcmul_(a, dgamma[..., None], value=-1).mul_(gam * ctx.scale).to(qb.dtype)
            grads[2] = dlogit @ kb if ctx.needs_input_grad[2] else None
            grads[3] = dlogit.transpose(1, 2) @ qb if ctx.needs_input_grad[3] else None
        return tuple(None if gr is None else gr.to(dt) for gr, dt in zip(grads, (*ctx.dtypes, None), strict=True))


def check_attention_solve_args(f: torch.Tensor, gamma: torch.Tensor, qb: torch.Tensor, kb: torch.Tensor) -> None:
    """The shapes every backend of ``feedback_attention_solve`` accepts (one place, so they cannot drift)."""
    sig = Signature("feedback_attention_solve")
    sig.tensor("f", f, "Nb T D")
    sig.tensor("gamma", gamma, "Nb T")
    sig.tensor("qb", qb, "Nb T d")
    sig.tensor("kb", kb, "Nb T d")


def feedback_attention_solve(
    f: torch.Tensor, gamma: torch.Tensor, qb: torch.Tensor, kb: torch.Tensor, scale: float
) -> torch.Tensor:
    """s = (I - B_fb)^{-1} f with alpha from q_b, k_b. f: (Nb, T, D); gamma: (Nb, T); qb, kb: (Nb, T, d).
    Returns s: (Nb, T, D) in the inputs' common dtype (the solve runs in at least float32)."""
    check_attention_solve_args(f, gamma, qb, kb)
    return _FeedbackAttentionSolve.apply(f, gamma, qb, kb, float(scale))
