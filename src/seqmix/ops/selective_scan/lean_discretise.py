"""The discretisation of one chunk for the lean scan (lean.py), forward and hand-written backward.

Forward, on pairs (re, im) of time-major tensors (T, Nb, d, n), in the reference's order of operations
(``reference._discretise``, built from the same helpers):

    z = Delta A,  a = exp(z),  Bin = B (broadcast over each group's p channels) + B_bias,
    S = (Delta phi1(z)) Bin  (zoh)  or  Delta Bin  (euler),   v = S u.

Backward: given dL/da and dL/dv (pairs), the chain rule by hand, with torch's convention for complex values
(grad of z = zr + i zi is dL/dzr + i dL/dzi; for w = x y, grad x = conj(y) grad w):

    gS = u gv,  gu = sum_n Re(conj(S) gv)
    zoh:   gQ = conj(Bin) gS (Q = Delta phi1(z)),  gBin = conj(Q) gS,
           gDelta = sum_n Re(conj(phi1) gQ),  gz = conj(a) ga + conj(phi1'(z)) Delta gQ
    euler: gBin = Delta gS,  gDelta = sum_n Re(conj(Bin) gS),  gz = conj(a) ga
    gDelta += sum_n Re(conj(A) gz),  gA = sum Delta gz,  gB = sum over the group's channels of gBin,
    gB_bias = sum over batch and steps of gBin.

phi1'(z) = (e^z - phi1(z)) / z, and 1/2 + z/3 where the reference's phi1 uses its series (the derivative of
that series, which is what autograd gives the reference), so both backends agree to rounding.
"""

from __future__ import annotations

import torch

from .reference import _add, _exp, _mul, _pair, _phi1

Pair = tuple  # (re: Tensor, im: Tensor | None)


def _conj_mul(x: Pair, y: Pair) -> Pair:
    """conj(x) * y on pairs."""
    (xr, xi), (yr, yi) = x, y
    if xi is None:
        return xr * yr, (None if yi is None else xr * yi)
    if yi is None:
        return xr * yr, -xi * yr
    return (xr * yr).addcmul_(xi, yi), (xr * yi).addcmul_(xi, yr, value=-1)


def _re_conj_mul(x: Pair, y: Pair) -> torch.Tensor:
    """Re(conj(x) y) = xr yr + xi yi."""
    out = x[0] * y[0]
    return out if x[1] is None or y[1] is None else out.addcmul_(x[1], y[1])


def _dphi1(z: Pair, a: Pair, phi: Pair) -> Pair:
    """phi1'(z) from a = e^z and phi = phi1(z); 1/2 + z/3 where ``reference._phi1`` uses its series."""
    zr, zi = z
    if zi is None:
        small = zr.abs() < 1e-4
        zs = torch.where(small, torch.ones_like(zr), zr)
        return torch.where(small, 0.5 + zr / 3, (a[0] - phi[0]) / zs), None
    small = (zr * zr + zi * zi) < 1e-8
    zrs, zis = torch.where(small, torch.ones_like(zr), zr), torch.where(small, torch.zeros_like(zi), zi)
    num_r, num_i = a[0] - phi[0], a[1] - phi[1]
    den = zrs * zrs + zis * zis
    re = (num_r * zrs + num_i * zis) / den
    im = (num_i * zrs - num_r * zis) / den
    return torch.where(small, 0.5 + zr / 3, re), torch.where(small, zi / 3, im)


def _exp_phi1(z: Pair, zoh: bool) -> tuple[Pair, Pair | None]:
    """(e^z, phi1(z)) for complex z, computing cos, sin and exp once for both. Where ``reference._phi1`` does
    not use its series, its factors cos(b) and e^a sin(b) are exactly those of e^z, so the values are the
    reference's; elsewhere its series is used, as there."""
    zr, zi = z
    er, c, s = torch.exp(zr), torch.cos(zi), torch.sin(zi)
    a = (er * c, er * s)
    if not zoh:
        return a, None
    small = (zr * zr + zi * zi) < 1e-8
    zrs, zis = torch.where(small, torch.ones_like(zr), zr), torch.where(small, torch.zeros_like(zi), zi)
    num_re = torch.expm1(zrs) * c - 2 * torch.sin(zis / 2) ** 2
    num_im = a[1]
    den = zrs * zrs + zis * zis
    re = torch.where(small, 1 + zr / 2 + (zr * zr - zi * zi) / 6, (num_re * zrs + num_im * zis) / den)
    im = torch.where(small, zi / 2 + zr * zi / 3, (num_im * zrs - num_re * zis) / den)
    return a, (re, im)


def coefficients(u, delta, A, B, B_bias, disc: str, groups: int, cplx: bool):
    """(a, v, keep) of one chunk: u, delta (T, Nb, d); A (d, n) or (n,); B (T, Nb, G, n); B_bias (d, n) or
    None. a, v: pairs (T, Nb, d, n), v with a zero imaginary part when the scan is complex but v is real;
    ``keep``: what ``backward`` needs (z, phi1(z), Delta phi1(z), Bin, S)."""
    T, Nb, d = u.shape
    n = A.shape[-1]
    dl = delta.unsqueeze(-1)
    z = _mul((dl, None), _pair(A))
    if z[1] is None:
        a, phi = _exp(z), (_phi1(z) if disc == "zoh" else None)
    else:
        a, phi = _exp_phi1(z, disc == "zoh")
    Bin = tuple(
        None if t is None else t.unsqueeze(3).expand(T, Nb, groups, d // groups, n).reshape(T, Nb, d, n)
        for t in _pair(B)
    )
    if B_bias is not None:
        Bin = _add(Bin, _pair(B_bias))
    if disc == "zoh":
        Q = _mul((dl, None), phi)
        S = _mul(Q, Bin)
    else:
        Q = None
        S = _mul((dl, None), Bin)
    v = _mul(S, (u.unsqueeze(-1), None))
    keep = (z, phi, Q, Bin, S, v[1] is None)
    if cplx and v[1] is None:
        v = (v[0], torch.zeros_like(v[0]))
    return a, v, keep


def backward(ga: Pair, gv: Pair, a: Pair, keep: tuple, u, delta, A, B, B_bias, needs: dict) -> dict:
    """Gradients of one chunk's u, delta (T, Nb, d), B (T, Nb, G, n) and its contributions to A and B_bias
    (their shapes), for the names ``needs`` asks for, given dL/da and dL/dv; see the module docstring."""
    z, phi, Q, Bin, S, v_real = keep
    if v_real:
        gv = (gv[0], None)
    dl, ue = delta.unsqueeze(-1), u.unsqueeze(-1)
    gS = (gv[0] * ue, None if gv[1] is None else gv[1] * ue)
    out = {}
    if needs["u"]:
        out["u"] = _re_conj_mul(S, gv).sum(-1)
    if Q is not None:
        gQ = _conj_mul(Bin, gS)
        gBin = _conj_mul(Q, gS)
        gDelta = _re_conj_mul(phi, gQ)
        gz = _add(_conj_mul(a, ga), _conj_mul(_dphi1(z, a, phi), _mul((dl, None), gQ)))
    else:
        gBin = _mul((dl, None), gS)
        gDelta = _re_conj_mul(Bin, gS)
        gz = _conj_mul(a, ga)
    Ap = _pair(A)
    if needs["delta"]:
        out["delta"] = gDelta.add_(_re_conj_mul(Ap, gz)).sum(-1)
    if needs["A"]:
        gA = _mul((dl, None), gz)
        out["A"] = _as_leaf(_reduce_to(gA, A.shape), A)
    if needs["B"]:
        T, Nb, G = B.shape[:3]
        gB = tuple(None if t is None else t.view(T, Nb, G, -1, t.shape[-1]).sum(3) for t in gBin)
        out["B"] = _as_leaf(gB, B)
    if needs["B_bias"] and B_bias is not None:
        out["B_bias"] = _as_leaf(_reduce_to(gBin, B_bias.shape), B_bias)
    return out


def _reduce_to(p: Pair, shape) -> Pair:
    """Sum a pair (T, Nb, d, n) over the leading dimensions that ``shape`` ((d, n) or (n,)) lacks."""
    dims = tuple(range(p[0].dim() - len(shape)))
    return tuple(None if t is None else t.sum(dims) for t in p)


def _as_leaf(p: Pair, leaf: torch.Tensor) -> torch.Tensor:
    """The gradient pair as a tensor of the leaf's kind: complex for a complex leaf, the real part otherwise."""
    if not leaf.is_complex():
        return p[0]
    return torch.complex(p[0], torch.zeros_like(p[0]) if p[1] is None else p[1])
