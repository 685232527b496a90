"""Mixing of accumulated rotations (rotations spec §4, T1, T2, T13), float64 numpy.

Closed forms of the paper's first-moment results, each beside an independent oracle:

- T1 (Example 1, Thm 1): |E e^{i m Theta_n}| = (sin(m a) / (m a))^n for Theta_n a sum of n i.i.d. U[-a, a]
  steps, the mixing window w_eps = ceil(ln(1/eps) / ln(1/beta)), the per-block windows of the experimental
  random variant (f_b = 10000^(-2b/d_h)) and its expected block-mean matched score E S_n = mean_b beta_b^n;
  oracle: Monte Carlo over sampled step angles.
- T2 (Examples 2-5, Thm 3): E[M] of the Householder, Givens, SO(3)-block and torus steps, and
  ||E P_n||_op <= beta^n for their products; oracle: Monte Carlo means of sampled matrices (and, for the
  anisotropic Householder law, a one-dimensional quadrature of E[v v^T]).
- T13 (Lemma 1, Example 7) on SO(2): a density h >= m has Fourier coefficients |h_k| <= 1 - m (k != 0), and a
  matrix-Fisher law has rho <= 1 - exp(-2 ||A||_*); oracle: quadrature of the Fourier coefficients.

Every sampler takes a ``numpy.random.Generator`` so that a seed fixes the result.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import integrate, special


def sinc_beta(a: float) -> float:
    """beta = |E e^{i psi}| = |sin a / a| for psi ~ U[-a, a] (1 at a = 0)."""
    return 1.0 if a == 0 else abs(math.sin(a) / a)


def mixing_window(beta: float | np.ndarray, eps: float) -> np.ndarray:
    """w_eps = ceil(ln(1/eps) / ln(1/beta)): the first n with beta^n <= eps (1 when beta = 0, inf when
    beta = 1). ``-log(beta)`` is taken through log1p so that blocks with beta within 1e-9 of 1 keep their digits."""
    beta = np.asarray(beta, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        # log1p keeps the digits of beta near 1; + 0.0 turns -0.0 into 0.0 so that beta = 1 never mixes (inf)
        rate = np.where(beta < 0.5, -np.log(np.maximum(beta, 1e-300)), -np.log1p(beta - 1.0)) + 0.0
        return np.maximum(1.0, np.where(beta <= 0, 1.0, np.ceil(math.log(1 / eps) / rate)))


def rope_frequencies(d_head: int) -> np.ndarray:
    """f_b = 10000^(-2b/d_h), b = 0..d_h/2 - 1 (rotations spec §2.0)."""
    return 10000.0 ** (-2.0 * np.arange(d_head // 2) / d_head)


def block_betas(d_head: int) -> np.ndarray:
    """beta_b = sin(f_b) / f_b of the random variant's U(-f_b, f_b) steps (rotations spec §2.3, M3/M4)."""
    f = rope_frequencies(d_head)
    return np.sin(f) / f


def mixed_blocks(d_head: int, eps: float, length: int) -> int:
    """How many of the d_h/2 blocks have w_eps <= length (pitfall 8)."""
    return int((mixing_window(block_betas(d_head), eps) <= length).sum())


def expected_matched_score(d_head: int, n: int) -> float:
    """E S_n = (1/B) sum_b beta_b^n for the random variant (rotations spec §4 T1)."""
    return float(np.mean(block_betas(d_head) ** n))


def harmonic_mc(a: float, ms: list[int], n_max: int, samples: int, rng: np.random.Generator) -> np.ndarray:
    """|mean over samples of e^{i m Theta_n}| for n = 1..n_max, Theta_n the running sum of U[-a, a] steps:
    (len(ms), n_max)."""
    theta = np.cumsum(rng.uniform(-a, a, size=(samples, n_max)), axis=1)
    return np.stack([np.abs(np.exp(1j * m * theta).mean(axis=0)) for m in ms])


def matched_score_mc(d_head: int, ns: list[int], samples: int, rng: np.random.Generator) -> np.ndarray:
    """Monte Carlo E S_n = E (1/B) sum_b cos Theta_{n,b} with Theta_{n,b} a sum of n U(-f_b, f_b) steps:
    (len(ns),). Sampled step by step up to max(ns) (the oracle for ``expected_matched_score``)."""
    f = rope_frequencies(d_head)
    theta = np.zeros((samples, f.size))
    out, todo = [], sorted(ns)
    for n in range(1, max(ns) + 1):
        theta += rng.uniform(-1.0, 1.0, size=theta.shape) * f
        while todo and todo[0] == n:
            out.append(float(np.cos(theta).mean()))
            todo.pop(0)
    return np.array(out)


# ----------------------------------------------------------------------------- T2: first moments


def sample_householder(d: int, samples: int, rng: np.random.Generator, scales: np.ndarray | None = None) -> np.ndarray:
    """Unit vectors v ~ normalised N(0, diag(scales^2)) (uniform on S^{d-1} when ``scales`` is None):
    (samples, d). H = I - 2 v v^T."""
    v = rng.standard_normal((samples, d)) * (1.0 if scales is None else scales)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def householder_mean(v: np.ndarray) -> np.ndarray:
    """Monte Carlo E[H] = I - 2 mean(v v^T): (d, d)."""
    return np.eye(v.shape[1]) - 2 * (v.T @ v) / v.shape[0]


def projected_gaussian_second_moment(variances: np.ndarray) -> np.ndarray:
    """diag E[v v^T] of v = x / ||x||, x ~ N(0, diag(variances)), by quadrature of
    E[x_j^2 / ||x||^2] = int_0^inf s_j (1 + 2 t s_j)^(-3/2) prod_{k != j} (1 + 2 t s_k)^(-1/2) dt
    (from 1/r = int_0^inf e^{-t r} dt): (d,). Distinct variances are integrated once each."""
    s = np.asarray(variances, dtype=np.float64)
    out = np.empty_like(s)
    for val in np.unique(s):

        def f(t: float, val: float = val) -> float:
            return val * (1 + 2 * t * val) ** -1.0 * math.exp(-0.5 * np.log1p(2 * t * s).sum())

        out[s == val] = integrate.quad(f, 0, np.inf, limit=200, epsabs=1e-13, epsrel=1e-11)[0]
    return out


def givens_mean(d: int, a: float, samples: int, rng: np.random.Generator) -> np.ndarray:
    """Monte Carlo E[M] of a rotation by theta ~ U[-a, a] in a uniformly chosen coordinate plane: (d, d)."""
    pairs = np.array([(i, j) for i in range(d) for j in range(i + 1, d)])
    ij = pairs[rng.integers(len(pairs), size=samples)]
    th = rng.uniform(-a, a, size=samples)
    acc = np.zeros((d, d))
    c, s = np.cos(th) - 1.0, np.sin(th)
    np.add.at(acc, (ij[:, 0], ij[:, 0]), c)
    np.add.at(acc, (ij[:, 1], ij[:, 1]), c)
    np.add.at(acc, (ij[:, 0], ij[:, 1]), -s)
    np.add.at(acc, (ij[:, 1], ij[:, 0]), s)
    return np.eye(d) + acc / samples


def so3_rotations(theta: float, samples: int, rng: np.random.Generator) -> np.ndarray:
    """Rotations by a fixed angle about uniform axes (Rodrigues): (samples, 3, 3)."""
    u = sample_householder(3, samples, rng)
    K = np.zeros((samples, 3, 3))
    K[:, 0, 1], K[:, 0, 2], K[:, 1, 2] = -u[:, 2], u[:, 1], -u[:, 0]
    K = K - K.transpose(0, 2, 1)
    return np.eye(3) + math.sin(theta) * K + (1 - math.cos(theta)) * (K @ K)


def torus_generator(lams: list[float], rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(A, Q): A = Q blockdiag(lam_j J) Q^T, a nonsingular skew matrix with eigenvalues +-i lam_j in a random
    orthonormal basis Q (d = 2 len(lams))."""
    d = 2 * len(lams)
    J = np.zeros((d, d))
    for j, lam in enumerate(lams):
        J[2 * j, 2 * j + 1], J[2 * j + 1, 2 * j] = -lam, lam
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    return Q @ J @ Q.T, Q


def torus_mean(A: np.ndarray, a: float, samples: int, rng: np.random.Generator) -> np.ndarray:
    """Monte Carlo E exp(eps A), eps ~ U[-a, a], with exp(eps A) formed from numpy's complex eigendecomposition of
    A (not from its blocks): (d, d)."""
    w, V = np.linalg.eig(A)
    eps = rng.uniform(-a, a, size=samples)
    mean_phase = np.exp(eps[:, None] * w[None, :]).mean(axis=0)  # w = +-i lam: unit phasors
    return ((V * mean_phase) @ np.linalg.inv(V)).real


def torus_mean_closed(lams: list[float], a: float, Q: np.ndarray) -> np.ndarray:
    """Example 5: E exp(eps A) = Q blockdiag(sin(a lam_j) / (a lam_j) I_2) Q^T."""
    return Q @ np.diag(np.repeat([math.sin(a * x) / (a * x) for x in lams], 2)) @ Q.T


def householder_product_mean(d: int, n_max: int, samples: int, rng: np.random.Generator) -> np.ndarray:
    """||mean over samples of P_n||_op for P_n = H_1 ... H_n with uniform v, n = 1..n_max: (n_max,)."""
    P = np.broadcast_to(np.eye(d), (samples, d, d)).copy()
    out = np.empty(n_max)
    for n in range(n_max):
        v = sample_householder(d, samples, rng)
        P -= 2 * (P @ v[:, :, None]) * v[:, None, :]  # P H = P - 2 (P v) v^T, batched
        out[n] = np.linalg.norm(P.mean(axis=0), 2)
    return out


def so3_product_mean(theta: float, n_max: int, samples: int, rng: np.random.Generator) -> np.ndarray:
    """||mean of P_n||_op for products of fixed-angle SO(3) rotations about uniform axes: (n_max,)."""
    P = np.broadcast_to(np.eye(3), (samples, 3, 3)).copy()
    out = np.empty(n_max)
    for n in range(n_max):
        P = P @ so3_rotations(theta, samples, rng)
        out[n] = np.linalg.norm(P.mean(axis=0), 2)
    return out


# ----------------------------------------------------------------------------- T13 on SO(2)


def fourier_coefficients(density, ks: list[int], grid: int = 4096) -> np.ndarray:
    """|h_k| = |mean over the circle of h(theta) e^{-i k theta}| for a density h w.r.t. the normalised Haar
    measure (trapezoid rule on ``grid`` points: exact for trigonometric polynomials of degree < grid)."""
    th = np.linspace(-np.pi, np.pi, grid, endpoint=False)
    h = density(th)
    return np.array([abs((h * np.exp(-1j * k * th)).mean()) for k in ks])


def von_mises_density(kappa: float, mu: float = 0.0):
    """h(theta) = exp(kappa cos(theta - mu)) / I0(kappa), a density w.r.t. the normalised Haar measure on SO(2)
    (the matrix-Fisher law of SO(2), tr(A^T R(theta)) = kappa cos(theta - mu))."""
    return lambda th: np.exp(kappa * (np.cos(th - mu) - 1.0)) / special.i0e(kappa)


def matrix_fisher_kappa(A: np.ndarray) -> float:
    """kappa of the SO(2) matrix-Fisher law exp(tr(A^T R(theta))) = exp(kappa cos(theta - mu))."""
    return float(math.hypot(A[0, 0] + A[1, 1], A[1, 0] - A[0, 1]))


def von_mises_first_harmonic(kappa: float) -> float:
    """The closed form |h_1| = I1(kappa) / I0(kappa)."""
    return float(special.ive(1, kappa) / special.ive(0, kappa))
