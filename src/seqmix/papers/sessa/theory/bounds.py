"""Attention dilution, SSM forgetting and softmax sharpening on random instances (sessa spec §4 T7, T8, T14),
float64. Each function returns the ratio of the measured side to the bound's side (<= 1 when the bound
holds), so the checks read one number per statement. Gradients come from torch autograd in float64.
"""

from __future__ import annotations

import math

import numpy as np
import torch

F64 = torch.float64


def softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max())
    return e / e.sum()


def dilution_ratios(n: int, spread: float, rng: np.random.Generator) -> tuple[float, float]:
    """Lemma C.1: logits with spread <= Delta_0 over n entries give e^{-Delta_0}/n <= alpha_j <= e^{Delta_0}/n.
    -> (min_j alpha_j n e^{Delta_0}, max_j alpha_j n e^{-Delta_0}): >= 1 and <= 1 when the lemma holds."""
    alpha = softmax(rng.uniform(0.0, spread, n))
    return float(alpha.min() * n * math.exp(spread)), float(alpha.max() * n * math.exp(-spread))


def lemma43_ratio(t: int, d: int, seed: int) -> float:
    """Lemma 4.3 for token-wise q, k (q_t = W_Q x_t, k_j = W_K x_j, logits <q_t, k_j>/sqrt d over j <= t):
    the largest over tau < t of sum_j ||d alpha_{t,j}/d x_tau|| / (2 alpha_{t,tau} ||d logit_{t,tau}/d x_tau||)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(t + 1, d, generator=g, dtype=F64)
    wq, wk = (torch.randn(d, d, generator=g, dtype=F64) for _ in range(2))

    def alpha_logits(xx):
        logits = (xx[t] @ wq) @ (xx @ wk).T / math.sqrt(d)
        return torch.softmax(logits, 0), logits

    jac_a = torch.autograd.functional.jacobian(lambda xx: alpha_logits(xx)[0], x)  # (t+1, t+1, d)
    jac_l = torch.autograd.functional.jacobian(lambda xx: alpha_logits(xx)[1], x)
    alpha = alpha_logits(x)[0]
    ratios = [float(jac_a[:, tau].norm(dim=-1).sum() / (2 * alpha[tau] * jac_l[tau, tau].norm())) for tau in range(t)]
    return max(ratios)


def lemma_b4_ratio(n: int, dz: int, seed: int) -> float:
    """Lemma B.4: sum_j ||d alpha_j/dz|| <= 2 sum_i alpha_i ||d logit_i/dz|| for logits = tanh(M z) (a
    nonlinear map of a shared z). -> left / right."""
    g = torch.Generator().manual_seed(seed)
    m = torch.randn(n, dz, generator=g, dtype=F64)
    z = torch.randn(dz, generator=g, dtype=F64)
    logits_of = lambda zz: 3.0 * torch.tanh(m @ zz)
    jac_a = torch.autograd.functional.jacobian(lambda zz: torch.softmax(logits_of(zz), 0), z)
    jac_l = torch.autograd.functional.jacobian(logits_of, z)
    alpha = torch.softmax(logits_of(z), 0)
    return float(jac_a.norm(dim=-1).sum() / (2 * (alpha * jac_l.norm(dim=-1)).sum()))


def diffuse_attention_column(tau: int, lag_max: int, spread: float, rng: np.random.Generator) -> np.ndarray:
    """J_attn[tau+l, tau] = alpha[tau+l, tau] with logits ~ U[0, Delta] over j <= t. -> (lag_max + 1,)."""
    out = np.empty(lag_max + 1)
    for l in range(lag_max + 1):
        t = tau + l
        out[l] = softmax(rng.uniform(0.0, spread, t + 1))[tau]
    return out


# ----------------------------------------------------------------------------- SSM forgetting (T8)


def stable_lti(n: int, rho: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A random (n x n) A with spectral radius rho (not normal: transient growth is allowed), B (n, 1), C (1, n)."""
    a = rng.standard_normal((n, n))
    a *= rho / np.abs(np.linalg.eigvals(a)).max()
    return a, rng.standard_normal((n, 1)), rng.standard_normal((1, n))


def lti_kernel(a: np.ndarray, b: np.ndarray, c: np.ndarray, lag_max: int) -> np.ndarray:
    """||C A^l B||, l = 0..lag_max."""
    out, state = np.empty(lag_max + 1), b.copy()
    for l in range(lag_max + 1):
        out[l] = np.linalg.norm(c @ state)
        state = a @ state
    return out


def zoh_state_ratio(T: int, a_min: float, m: float, rng: np.random.Generator) -> tuple[float, float]:
    """Lemma 4.4: h_t = exp(-a Delta_t) h_{t-1} + (1 - exp(-a Delta_t))/a b_t with |b_t| <= M, a >= a_min
    gives |h_t| <= M / a_min. -> (max_t |h_t| a_min / M for random b, Delta, a; the same for b_t = M, a =
    a_min: the case that approaches the bound)."""
    out = []
    for b, a in ((rng.uniform(-m, m, T), rng.uniform(a_min, 4 * a_min)), (np.full(T, m), a_min)):
        dt = rng.uniform(0.01, 1.0, T)
        h, hmax = 0.0, 0.0
        for t in range(T):
            h = math.exp(-a * dt[t]) * h + (1 - math.exp(-a * dt[t])) / a * b[t]
            hmax = max(hmax, abs(h))
        out.append(hmax * a_min / m)
    return out[0], out[1]


def freeze_time_ratio(T: int, lam: float, c_delta: float, rng: np.random.Generator) -> float:
    """Prop. 5: sum_{r=tau+1}^t Delta_r >= c_Delta l implies prod_r exp(-lambda Delta_r) <= exp(-lambda c_Delta l).
    Delta_r >= c_Delta drawn at random. -> max over (tau, l) of the product / the bound."""
    dt = c_delta + rng.exponential(c_delta, T)
    cum = np.concatenate([[0.0], np.cumsum(dt)])
    idx = np.arange(T + 1)
    lags = idx[None, :] - idx[:, None]
    mask = lags > 0
    log_ratio = -lam * (cum[None, :] - cum[:, None]) + lam * c_delta * lags
    return float(np.exp(log_ratio[mask].max()))


# ----------------------------------------------------------------------------- softmax sharpening (T14)


def sharpening_margin(n: int, delta: float, gap: float, rng: np.random.Generator, draws: int) -> float:
    """Lemma I.2: a top logit ahead of the others by >= Delta at inverse temperature sigma = log((n-1)/delta)
    / Delta gives p_max >= 1 - delta. -> min over random instances of p_max - (1 - delta) (>= 0 when it
    holds); the others sit anywhere in [top - Delta - gap, top - Delta]."""
    sigma = math.log((n - 1) / delta)  # Delta = 1
    worst = math.inf
    for _ in range(draws):
        z = np.concatenate([[0.0], -1.0 - rng.uniform(0.0, gap, n - 1)])
        worst = min(worst, softmax(sigma * z)[0] - (1 - delta))
    return float(worst)


def rope_gap(T: int) -> float:
    """Delta_T = 1 - max_{s = 1..T-1} cos s (Lemma I.5: how far unit-frequency RoPE keeps the diagonal ahead)."""
    # 1 - cos s = 2 sin^2(s/2): no cancellation at the 1e-9 level of T >= 1024
    return float((2 * np.sin(np.arange(1, T, dtype=float) / 2) ** 2).min())
