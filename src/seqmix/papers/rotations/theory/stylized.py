"""E6 of the rotations spec: the stylized attention model (rotations spec §2.5) simulated, float64 numpy.

One query at route length k = 0 (its own position, S = 1) attends over k = 0..L-1 with logits lam S_k,
S_k = (1/B) sum_b cos Theta_{k,b} (the matched-score idealization, eq. 16); near = k < w, far = k >= w.
Transports (rotations spec E6): ``nope`` (Theta = 0), ``rope`` (Theta_{k,b} = k f_b), ``random_fb`` (a walk of
U(-f_b, f_b) steps, the experimental M3/M4 law) and ``random_pi`` (a walk of U(-pi, pi) steps, beta = 0).
Measured: the far mass rho_D = sum_{k >= w} alpha_k and the per-block far transport
max_b |t_b| = max_b |sum_{k >= w} alpha_k e^{i Theta_{k,b}}|, averaged over draws; beside them the far-mass
lower bound of Prop 3 with K = w near keys, and an ALiBi-style bias -m k for contrast.
"""

from __future__ import annotations

import numpy as np

from .mixing import rope_frequencies
from .scores import far_mass_lower_bound, softmax

TRANSPORTS = ("nope", "rope", "random_fb", "random_pi")
RANDOM = ("random_fb", "random_pi")


def route_phases(transport: str, blocks: int, length: int, rng: np.random.Generator) -> np.ndarray:
    """Theta_{k,b} for k = 0..L-1 (Theta_0 = 0): (L, B). The frequencies are those of d_h = 2B."""
    f = rope_frequencies(2 * blocks)
    k = np.arange(length, dtype=np.float64)[:, None]
    if transport == "nope":
        return np.zeros((length, blocks))
    if transport == "rope":
        return k * f[None, :]
    half = f[None, :] if transport == "random_fb" else np.pi
    steps = rng.uniform(-1.0, 1.0, size=(length, blocks)) * half
    steps[0] = 0.0
    return np.cumsum(steps, axis=0)


def far_mass_and_transport(theta: np.ndarray, lam: float, window: int, bias: np.ndarray | None = None) -> tuple:
    """(rho_D, max_b |t_b|) for one query over the L routes of ``theta`` (L, B); ``bias`` (L,) adds to the logits."""
    return _far_stats(np.cos(theta).mean(axis=1), np.exp(1j * theta[window:]), lam, window, bias)


def _far_stats(score: np.ndarray, far_phasors: np.ndarray, lam: float, window: int, bias=None) -> tuple:
    """(rho_D, max_b |t_b|) from the matched scores S_k (L,) and the far phasors e^{i Theta_{k,b}} (L - w, B)."""
    logits = lam * score if bias is None else lam * score + bias
    alpha = softmax(logits)
    far = alpha[window:]
    return float(far.sum()), float(np.abs(far @ far_phasors).max())


def far_mass_table(
    lams: list[float], lengths: list[int], blocks: int = 48, window: int = 64, draws: int = 3, seed: int = 0
) -> list[dict]:
    """Spec E6's table: rows {transport, lam, L, rho_D, max_t, lower_bound}, means over ``draws`` (one phase draw
    per transport and draw, shared by every lam and L as its prefix). ``lower_bound`` is Prop 3 with K = w."""
    rng = np.random.default_rng(seed)
    acc: dict[tuple, list] = {}
    for draw in range(draws):
        for tr in TRANSPORTS if draw == 0 else RANDOM:  # nope and rope draw nothing: once is their mean
            theta = route_phases(tr, blocks, max(lengths), rng)
            score, phasors = np.cos(theta).mean(axis=1), np.exp(1j * theta[window:])  # once per draw, any lam, L
            for lam in lams:
                for L in lengths:
                    acc.setdefault((tr, lam, L), []).append(_far_stats(score[:L], phasors[: L - window], lam, window))
    rows = []
    for (tr, lam, L), vals in acc.items():
        rho, tmax = np.mean(vals, axis=0)
        rows.append({"transport": tr, "lam": lam, "L": L, "rho_D": float(rho), "max_t": float(tmax),
                     "lower_bound": far_mass_lower_bound(L - window, window, lam)})  # fmt: skip
    return rows


def alibi_contrast(
    lams: list[float], lengths: list[int], slope: float, blocks: int = 48, window: int = 64, seed: int = 0
) -> list[dict]:
    """rho_D with an ALiBi-style bias -slope k added to the random U(-pi, pi) transport's logits, per lam and L
    (one phase draw): rows {lam, L, rho_D, slope}. The bias's geometric tail makes rho_D converge as L grows."""
    rng = np.random.default_rng(seed)
    theta = route_phases("random_pi", blocks, max(lengths), rng)
    score, phasors = np.cos(theta).mean(axis=1), np.exp(1j * theta[window:])
    bias = -slope * np.arange(max(lengths), dtype=np.float64)
    return [
        {"lam": lam, "L": L, "slope": slope,
         "rho_D": _far_stats(score[:L], phasors[: L - window], lam, window, bias[:L])[0]}
        for lam in lams
        for L in lengths
    ]  # fmt: skip
