"""Closed forms of the frontier-superposition paper in the tree regime (superposition spec §2.4, §4): Lemma
18's single-step
cosine and its curvature (Lemma 27, with the spec's I14 correction), Prop. 1's ceiling, Prop. 7's attenuation,
the selectivity-ladder and saturation gammas, the Lemma 9 Hessian-gap bound and the phase betas.

Convention: k_c = (np)^c, m_f^(c) = k_{c+1} - k_c. Plain math on floats; ``seqmix.papers.superposition.theory.reduced``
re-exports every name, so callers keep using ``superposition.cos_step`` etc.
"""

from __future__ import annotations

import math

# ----------------------------------------------------------------------------- Lemma 18 / 27, Prop. 1


def cos_step(x, k, K):
    """Lemma 18: cos_c(x) = (sqrt k + x) / (sqrt K sqrt(1 + x^2/m_f)), m_f = K - k."""
    mf = K - k
    return (math.sqrt(k) + x) / (math.sqrt(K) * math.sqrt(1 + x * x / mf))


def alpha_star(k, K) -> float:
    """Maximiser of Lemma 18: m_f / sqrt(k) (cos = 1 there)."""
    return (K - k) / math.sqrt(k)


def cos_step_d1(x, k, K):
    """cos_c'(x) = (m_f - sqrt k x) / (m_f sqrt K (1 + x^2/m_f)^{3/2})."""
    mf = K - k
    return (mf - math.sqrt(k) * x) / (mf * math.sqrt(K) * (1 + x * x / mf) ** 1.5)


def curvature_corrected(k, K) -> float:
    """cos_c''(alpha*) = -k^2 / (m_f K^2) (spec I14: the paper's Lemma 27 value is -1/(m_f K))."""
    return -k * k / ((K - k) * K * K)


def curvature_paper(k, K) -> float:
    return -1.0 / ((K - k) * K)


def curvature_numeric(k, K, h: float = 1e-4) -> float:
    x = alpha_star(k, K)
    return (cos_step(x + h, k, K) - 2 * cos_step(x, k, K) + cos_step(x - h, k, K)) / (h * h)


def prop1_ceiling(np_: float) -> float:
    """No residual, saturated attention: cos = sqrt(m_f / k_{c+1}) -> sqrt(1 - 1/np)."""
    return math.sqrt(1 - 1 / np_)


def e2e_attenuation(np_: float, D: int, c: int) -> float:
    """Prop. 7 factor (np)^{-(D-c-2)/2}."""
    return np_ ** (-(D - c - 2) / 2)


def ladder_gamma(d: int, k: float, m: float, delta: float) -> float:
    """Lemma 20: gamma_c* = 2 sqrt(d) sqrt(k_c) log(m / delta)."""
    return 2 * math.sqrt(d) * math.sqrt(k) * math.log(m / delta)


def gamma_sat(d: int, k: float, n: int) -> float:
    """Lemma 34: 8 sqrt(d) sqrt(k_{D-1}) log n."""
    return 8 * math.sqrt(d) * math.sqrt(k) * math.log(n)


def hessian_gap_bound(d: int, n: int) -> float:
    """Lemma 9: lambda_perp >= 1 / (8 d n^3)."""
    return 1.0 / (8 * d * n**3)


def phase_betas(np_: float, D: int, k_last: float) -> tuple[float, float]:
    """App. I: beta_I = ln(2 k_{D-1} R_min(D-1, D)), beta_III = ln(2 R_min(D-1, D)), R_min(c, D) = (np)^{-(D-2-c)/2}."""
    r = np_ ** (-(D - 2 - (D - 1)) / 2)
    return math.log(2 * k_last * r), math.log(2 * r)
