"""Complex arithmetic and the discretisation of one step, shared by the selective-scan kernels (triton.py).

Complex numbers are (re, im) pairs of tiles; a real input is a pair with im = 0. Imported only where the
kernels can run (``require_kernel_runtime``), like triton.py itself.
"""

from __future__ import annotations

from ..triton_support import require_kernel_runtime

require_kernel_runtime("selective_scan")

import triton  # noqa: E402 — only once the runtime is known to run kernels
import triton.language as tl  # noqa: E402

SMALL_Z2 = 0.01  # |Delta A|^2 below which phi1 and phi1' use their series (|z| < 0.1: error < 1e-12)


@triton.jit
def horner(pr, pi, zr, zi, coef):
    """p z + coef for complex p, z."""
    return pr * zr - pi * zi + coef, pr * zi + pi * zr


@triton.jit
def cdiv(nr, ni, zr, zi):
    """(nr + i ni) / (zr + i zi)."""
    den = zr * zr + zi * zi
    return (nr * zr + ni * zi) / den, (ni * zr - nr * zi) / den


@triton.jit
def phi1(zr, zi, ar, ai, small):
    """phi1(z) = (e^z - 1) / z given a = e^z; the series 1 + z/2 + ... + z^6/7! where |z| < 0.1, where
    e^z - 1 would lose digits to cancellation."""
    pr, pi = horner(zr * 0 + 1.0 / 5040, zi * 0, zr, zi, 1.0 / 720)
    pr, pi = horner(pr, pi, zr, zi, 1.0 / 120)
    pr, pi = horner(pr, pi, zr, zi, 1.0 / 24)
    pr, pi = horner(pr, pi, zr, zi, 1.0 / 6)
    pr, pi = horner(pr, pi, zr, zi, 0.5)
    pr, pi = horner(pr, pi, zr, zi, 1.0)
    qr, qi = cdiv(ar - 1.0, ai, tl.where(small, 1.0, zr), tl.where(small, 0.0, zi))
    return tl.where(small, pr, qr), tl.where(small, pi, qi)


@triton.jit
def dphi1(zr, zi, ar, ai, phr, phi, small):
    """phi1'(z) = (e^z - phi1(z)) / z; the series sum_j (j+1) z^j / (j+2)! (to z^6) where |z| < 0.1."""
    pr, pi = horner(zr * 0 + 1.0 / 5760, zi * 0, zr, zi, 1.0 / 840)
    pr, pi = horner(pr, pi, zr, zi, 1.0 / 144)
    pr, pi = horner(pr, pi, zr, zi, 1.0 / 30)
    pr, pi = horner(pr, pi, zr, zi, 1.0 / 8)
    pr, pi = horner(pr, pi, zr, zi, 1.0 / 3)
    pr, pi = horner(pr, pi, zr, zi, 0.5)
    qr, qi = cdiv(ar - phr, ai - phi, tl.where(small, 1.0, zr), tl.where(small, 0.0, zi))
    return tl.where(small, pr, qr), tl.where(small, pi, qi)


@triton.jit
def discretised(dl, Ar, Ai, binr, bini, ZOH: tl.constexpr, SMALL: tl.constexpr):
    """One step's z = Delta A, a = e^z, phi1(z) (1 for euler) and P = phi1(z) (B + B_bias), so that
    Bbar = Delta P. dl: (BD,); Ar, Ai, binr, bini: (BD, BN); every output (BD, BN)."""
    zr = dl[:, None] * Ar
    zi = dl[:, None] * Ai
    e = tl.exp(zr)
    ar = e * tl.cos(zi)
    ai = e * tl.sin(zi)
    small = zr * zr + zi * zi < SMALL
    if ZOH:
        phr, phi = phi1(zr, zi, ar, ai, small)
    else:
        phr = zr * 0 + 1.0
        phi = zr * 0
    return zr, zi, ar, ai, phr, phi, phr * binr - phi * bini, phr * bini + phi * binr, small


@triton.jit
def load_pair(re_ptr, im_ptr, offs, mask, CPLX: tl.constexpr, acc_t: tl.constexpr):
    """A complex input as a pair in the accumulation dtype (im = 0 when the input is real: not read)."""
    re = tl.load(re_ptr + offs, mask=mask, other=0.0).to(acc_t)
    if CPLX:
        im = tl.load(im_ptr + offs, mask=mask, other=0.0).to(acc_t)
    else:
        im = re * 0
    return re, im


@triton.jit
def step_grads(lr, li, xp_r, xp_i, uu, dl, zr, zi, ar, ai, phr, phi, Pr, Pi, binr, bini, small, ZOH: tl.constexpr):
    """The gradients of one step x_t = a x_{t-1} + u Delta P (a = e^z, z = Delta A, P = phi1(z) Bin), given
    lambda = dLoss/dx_t (lr, li) and x_{t-1} (xp_r, xp_i); tiles (BD, BN), uu, dl (BD,). Returns grad u (BD,),
    grad Delta through P (BD,), grad z (the (re, im) tile), grad Bin (the (re, im) tile)."""
    gu = tl.sum(dl[:, None] * (Pr * lr + Pi * li), axis=1)  # Re sum_n conj(Delta P) lambda
    gqr = lr * uu[:, None]  # grad of Delta P
    gqi = li * uu[:, None]
    gdl = tl.sum(Pr * gqr + Pi * gqi, axis=1)
    gPr = dl[:, None] * gqr
    gPi = dl[:, None] * gqi
    gbin_r = phr * gPr + phi * gPi  # conj(phi1) grad P
    gbin_i = phr * gPi - phi * gPr
    gzr = ar * (xp_r * lr + xp_i * li) + ai * (xp_r * li - xp_i * lr)  # conj(a) conj(x_{t-1}) lambda
    gzi = ar * (xp_r * li - xp_i * lr) - ai * (xp_r * lr + xp_i * li)
    if ZOH:  # + conj(phi1'(z)) conj(Bin) grad P
        dpr, dpi = dphi1(zr, zi, ar, ai, phr, phi, small)
        gphr = binr * gPr + bini * gPi
        gphi = binr * gPi - bini * gPr
        gzr += dpr * gphr + dpi * gphi
        gzi += dpr * gphi - dpi * gphr
    return gu, gdl, gzr, gzi, gbin_r, gbin_i
