"""Score-side results of the rotations paper (rotations spec §4, T3-T6, T12), float64 numpy.

- T3 (Thm 4, Prop 2, Thm 5): Householder products P_n: det P_n = (-1)^n, the Kolmogorov-Smirnov distance of
  q^T P_n k to the Haar law (the first coordinate of a uniform point on S^{d-1}: (x + 1)/2 ~ Beta((d-1)/2,
  (d-1)/2)), the Levy tail 2 exp(-(d-1) s^2 / 2), and the near-route bound q^T P k >= q^T k - ||P - I||.
- T4 (Thm 2): the Hoeffding tail exp(-B (s - eps_sc)^2 / 2) of the block-mean matched score S.
- T5 (Prop 1, Cor 1): the logit gap that makes the far mass <= rho* and the far l2 weight <= a*.
- T6 (Props 3-4): the far-mass lower bound M_L / (K e^{2 lam} + M_L) under bounded logits, its fixed-gap
  variant, the near-signal gain (1 - rho_D)^2, and the ALiBi contrast (far mass bounded as L grows).
- T12 (§8.2): sigmoid/softplus weights: the far sum grows like M, its l2 norm like sqrt(M).

Oracles: Monte Carlo, dense softmax, scipy's Beta distribution.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from .mixing import sample_householder


def softmax(logits: np.ndarray) -> np.ndarray:
    """Softmax over the last axis (max-subtracted, float64)."""
    z = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


# ----------------------------------------------------------------------------- T3: Householder products


def householder_scores(d: int, ns: list[int], samples: int, rng: np.random.Generator) -> dict[int, np.ndarray]:
    """{n: samples of q^T P_n k} for q = k = e_1 and P_n = H_1 ... H_n (uniform v), applied to the vector k
    (O(d) per step)."""
    y = np.zeros((samples, d))
    y[:, 0] = 1.0
    out, todo = {}, sorted(ns)
    for n in range(1, max(ns) + 1):
        v = sample_householder(d, samples, rng)
        y -= 2 * (y * v).sum(axis=1, keepdims=True) * v
        while todo and todo[0] == n:
            out[n] = y[:, 0].copy()
            todo.pop(0)
    return out


def haar_coordinate_cdf(d: int):
    """CDF of the first coordinate of a uniform point on S^{d-1} (density ∝ (1 - x^2)^((d-3)/2))."""
    return lambda x: stats.beta.cdf((np.asarray(x) + 1) / 2, (d - 1) / 2, (d - 1) / 2)


def haar_tail(d: int, s: float) -> float:
    """Pr[x >= s] under the Haar law (exact)."""
    return float(stats.beta.sf((s + 1) / 2, (d - 1) / 2, (d - 1) / 2))


def ks_to_haar(x: np.ndarray, d: int) -> float:
    """Kolmogorov-Smirnov distance of the sample x to the Haar coordinate law."""
    return float(stats.kstest(x, haar_coordinate_cdf(d)).statistic)


def ks_critical(samples: int, alpha: float = 0.01) -> float:
    """The asymptotic KS critical value sqrt(ln(2/alpha) / 2) / sqrt(samples) (the sampling floor)."""
    return math.sqrt(math.log(2 / alpha) / 2) / math.sqrt(samples)


def levy_tail(d: int, s: float) -> float:
    """The Levy concentration term 2 exp(-(d - 1) s^2 / 2)."""
    return 2 * math.exp(-(d - 1) * s * s / 2)


def householder_product_det(d: int, n: int, rng: np.random.Generator) -> float:
    """det(H_1 ... H_n) by a dense LU determinant (uniform v)."""
    P = np.eye(d)
    for v in sample_householder(d, n, rng):
        P = P - 2 * np.outer(P @ v, v)
    return float(np.linalg.det(P))


def near_route_slack(d: int, scale: float, trials: int, rng: np.random.Generator) -> tuple[float, float]:
    """min over trials of q^T P k - (q^T k - ||P - I||_op) for P = expm of a small random skew matrix (via its
    eigendecomposition) and random unit q, k; returns (min slack, largest gamma seen). Thm 5 (a) says >= 0."""
    slack, gmax = np.inf, 0.0
    for _ in range(trials):
        X = rng.standard_normal((d, d)) * scale
        S = X - X.T
        w, V = np.linalg.eig(S)
        P = ((V * np.exp(w)) @ np.linalg.inv(V)).real
        q, k = sample_householder(d, 2, rng)
        gamma = np.linalg.norm(P - np.eye(d), 2)
        slack, gmax = min(slack, q @ P @ k - (q @ k - gamma)), max(gmax, gamma)
    return float(slack), float(gmax)


# ----------------------------------------------------------------------------- T4: Hoeffding over blocks


def hoeffding_tail(blocks: int, s: float, eps_sc: float) -> float:
    """exp(-B (s - eps_sc)^2 / 2) (Thm 2), for s > eps_sc."""
    return math.exp(-blocks * (s - eps_sc) ** 2 / 2)


def matched_scores(blocks: int, samples: int, rng: np.random.Generator, a: float | None, n: int) -> np.ndarray:
    """S = (1/B) sum_b cos Theta_b: Theta_b uniform on the circle (a None), else a sum of n U[-a, a] steps,
    independent over blocks: (samples,)."""
    if a is None:
        theta = rng.uniform(-np.pi, np.pi, size=(samples, blocks))
    else:
        theta = rng.uniform(-a, a, size=(samples, blocks, n)).sum(axis=2)
    return np.cos(theta).mean(axis=1)


# ----------------------------------------------------------------------------- T5, T6: softmax far mass


def gap_needed(m_max: int, k_near: int, rho_star: float, a_star: float) -> tuple[float, float]:
    """(lam g for rho_D <= rho*, lam g for ||alpha_D||_2 <= a*) of Prop 1 / Cor 1 (each floored at 0)."""
    return (
        max(0.0, math.log(m_max * (1 - rho_star) / (k_near * rho_star))),
        max(0.0, math.log(math.sqrt(m_max) / (k_near * a_star))),
    )


def far_stats(near: np.ndarray, far: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rho_D, ||alpha_D||_2) of a softmax over [near, far] logits: rows are trials ((trials, K), (trials, M))."""
    alpha = softmax(np.concatenate([near, far], axis=1))[:, near.shape[1] :]
    return alpha.sum(axis=1), np.linalg.norm(alpha, axis=1)


def far_mass_lower_bound(m_far: int, k_near: int, lam: float) -> float:
    """rho_D >= M_L / (K e^{2 lam} + M_L) when every logit lies in [-lam, lam] (Prop 3)."""
    return m_far / (k_near * math.exp(2 * lam) + m_far)


def far_mass_lower_bound_gap(m_far: int, k_near: int, delta: float) -> float:
    """rho_D >= M_L e^{-Delta} / (K + M_L e^{-Delta}) when near logits exceed far ones by at most Delta."""
    return m_far * math.exp(-delta) / (k_near + m_far * math.exp(-delta))


def random_orthogonal(d: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """Haar orthogonal matrices (QR of Gaussians with the sign fix): (count, d, d)."""
    Q, R = np.linalg.qr(rng.standard_normal((count, d, d)))
    return Q * np.sign(np.diagonal(R, axis1=1, axis2=2))[:, None, :]


def near_gain(alpha_near: np.ndarray, transports: np.ndarray) -> float:
    """sigma_max of B_S = sum_{j near} alpha_j P_j (Prop 3: <= 1 - rho_D)."""
    return float(np.linalg.norm(np.einsum("k,kij->ij", alpha_near, transports), 2))


def alibi_far_mass(slope: float, window: int, length: int) -> float:
    """rho_D of softmax(-slope k), k = 0..L-1, far = k >= w, by summation over every key."""
    alpha = softmax(-slope * np.arange(length, dtype=np.float64))
    return float(alpha[window:].sum())


def alibi_far_mass_closed(slope: float, window: int, length: int) -> float:
    """The geometric sum (e^{-m w} - e^{-m L}) / (1 - e^{-m L}) -> e^{-m w} as L grows."""
    return (math.exp(-slope * window) - math.exp(-slope * length)) / (1 - math.exp(-slope * length))


# ----------------------------------------------------------------------------- T12: non-normalising weights


def unnormalised_growth(ms: list[int], lam: float, rng: np.random.Generator, act: str = "sigmoid") -> dict:
    """For bounded scores s ~ U[-lam, lam] over M far keys: {M: (sum w, ||w||_2)} with w = sigmoid(s) or
    softplus(s)."""
    out = {}
    for M in ms:
        s = rng.uniform(-lam, lam, size=M)
        w = 1 / (1 + np.exp(-s)) if act == "sigmoid" else np.logaddexp(0.0, s)
        out[M] = (float(w.sum()), float(np.linalg.norm(w)))
    return out


def loglog_slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log y against log x."""
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])
