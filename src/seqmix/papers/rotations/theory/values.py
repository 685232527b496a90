"""Value-side results of the rotations paper (rotations spec §4, T7-T11), float64 numpy.

- T7 (Def. 1, Example 9): the far covariance Delta_D = c0^2 T T^T + sigma_w^2 ||alpha||^2 I of
  e = sum_k alpha_k P_k (c0 G + w_k); RoPE's floor c0^2 q_L^2 + sigma_w^2 ||alpha||^2; the exact second moment
  E|t|^2 = sum_{k,k'} alpha_k alpha_k' m^{|k-k'|} of a random-walk transport.
- T8 (Thm 7): the separate-path bound max_b |t_b| <= R_pp(beta^w, rho, a; eta) (eq. 28).
- T9 (Thm 6): the same-path bound R_same (eq. 29) and the leave-one-block sandwich (eq. 31).
- T10 (Example 10): adaptive selection defeats cancellation although ||alpha||_2 is small.
- T11 (Lemma 3, Cor 2, Lemma 4): near-signal gain (1 - rho)(1 - gamma) and the sub-Gaussian gamma.

Oracles: Monte Carlo of the stated random models, dense matrices, brute-force double sums.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize

from .scores import random_orthogonal, softmax


def rpp(mu: float, rho: float, a: float, beta: float, blocks: int, eta: float) -> float:
    """R_pp(mu, rho, a; eta) = mu rho + (4 a / (1 - beta)) sqrt(ln(4 B / eta)) (eq. 28)."""
    return mu * rho + 4 * a / (1 - beta) * math.sqrt(math.log(4 * blocks / eta))


def rsame(beta: float, window: int, rho: float, a: float, lam: float, blocks: int, eta: float) -> float:
    """R_same = e^{2 lam / B} R_pp(beta^w, rho*, a*; eta) + (e^{2 lam / B} - 1) rho* (eq. 29)."""
    e = math.exp(2 * lam / blocks)
    return e * rpp(beta**window, rho, a, beta, blocks, eta) + (e - 1) * rho


def half_width_for_beta(beta: float) -> float:
    """The a in (0, pi) with sin(a) / a = beta (psi ~ U[-a, a] has first harmonic beta)."""
    return float(optimize.brentq(lambda a: math.sin(a) / a - beta, 1e-12, math.pi))


# ----------------------------------------------------------------------------- T7


def shared_background_cov(alpha: np.ndarray, P: np.ndarray, c0: float, sigma_w: float) -> np.ndarray:
    """Delta_D = c0^2 T T^T + sigma_w^2 ||alpha||^2 I with T = sum_k alpha_k P_k ((M,), (M, d, d)) -> (d, d)."""
    T = np.einsum("k,kij->ij", alpha, P)
    return c0**2 * T @ T.T + sigma_w**2 * (alpha @ alpha) * np.eye(P.shape[1])


def shared_background_cov_mc(
    alpha: np.ndarray, P: np.ndarray, c0: float, sigma_w: float, samples: int, rng: np.random.Generator
) -> np.ndarray:
    """Sample covariance of e = sum_k alpha_k P_k (c0 G + w_k), G ~ N(0, I), w_k ~ N(0, sigma_w^2 I): (d, d)."""
    M, d, _ = P.shape
    G = rng.standard_normal((samples, d))
    W = rng.standard_normal((samples, M, d)) * sigma_w
    A = (alpha[:, None, None] * P).transpose(0, 2, 1).reshape(M * d, d)  # rows (k, j), columns i
    e = (c0 * G[:, None, :] + W).reshape(samples, M * d) @ A
    return e.T @ e / samples  # mean zero by construction


def rope_transports(d_head: int, ks: np.ndarray) -> np.ndarray:
    """Dense P_k = blockdiag(R(-f_b k)) in the half-split layout (block b = coordinates (b, b + B)):
    (len(ks), d_h, d_h)."""
    B = d_head // 2
    f = 10000.0 ** (-2.0 * np.arange(B) / d_head)
    th = -np.outer(ks, f)
    P = np.zeros((len(ks), d_head, d_head))
    idx = np.arange(B)
    P[:, idx, idx] = P[:, idx + B, idx + B] = np.cos(th)
    P[:, idx, idx + B], P[:, idx + B, idx] = -np.sin(th), np.sin(th)
    return P


def rope_coherence(alpha: np.ndarray, ks: np.ndarray, d_head: int) -> np.ndarray:
    """q_{b,L} = |sum_k alpha_k e^{-i f_b k}| for every block b: (B,)."""
    f = 10000.0 ** (-2.0 * np.arange(d_head // 2) / d_head)
    return np.abs(np.exp(-1j * np.outer(f, ks)) @ alpha)


def random_walk_second_moment(alpha: np.ndarray, m: float) -> float:
    """E|sum_k alpha_k Pi_k|^2 = sum_{k,k'} alpha_k alpha_k' m^{|k-k'|} for consecutive k and a random walk of
    i.i.d. phasors with real mean m, in O(M): 2 sum_k alpha_k s_k - ||alpha||^2, s_k = alpha_k + m s_{k-1}."""
    s, total = 0.0, 0.0
    for x in alpha:
        s = x + m * s
        total += x * s
    return float(2 * total - alpha @ alpha)


def random_walk_second_moment_dense(alpha: np.ndarray, m: float) -> float:
    """The same double sum formed densely (oracle, O(M^2))."""
    k = np.arange(alpha.size)
    return float(alpha @ (m ** np.abs(k[:, None] - k[None, :])) @ alpha)


def walk_phasors(blocks: int, start: int, length: int, half_width: float, rng: np.random.Generator) -> np.ndarray:
    """Pi_{k,b} = exp(-i sum_{l <= k} psi_{l,b}), psi ~ U[-a, a], for k = start..length-1 (Pi_0 = 1):
    (blocks, length - start) complex."""
    steps = rng.uniform(-half_width, half_width, size=(blocks, length))
    steps[:, 0] = 0.0
    return np.exp(-1j * np.cumsum(steps, axis=1)[:, start:])


# ----------------------------------------------------------------------------- T8, T9


def far_weights(profile: str, window: int, length: int, rho: float, ratio: float = 0.99) -> np.ndarray:
    """Fixed far weights over k = w..L-1 summing to rho: 'uniform' or 'geometric' (alpha_k ∝ ratio^(k - w))."""
    n = length - window
    x = np.ones(n) if profile == "uniform" else ratio ** np.arange(n, dtype=np.float64)
    return rho * x / x.sum()


def separate_path_trial(alpha: np.ndarray, window: int, half_width: float, blocks: int, rng) -> np.ndarray:
    """|t_b| = |sum_{k >= w} alpha_k Pi_{k,b}| for independent V-side walks: (blocks,)."""
    return np.abs(walk_phasors(blocks, window, window + alpha.size, half_width, rng) @ alpha)


def same_path_trial(blocks: int, length: int, window: int, half_width: float, lam: float, rng) -> dict:
    """One draw of Assumption 3: logits lam/B sum_b Re Pi_{k,b} over k = 0..L-1 and the same phasors on the values.
    Returns {t_max, rho, a, phasors (B, L), logits (L,), alpha (L,)}."""
    Pi = walk_phasors(blocks, 0, length, half_width, rng)
    logits = lam / blocks * Pi.real.sum(axis=0)
    alpha = softmax(logits)
    t = Pi[:, window:] @ alpha[window:]
    far = alpha[window:]
    return {"t_max": float(np.abs(t).max()), "rho": float(far.sum()), "a": float(np.linalg.norm(far)),
            "phasors": Pi, "logits": logits, "alpha": alpha}  # fmt: skip


def leave_one_block_ratios(trial: dict, lam: float) -> tuple[float, float]:
    """(min, max) over blocks b and keys k of alpha_k / alpha_k^(-b), alpha^(-b) the softmax without block b's term
    in every logit; eq. (31) puts them in [e^{-2 lam / B}, e^{2 lam / B}]."""
    Pi, logits, alpha = trial["phasors"], trial["logits"], trial["alpha"]
    loo = softmax(logits[None, :] - lam / Pi.shape[0] * Pi.real)
    r = alpha[None, :] / loo
    return float(r.min()), float(r.max())


# ----------------------------------------------------------------------------- T10, T11


def adaptive_selection_trial(m: int, eps: float, rng: np.random.Generator) -> tuple[float, float]:
    """(||alpha||_2, |sum alpha_k zeta_k|) for weights uniform on {k : |arg zeta_k| <= eps}, zeta uniform."""
    arg = rng.uniform(-np.pi, np.pi, size=m)
    sel = np.abs(arg) <= eps
    count = int(sel.sum())
    if count == 0:
        return math.inf, 0.0
    return 1 / math.sqrt(count), float(abs(np.exp(1j * arg[sel]).mean()))


def lemma4_gamma(mu: float, sigma: float, n_sig: int, blocks: int, near: int, eta: float) -> float:
    """gamma = mu + sigma sqrt(2 n_sig ln(2 B |S| / eta)) (Lemma 4)."""
    return mu + sigma * math.sqrt(2 * n_sig * math.log(2 * blocks * near / eta))


def near_route_angles(sigma: float, n_sig: int, blocks: int, near: int, trials: int, rng) -> np.ndarray:
    """max |Theta| over blocks and near routes, each route a sum of n_sig N(0, sigma^2) steps: (trials,)."""
    theta = rng.standard_normal((trials, blocks, near, n_sig)).sum(axis=3) * sigma
    return np.abs(theta).reshape(trials, -1).max(axis=1)


def near_gain_trial(d: int, rank: int, near: int, rho: float, scale: float, rng) -> tuple[float, float]:
    """(sigma_min(B_S U) for orthonormal U (d, r), gamma = max_j ||(P_j - I) U||_op): P_j = exp of a small random
    skew matrix (dense, non-commuting), near weights random positive with total 1 - rho (Lemma 3)."""
    w = rng.uniform(0.1, 1.0, size=near)
    w *= (1 - rho) / w.sum()
    U = random_orthogonal(d, 1, rng)[0][:, :rank]
    X = rng.standard_normal((near, d, d)) * scale
    ev, V = np.linalg.eig(X - X.transpose(0, 2, 1))
    P = np.einsum("nij,nj,njk->nik", V, np.exp(ev), np.linalg.inv(V)).real
    gamma = max(np.linalg.norm((p - np.eye(d)) @ U, 2) for p in P)
    BU = np.einsum("n,nij->ij", w, P) @ U
    return float(np.linalg.svd(BU, compute_uv=False).min()), float(gamma)
