"""Closed forms of the B2S6 paper (b2s6 spec §4), as plain float64/complex128 torch functions.

- T5 (Thm 3): the output-gradients of a one-channel S4D (w.r.t. its step logit b) and of a one-channel S6 at
  w = 0 (w.r.t. b and w), as coefficient vectors over the inputs, so that a batch of inputs costs one
  matrix product (``s4d_grad_b``, ``s6_grad_b``, ``s6_grad_w``; ``s6_output`` is the forward value);
- T6/T7 (Thm 3 parts 1-2, Figure 5): the gradient ratios over Monte Carlo draws (``gradient_ratios``);
- T1 (Thm 1 part II): S6's single quadratic form F(u) (``s6_quadratic_form``);
- T4 (Thm 5): the chance that no two blocks disagree in sign, 2^(1 - h) (``mixed_sign_failure``);
- T9 (Figure 4): the relative errors of the trivial predictors of |z|, z ~ N(0, 1) (``copy_me_reference``).

Shapes: A, B, C are (n,) (A diagonal, Re A < 0; complex allowed), u is (M, L) (M draws of a length-L scalar
sequence), outputs are (M,). Index j = 1..L runs over time and m_j = L - j (b2s6 spec §4, T5).
"""

from __future__ import annotations

import math

import torch


def _powers(Abar: torch.Tensor, L: int) -> torch.Tensor:
    """Abar^(m_j) for m_j = L - j, j = 1..L, as exp(m log Abar) (b2s6 spec §4: no repeated powers): (L, n)."""
    m = torch.arange(L - 1, -1, -1, dtype=torch.float64)
    return torch.exp(m[:, None] * torch.log(Abar.to(torch.complex128))[None, :])


def _re_sum(C: torch.Tensor, terms: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """Re sum_r C_r terms_(j, r) B_r: (L, n) -> (L,)."""
    return (C.to(torch.complex128) * terms * B.to(torch.complex128)).sum(-1).real


def s4d_grad_b(A, B, C, b: float, u: torch.Tensor) -> torch.Tensor:
    """d y_L / d b of an S4D channel with Delta = e^b: Re sum_j C Delta Abar^m (Abar + m (Abar - I)) B u_j."""
    L = u.shape[-1]
    delta = math.exp(b)
    Abar = torch.exp(delta * A.to(torch.complex128))
    P = _powers(Abar, L)
    m = torch.arange(L - 1, -1, -1, dtype=torch.float64)[:, None]
    r = delta * _re_sum(C, P * (Abar + m * (Abar - 1)), B)
    return u.double() @ r


def _s6_parts(A, b: float, L: int):
    delta = torch.nn.functional.softplus(torch.tensor(b, dtype=torch.float64)).item()
    s = 1.0 / (1.0 + math.exp(-b))
    Atil = torch.exp(delta * A.to(torch.complex128))
    m = torch.arange(L - 1, -1, -1, dtype=torch.float64)[:, None]
    return s, Atil, _powers(Atil, L), m


def s6_output(A, B, C, b: float, u: torch.Tensor) -> torch.Tensor:
    """y_L of an S6 channel at w = 0: Re u_L sum_j C Atil^m A^-1 (Atil - I) B u_j^2."""
    L = u.shape[-1]
    _, Atil, P, _ = _s6_parts(A, b, L)
    t = _re_sum(C, P * (Atil - 1) / A.to(torch.complex128), B)
    u = u.double()
    return u[:, -1] * ((u**2) @ t)


def s6_grad_b(A, B, C, b: float, u: torch.Tensor) -> torch.Tensor:
    """d y_L / d b of S6 at w = 0: Re s u_L sum_j C Atil^m (Atil + m (Atil - I)) B u_j^2, s = sigmoid(b)."""
    L = u.shape[-1]
    s, Atil, P, m = _s6_parts(A, b, L)
    t = s * _re_sum(C, P * (Atil + m * (Atil - 1)), B)
    u = u.double()
    return u[:, -1] * ((u**2) @ t)


def s6_grad_w(A, B, C, b: float, u: torch.Tensor) -> torch.Tensor:
    """d y_L / d w of S6 at w = 0: Re s u_L sum_j C Atil^m [(Atil - I) B u_j^2 sum_(i>j) u_i + Atil B u_j^3]."""
    L = u.shape[-1]
    s, Atil, P, _ = _s6_parts(A, b, L)
    p = s * _re_sum(C, P * (Atil - 1), B)
    q = s * _re_sum(C, P * Atil, B)
    u = u.double()
    later = u.flip(-1).cumsum(-1).flip(-1) - u  # sum_(i > j) u_i
    return u[:, -1] * ((u**2 * later) @ p + (u**3) @ q)


def random_unit(n: int, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(A, B, C) of b2s6 spec E4: Re a ~ -U(0.1, 1), Im a ~ U(-3, 3), B, C ~ N(0, 1) real; A: (n,) complex."""
    re = -(0.1 + 0.9 * torch.rand(n, generator=g, dtype=torch.float64))
    im = 6 * torch.rand(n, generator=g, dtype=torch.float64) - 3
    B = torch.randn(n, generator=g, dtype=torch.float64)
    C = torch.randn(n, generator=g, dtype=torch.float64)
    return torch.complex(re, im), B, C


def gradient_ratios(n: int, L: int, kappa: float, cs: list[float], trials: int, draws: int, seed: int) -> list[dict]:
    """Figure 5's ratios E|d_w y_S6| / E|d_b y_S4D| and E|d_b y_S6| / E|d_b y_S4D| (Monte Carlo means over
    ``draws`` inputs u ~ N(0, c^2), one fresh unit per trial), at b = log(kappa / L) (L e^b = kappa held
    fixed). The same base draws are scaled by every c (b2s6 spec §4, T6). Rows: one per (trial, c), with the
    trial's ratios; average them over trials for the figure."""
    b = math.log(kappa / L)
    rows = []
    for trial in range(trials):
        g = torch.Generator().manual_seed(seed * 100003 + trial)
        A, B, C = random_unit(n, g)
        base = torch.randn(draws, L, generator=g, dtype=torch.float64)
        for c in cs:
            u = c * base
            den = s4d_grad_b(A, B, C, b, u).abs().mean().item()
            rows.append(
                {
                    "trial": trial,
                    "c": c,
                    "L": L,
                    "ratio_w": s6_grad_w(A, B, C, b, u).abs().mean().item() / den,
                    "ratio_b": s6_grad_b(A, B, C, b, u).abs().mean().item() / den,
                }
            )
    return rows


def loglog_slope(x, y) -> tuple[float, float]:
    """(slope, R^2) of the least-squares line of log y on log x."""
    # copied element by element: a read-only array (pandas' to_numpy) given to as_tensor warns on every call
    lx = torch.log(torch.tensor([float(v) for v in x], dtype=torch.float64))
    ly = torch.log(torch.tensor([float(v) for v in y], dtype=torch.float64))
    X = torch.stack([lx, torch.ones_like(lx)], 1)
    coef = torch.linalg.lstsq(X, ly[:, None]).solution[:, 0]
    resid = ly - X @ coef
    ss_tot = ((ly - ly.mean()) ** 2).sum()
    return coef[0].item(), (1 - (resid**2).sum() / ss_tot).item() if ss_tot > 0 else 1.0


def s6_quadratic_form(A_real, B, C, M, delta: float, u: torch.Tensor) -> torch.Tensor:
    """T1: F(u) = u_L sum_j Q Abar^(L-j) P u_j^2 with P = A^-1 (Abar - I) B M, Q = M^T C (real A, constant
    Delta). A_real: (n,), B: (n, d), C: (d, n), M: (d,), u: (S, L) -> (S,)."""
    Abar = torch.exp(delta * A_real)
    P = (Abar - 1) / A_real * (B @ M)
    Q = M @ C
    L = u.shape[-1]
    m = torch.arange(L - 1, -1, -1, dtype=A_real.dtype)
    coef = (Q * P * Abar[None, :] ** m[:, None]).sum(-1)  # (L,)
    return u[:, -1] * ((u**2) @ coef)


def mixed_sign_failure(h: int) -> float:
    """T4: P(every block's w^[j] . u^[j] has one sign) = 2 * 2^-h for independent symmetric signs."""
    return 2.0 ** (1 - h)


def copy_me_reference() -> dict[str, float]:
    """T9: mean |z - c| for z ~ N(0, 1) and the predictors c = 0, the median of |z| and the mean of |z|."""
    mean_abs = math.sqrt(2 / math.pi)
    median = math.sqrt(2) * torch.special.erfinv(torch.tensor(0.5, dtype=torch.float64)).item()

    def mad(c: float) -> float:  # E| |z| - c | for c >= 0, in closed form
        phi = math.exp(-c * c / 2) / math.sqrt(2 * math.pi)
        cdf = 0.5 * (1 + math.erf(c / math.sqrt(2)))
        # E|X - c| for X = |z| (half-normal, CDF F): c (2F(c) - 1) - 2 E[X 1(X < c)] + E X,
        # with E[X 1(X < c)] = 2 (phi(0) - phi(c))
        e_below = 2 * (1 / math.sqrt(2 * math.pi) - phi)
        return c * (2 * (2 * cdf - 1) - 1) - 2 * e_below + mean_abs

    return {"zero": mad(0.0), "median": mad(median), "mean": mad(mean_abs), "median_abs": median}
