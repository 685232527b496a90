"""The Sessa feedback solve in closed form (sessa spec §2.2, §4 T1-T6), float64 numpy.

The solve ``(I - B) s = f`` with a strictly lower routing matrix ``B[t, j] = gamma_t alpha[t, j]`` (j < t)
is what the mixer computes (seqmix.ops.feedback_solve); here it is taken apart:

- ``neumann`` and ``path_power``: the Neumann series sum_k B^k f and the k-hop path sums of eqs. 3-5 (T1);
- ``uniform_*``: uniform routing alpha = 1[j < t] / t, gamma_t = gamma, whose resolvent has the exact
  Gamma-function form of Prop. 29 / Cor. F.2 (T4, T5) and whose row sums are the positional code c_t of
  Cor. I.8 (T6, D3);
- ``diffuse_routing``: random routing with logit spread Delta (D2, T3: alpha <= e^Delta / t).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.special import gammaln


def neumann(B: np.ndarray, f: np.ndarray) -> np.ndarray:
    """sum_{k < T} B^k f (exact for a strictly lower B: B^T = 0). B: (T, T); f: (T, D) -> (T, D)."""
    out, term = f.copy(), f.copy()
    for _ in range(1, B.shape[0]):
        term = B @ term
        out += term
    return out


def path_power(B: np.ndarray, k: int) -> np.ndarray:
    """(B^k)[t, tau] by brute force: the sum over increasing paths tau = i_0 < ... < i_k = t of the edge
    products B[i_r, i_{r-1}]. Enumerates every path: only for T <= ~10. B: (T, T) -> (T, T)."""
    T = B.shape[0]
    out = np.zeros_like(B) if k else np.eye(T)
    if k == 0:
        return out
    for tau in range(T):
        for t in range(tau + k, T):
            for mids in itertools.combinations(range(tau + 1, t), k - 1):
                path = (tau, *mids, t)
                out[t, tau] += math.prod(B[path[r + 1], path[r]] for r in range(k))
    return out


def random_strict_lower(T: int, rng: np.random.Generator, row_sum: float | None = None) -> np.ndarray:
    """A random strictly lower (T, T) matrix of signed Gaussian entries (scaled by T^-1/2); with ``row_sum``
    each row's absolute sum is ``row_sum`` times a U[0.001, 1) factor and the last row's exactly ``row_sum``
    (Lemma 4.2's hypothesis, attained)."""
    B = np.tril(rng.standard_normal((T, T)), -1)
    if row_sum is None:
        return B / np.sqrt(T)
    target = row_sum * rng.uniform(1e-3, 1.0, T)
    target[-1] = row_sum
    sums = np.abs(B).sum(axis=1)
    return B * (target / np.where(sums > 0, sums, 1.0))[:, None]


def solve(B: np.ndarray, f: np.ndarray) -> np.ndarray:
    """s = (I - B)^{-1} f by the library's solve (seqmix.ops.feedback_solve, float64). B: (T, T) strictly
    lower, taken as gamma_t = 1, alpha = B; f: (T, D) -> (T, D)."""
    import torch

    from ....ops.feedback_solve.reference import feedback_solve_dense

    T = B.shape[0]
    s = feedback_solve_dense(
        torch.from_numpy(f)[None], torch.ones(1, T, dtype=torch.float64), torch.from_numpy(B)[None]
    )
    return s[0].numpy()


def resolvent(B: np.ndarray) -> np.ndarray:
    """(I - B)^{-1} of a strictly lower B by a unit-triangular solve (forward substitution, not a general
    inverse). (T, T) -> (T, T)."""
    from scipy.linalg import solve_triangular

    T = B.shape[0]
    return solve_triangular(np.eye(T) - B, np.eye(T), lower=True, unit_diagonal=True)


def norm_inf2(x: np.ndarray) -> float:
    """||x||_{inf,2} = max_t ||x_t||_2 of a (T, D) sequence."""
    return float(np.linalg.norm(x, axis=-1).max())


# ----------------------------------------------------------------------------- uniform routing (T4-T6)


def uniform_routing(T: int, gamma: float) -> np.ndarray:
    """B[t, j] = gamma / t for j < t (row 0 empty). (T, T)."""
    t = np.arange(T, dtype=float)
    return np.tril(np.ones((T, T)), -1) * (gamma / np.maximum(t, 1.0))[:, None]


def uniform_column(tau: int, lag_max: int, gamma: float) -> np.ndarray:
    """y_{tau+l} = [(I - B)^{-1}][tau+l, tau], l = 0..lag_max, by the forward recursion (a token loop with a
    running sum: s_t = gamma / t * sum_{j<t} s_j, s_tau = 1, s_j = 0 for j < tau). -> (lag_max + 1,)."""
    y = np.zeros(lag_max + 1)
    y[0], acc = 1.0, 1.0
    for l in range(1, lag_max + 1):
        y[l] = gamma / (tau + l) * acc
        acc += y[l]
    return y


def uniform_closed_form(tau: int, lags: np.ndarray, gamma: float) -> np.ndarray:
    """Prop. 29: y_{tau+l} = gamma G(tau+1)/G(tau+1+gamma) * G(tau+l+gamma)/G(tau+l+1), l >= 1."""
    lags = np.asarray(lags, dtype=float)
    return gamma * np.exp(prefactor_log(tau, gamma) + gammaln(tau + lags + gamma) - gammaln(tau + lags + 1))


def prefactor_log(tau: int, gamma: float) -> float:
    """log G(tau+1)/G(tau+1+gamma): the tau-dependent prefactor, ~ -gamma log tau (Remark F.4)."""
    return float(gammaln(tau + 1) - gammaln(tau + 1 + gamma))


def gautschi_bounds(t: np.ndarray, gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """Cor. F.3 (tau = 0): (gamma/G(1+gamma)) (t+1)^{-beta} <= y_t <= (gamma/G(1+gamma)) t^{-beta}, beta = 1 -
    gamma. -> (lower, upper), each shaped like t."""
    t = np.asarray(t, dtype=float)
    c = gamma / math.gamma(1 + gamma)
    return c * (t + 1) ** (gamma - 1), c * t ** (gamma - 1)


def resolvent_theta(T: int, gamma: float) -> np.ndarray:
    """Lemma K.15: Theta[i, j] = gamma G(j+1) G(i+gamma) / (G(j+1+gamma) G(i+1)) for i > j, else 0. (T, T)."""
    i, j = np.meshgrid(np.arange(T, dtype=float), np.arange(T, dtype=float), indexing="ij")
    log = gammaln(j + 1) + gammaln(i + gamma) - gammaln(j + 1 + gamma) - gammaln(i + 1)
    return np.where(i > j, gamma * np.exp(np.where(i > j, log, 0.0)), 0.0)


def positional_code(T: int, gamma: float) -> np.ndarray:
    """Cor. I.8: c_0 = 1, c_t = 1 + (gamma / t) sum_{j<t} c_j: the row sums of (I - B)^{-1} under uniform
    routing. -> (T,)."""
    c = np.empty(T)
    c[0], acc = 1.0, 1.0
    for t in range(1, T):
        c[t] = 1.0 + gamma / t * acc
        acc += c[t]
    return c


# ----------------------------------------------------------------------------- diffuse routing (T3, D2)


def diffuse_routing(T: int, delta: float, gamma_max: float, rng: np.random.Generator) -> np.ndarray:
    """B[t, j] = gamma_t alpha[t, j]: logits ~ U[0, Delta] per (t, j < t), alpha the softmax over j < t (so
    alpha <= e^Delta / t: c2 = e^Delta, eq. 60), gamma_t ~ U[-gamma_max, gamma_max]. (T, T)."""
    logits = rng.uniform(0.0, delta, (T, T))
    mask = np.tril(np.ones((T, T), dtype=bool), -1)
    w = np.where(mask, np.exp(logits), 0.0)
    rows = w.sum(axis=1, keepdims=True)
    alpha = np.divide(w, rows, out=np.zeros_like(w), where=rows > 0)
    return rng.uniform(-gamma_max, gamma_max, T)[:, None] * alpha


def theorem8_bound(lags: np.ndarray, eta: float) -> np.ndarray:
    """Theorem 8: |y_{tau+l}| <= eta e^eta l^{-(1 - eta)}, l >= 1."""
    return eta * math.exp(eta) * np.asarray(lags, dtype=float) ** (eta - 1.0)
