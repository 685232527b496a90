"""Numeric checks of the frontier-superposition paper's auxiliary bounds (superposition spec E10, §4 T5, T7, T11-T13).

Each function measures a stated inequality on explicit instances and returns plain numbers; the claims in
config/papers/superposition.yaml say what the paper states and the verdict says whether it held:

- ``softmax_saturation``: Lemma 12 (three bounds for a softmax whose set S leads by a logit gap Δ);
- ``frontier_tail``: Lemma 11's Chernoff tail P(|k_c - (np)^c| > t (np)^c) <= 2 exp(-t² (np)^c / 3);
- ``prop3_expansion`` / ``prop3_floor``: Prop. 3(i), the Step-3 expansion coefficient and the quadratic floor;
- ``lemma31_kappa`` / ``mobius_gradient_flow``: Lemma 31's κ, the exponential decay of t = A/B and
  Lemma 30's invariants along a gradient flow of the Möbius loss;
- Lemma 9's Hessian gap lives with the W^emb model in ``superposition_wemb``.

All float64.
"""

from __future__ import annotations

import math

import torch

from ....ops.graphs import sample_graphs
from ....rng import counter_generator
from .reduced import F64, mobius_AB, mobius_loss

# ----------------------------------------------------------------------------- Lemma 12


def saturation_instance(a: torch.Tensor, S: torch.Tensor) -> dict:
    """Lemma 12 quantities for logits a (K,) and a boolean set mask S (K,): the gap Δ, the three left-hand
    sides (mass outside S, max |∂σ_i/∂a_k| for i in S, k not in S, spectral norm of the Jacobian restricted
    to perturbations vanishing on S) and the paper's right-hand sides."""
    s = torch.softmax(a, -1)
    K, m = a.numel(), int(S.sum())
    gap = float(a[S].min() - a[~S].max())
    J = torch.diag(s) - torch.outer(s, s)
    return {
        "K": K,
        "S": m,
        "gap": gap,
        "mass_out": float(s[~S].sum()),
        "mass_bound": (K - m) * math.exp(-gap) / m,
        "cross": float((s[S][:, None] * s[~S][None, :]).max()),
        "cross_bound": math.exp(-gap) / m**2,
        "restricted_norm": float(torch.linalg.matrix_norm(J[:, ~S], ord=2)),
        # ||diag(σ_R)|| + ||σ|| ||σ_R|| <= 2 Σ_R σ, so part 3's O(e^-Δ) has the explicit constant 2(K-|S|)/|S|
        "restricted_bound": 2 * (K - m) * math.exp(-gap) / m,
    }


def adversarial_saturation(m: int, gap: float = 6.0, K: int = 20) -> tuple[torch.Tensor, torch.Tensor]:
    """The instance that maximises σ_i σ_k: one element of S ahead of the other |S| - 1 by ln(|S| - 1), all
    non-members exactly Δ below min_S. Then σ_i σ_k -> e^-Δ / (4(|S| - 1)) > e^-Δ / |S|² for |S| >= 3."""
    a = torch.full((K,), -gap, dtype=F64)
    a[:m] = 0.0
    a[0] = math.log(max(m - 1, 1))
    S = torch.zeros(K, dtype=torch.bool)
    S[:m] = True
    return a, S


def softmax_saturation(samples: int, seed: int = 0) -> dict:
    """Random instances (K in 5..60, |S| in 1..K-1, Δ in 0.5..12, logits within S spread by up to 3) plus the
    adversarial family at |S| = 2..8. Returns the largest LHS/RHS ratio of each part (<= 1 means it held)."""
    g = counter_generator("superposition/lemma12", seed)
    worst = {"mass": 0.0, "cross": 0.0, "restricted": 0.0}
    for _ in range(samples):
        K = int(torch.randint(5, 61, (1,), generator=g))
        m = int(torch.randint(1, K, (1,), generator=g))
        gap = 0.5 + 11.5 * float(torch.rand(1, generator=g, dtype=F64))
        spread = 3.0 * float(torch.rand(1, generator=g, dtype=F64))
        a = torch.empty(K, dtype=F64)
        a[:m] = spread * torch.rand(m, generator=g, dtype=F64)
        a[:m] -= a[:m].min()
        a[m:] = -gap - 4.0 * torch.rand(K - m, generator=g, dtype=F64)
        a[m] = -gap  # the gap is attained
        S = torch.zeros(K, dtype=torch.bool)
        S[:m] = True
        r = saturation_instance(a, S)
        for key, lhs in (("mass", "mass_out"), ("cross", "cross"), ("restricted", "restricted_norm")):
            worst[key] = max(worst[key], r[lhs] / r[f"{key}_bound"])
    adv = {}
    for m in range(2, 9):
        r = saturation_instance(*adversarial_saturation(m))
        adv[m] = r["cross"] / r["cross_bound"]
    return {
        "random_mass_ratio": worst["mass"],
        "random_cross_ratio": worst["cross"],
        "random_restricted_ratio": worst["restricted"],
        "adversarial_cross_ratio": max(adv.values()),
        "adversarial_cross_ratio_by_S": adv,
        "samples": samples,
    }


# ----------------------------------------------------------------------------- Lemma 11


def frontier_tail(n: int, p: float, L: int, samples: int, ts=(0.25, 0.5, 0.75, 0.9), seed: int = 0) -> list[dict]:
    """Monte Carlo of the frontier sizes k_c = |nodes first reached at hop c| (the Galton-Watson generation
    sizes of the proof) against Lemma 11's tail bound. One row per (c, t): the empirical tail, the bound, and
    whether the bound is informative (< 1)."""
    g = counter_generator("superposition/lemma11", n, p, L, seed)
    sizes = []
    for start in range(0, samples, 4096):
        b = sample_graphs(g, min(4096, samples - start), n, p, L, "exact")
        sizes.append(b.V.sum(-1).to(F64))  # (B, L+1)
    k = torch.cat(sizes)
    rows = []
    for c in range(1, L + 1):
        mean = (n * p) ** c
        for t in ts:
            emp = float(((k[:, c] - mean).abs() > t * mean).to(F64).mean())
            bound = 2 * math.exp(-t * t * mean / 3)
            rows.append(
                {
                    "c": c,
                    "t": t,
                    "np_c": mean,
                    "E_k": float(k[:, c].mean()),
                    "gw_mean": (n * p - p) ** c,
                    "empirical_tail": emp,
                    "bound": bound,
                    "informative": bound < 1,
                    "holds": emp <= bound,
                }
            )
    return rows


# ----------------------------------------------------------------------------- Prop. 3(i)


def one_minus_cos_step(x, k, K):
    """1 - cos_c(x) of Lemma 18 without cancellation: the numerator K(1 + x²/m_f) - (sqrt k + x)² is exactly
    (m_f - sqrt k x)²/m_f, so 1 - cos = (m_f - sqrt k x)² / (m_f D), D = s (s + sqrt k + x), s = sqrt K
    sqrt(1 + x²/m_f)."""
    mf = K - k
    s = math.sqrt(K) * torch.sqrt(1 + x**2 / mf)
    return (mf - math.sqrt(k) * x) ** 2 / (mf * s * (s + math.sqrt(k) + x))


def prop3_expansion(alpha: float, k: float, K: float, tau: float = 1e-6) -> dict:
    """Step 3 of Prop. 3: (1 - cos_c(α_eff,c(τ))) / τ² as τ -> 0 (α_eff,c(τ) = (ατ + m_f)/(τ + sqrt k)),
    against the paper's coefficient (α - α*)² / (2 m_f k_{c+1} k_c) and the one that follows from the
    corrected curvature -k_c²/(m_f k_{c+1}²) (spec I14): (α - α*)² k_c / (2 m_f k_{c+1}²)."""
    mf = K - k
    ast = mf / math.sqrt(k)
    t = torch.tensor(tau, dtype=F64)
    ae = (alpha * t + mf) / (t + math.sqrt(k))
    numeric = float(one_minus_cos_step(ae, k, K) / t**2)
    return {
        "numeric": numeric,
        "paper": (alpha - ast) ** 2 / (2 * mf * K * k),
        "corrected": (alpha - ast) ** 2 * k / (2 * mf * K**2),
    }


def prop3_floor(samples: int, np_: float = 2.0, D: int = 3, seed: int = 0) -> dict:
    """The quadratic floor L~(θ) >= |A|² / (4 m_f^(D-2) k_{D-1}) (1 - 1/np) on the linear Möbius form, over
    θ = (α, a, b1', η) drawn in the experimental regime (α in [1, 10], a in [0.1, 1.5], b1' in [-0.5, -0.01],
    η in [-2, 0.5]) with |B| <= ||θ|| (the proof's assumption). Returns the fraction where it held and the
    smallest L~ / floor."""
    g = counter_generator("superposition/prop3-floor", seed)
    k = torch.tensor([np_**c for c in range(D)], dtype=F64)
    K = k * np_
    lo = torch.tensor([1.0, 0.1, -0.5, -2.0], dtype=F64)
    hi = torch.tensor([10.0, 1.5, -0.01, 0.5], dtype=F64)
    theta = lo + (hi - lo) * torch.rand(samples, 4, generator=g, dtype=F64)
    A, B = mobius_AB(theta)
    keep = (B.abs() <= theta.norm(dim=-1)) & (A.abs() > 1e-3)
    theta, A = theta[keep], A[keep]
    loss = mobius_loss(theta, k, K, relu=False)
    mf_dm2 = np_ ** (D - 2) * (np_ - 1)
    floor = A**2 / (4 * mf_dm2 * np_ ** (D - 1)) * (1 - 1 / np_)
    ratio = loss / floor
    return {
        "samples": int(keep.sum()),
        "frac_holds": float((ratio >= 1).to(F64).mean()),
        "min_ratio": float(ratio.min()),
        "median_ratio": float(ratio.median()),
    }


# ----------------------------------------------------------------------------- Lemma 30 / 31


def lemma31_kappa(alpha: float, k: torch.Tensor, K: torch.Tensor) -> float:
    """κ(α) = Σ_c (α - α*_c)² / (sqrt k_c m_f sqrt k_{c+1} (1 + α*_c²/m_f)^{3/2})."""
    mf = K - k
    ast = mf / k.sqrt()
    return float(((alpha - ast) ** 2 / (k.sqrt() * mf * K.sqrt() * (1 + ast**2 / mf) ** 1.5)).sum())


def lemma31_kappa_numeric(alpha: float, k: torch.Tensor, K: torch.Tensor, t: float = 1e-6) -> float:
    """g(t)/t at small t with g = ∂L~/∂t by autograd (Lemma 31 Step 1: g(t) = κ t + O(t²))."""
    tt = torch.tensor(t, dtype=F64, requires_grad=True)
    mf = K - k
    ae = (alpha * tt + mf) / (tt + k.sqrt())
    loss = (1 - (k.sqrt() + ae) / (K.sqrt() * torch.sqrt(1 + ae**2 / mf))).sum()
    (gt,) = torch.autograd.grad(loss, tt)
    return float(gt) / t


def mobius_gradient_flow(
    theta0: torch.Tensor, np_: float = 2.0, D: int = 3, lr: float = 1e-2, steps: int = 20000, log_every: int = 200
) -> dict:
    """Plain gradient descent (a discretised gradient flow, flow time τ = lr * step) on the linear Möbius
    loss from inits (R, 4). Per run: whether b1' stayed negative (Lemma 30), whether E = b1'² + t² never
    increased (beyond 1e-12 relative), the fitted decay rate of |t| over the last half of the trace and
    ν = κ(α_∞) / (2 M_∞²) with M_∞ = max |b1'| along the run. Lemma 30's premise is b1' < 0 and t > 0 at
    the start (``premise``)."""
    k = torch.tensor([np_**c for c in range(D)], dtype=F64)
    K = k * np_
    theta = theta0.clone().to(F64).requires_grad_(True)
    trace = []
    for step in range(steps + 1):
        loss = mobius_loss(theta, k, K, relu=False)
        if step % log_every == 0:
            with torch.no_grad():
                A, B = mobius_AB(theta)
                trace.append((step * lr, theta[:, 2].clone(), (A / B).clone()))
        if step == steps:
            break
        (gr,) = torch.autograd.grad(loss.sum(), theta)
        with torch.no_grad():
            theta -= lr * gr
    taus = torch.tensor([t for t, _, _ in trace], dtype=F64)
    b1 = torch.stack([b for _, b, _ in trace])  # (T, R)
    tt = torch.stack([x for _, _, x in trace])
    E = b1**2 + tt**2
    rows = []
    for r in range(theta.shape[0]):
        # the exponential phase: |t| between 1e-10 (before float64 noise) and a tenth of its start
        window = (tt[:, r].abs() < 0.1 * tt[0, r].abs()) & (tt[:, r].abs() > 1e-10)
        rate = float("nan")
        if int(window.sum()) >= 3:
            x, y = taus[window], torch.log(tt[window, r].abs())
            rate = -float(((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum())
        alpha_inf = float(theta[r, 0].detach())
        M = float(b1[:, r].abs().max())
        rows.append(
            {
                "run": r,
                "premise": bool(tt[0, r] > 0 and b1[0, r] < 0),
                "b1_negative": bool((b1[:, r] < 0).all()),
                "E_nonincreasing": bool((E[1:, r] <= E[:-1, r] * (1 + 1e-12)).all()),
                "t_start": float(tt[0, r]),
                "t_end": float(tt[-1, r]),
                "rate": rate,
                "nu": lemma31_kappa(alpha_inf, k, K) / (2 * M * M),
                "alpha_inf": alpha_inf,
            }
        )
    return {"runs": rows}
