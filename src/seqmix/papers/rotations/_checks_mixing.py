"""Rows of the theory checks T1, T2 and T13 (rotations spec §4): mixing of accumulated rotations.

A Monte Carlo comparison is reported as a z-score, the largest |estimate - closed form| times sqrt(samples)
(the estimate of a mean of unit-norm quantities has standard error <= 1/sqrt(samples)), so one claim
threshold (< Z_TOL) holds at every scale."""

from __future__ import annotations

import math

import numpy as np

from ._rows import rng_for, row
from .theory import mixing as tm

Z_TOL = 5.0
Z_NOTE = f"< {Z_TOL:g} Monte Carlo standard errors (|estimate - closed form| * sqrt(samples))"
MC_NOTE = "Monte Carlo: the op norm of a sample mean is biased up by O(sqrt(d / samples)); judged through mean_z"


def brute_force_window(beta: float, eps: float) -> float:
    """The first n with beta**n <= eps, by doubling then bisection on the power itself (oracle of w_eps)."""
    if beta <= 0:
        return 1.0
    hi = 1
    while beta**hi > eps:
        hi *= 2
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if beta**mid <= eps else (mid, hi)
    return float(hi)  # invariant: beta**lo > eps >= beta**hi


def check_t1(s: dict, seed: int) -> list[dict]:
    """Example 1 / Thm 1: the first harmonic of U[-a, a] walks, windows, the random variant's blocks."""
    rows = []
    for i, a in enumerate(s["a"]):
        beta = tm.sinc_beta(a)
        rows.append(row("T1", "beta", beta, relation="==", a=a))
        for eps in s["eps"]:
            w = float(tm.mixing_window(beta, eps))
            rows.append(row("T1", "window", w, brute_force_window(beta, eps), "==", "exact", a=a, eps=eps))
        emp = tm.harmonic_mc(a, s["m"], s["n_max"], s["samples"], rng_for(seed, 1, i))
        n = np.arange(1, s["n_max"] + 1)
        for j, m in enumerate(s["m"]):
            pred = (math.sin(m * a) / (m * a)) ** n
            z = float(np.abs(emp[j] - np.abs(pred)).max() * math.sqrt(s["samples"]))
            rows.append(row("T1", "harmonic_z", z, 0.0, "~", Z_NOTE, a=a, m=m, n_max=s["n_max"]))
    d = s["d_head"]
    betas = tm.block_betas(d)
    for b in s["blocks"]:
        w = float(tm.mixing_window(betas[b], 0.01))
        rows.append(row("T1", "block_window", w, brute_force_window(betas[b], 0.01), "==", "exact", d=d, b=b, eps=0.01))
    for eps in s["block_eps"]:
        for L in s["lengths"]:
            rows.append(row("T1", "mixed_blocks", tm.mixed_blocks(d, eps, L), relation="==", d=d, eps=eps, L=L))
    mc_ns = [n for n in s["score_n"] if n <= s["score_mc_n_max"]]
    mc = dict(zip(mc_ns, tm.matched_score_mc(d, mc_ns, s["score_mc_samples"], rng_for(seed, 2)))) if mc_ns else {}
    for n in s["score_n"]:
        closed = tm.expected_matched_score(d, n)
        rows.append(row("T1", "matched_score", closed, relation="==", d=d, n=n))
        if n in mc:
            z = abs(mc[n] - closed) * math.sqrt(s["score_mc_samples"])
            rows.append(row("T1", "matched_score_z", z, 0.0, "~", Z_NOTE, d=d, n=n))
    return rows


def _z(est: np.ndarray, closed: np.ndarray, samples: int) -> float:
    return float(np.linalg.norm(est - closed, 2) * math.sqrt(samples))


def check_t2(s: dict, seed: int) -> list[dict]:
    """Examples 2-5 / Thm 3: E[M] of each family by Monte Carlo vs its closed form; ||E P_n|| vs beta^n."""
    N, d = s["samples"], s["d"]
    rows = []
    H = tm.householder_mean(tm.sample_householder(d, N, rng_for(seed, 3)))
    rows.append(row("T2", "beta", 1 - 2 / d, relation="==", family="householder", d=d))
    rows.append(row("T2", "beta_mc", np.linalg.norm(H, 2), 1 - 2 / d, "~", MC_NOTE, family="householder", d=d))
    rows.append(row("T2", "mean_z", _z(H, (1 - 2 / d) * np.eye(d), N), 0.0, "~", Z_NOTE, family="householder", d=d))
    var = np.ones(d)
    var[-1] = s["aniso_last_variance"]
    mu = tm.projected_gaussian_second_moment(var)
    Ha = tm.householder_mean(tm.sample_householder(d, N, rng_for(seed, 4), np.sqrt(var)))
    closed = np.eye(d) - 2 * np.diag(mu)
    rows.append(row("T2", "mean_z", _z(Ha, closed, N), 0.0, "~", Z_NOTE, family="householder_aniso", d=d))
    rows.append(row("T2", "beta_mc", np.linalg.norm(Ha, 2), np.abs(1 - 2 * mu).max(), "~", MC_NOTE,
                    family="householder_aniso", d=d))  # fmt: skip
    rows.append(row("T2", "trace_sigma", mu.sum(), 1.0, "~", "abs 1e-9 (quadrature)", family="householder_aniso", d=d))
    a = s["givens_a"]
    G = tm.givens_mean(d, a, N, rng_for(seed, 5))
    beta_g = 1 - 2 * (1 - math.sin(a) / a) / d
    rows.append(row("T2", "beta", beta_g, relation="==", family="givens", d=d, a=a))
    rows.append(row("T2", "beta_mc", np.linalg.norm(G, 2), beta_g, "~", MC_NOTE, family="givens", d=d, a=a))
    rows.append(row("T2", "mean_z", _z(G, beta_g * np.eye(d), N), 0.0, "~", Z_NOTE, family="givens", d=d, a=a))
    for k, th in enumerate(s["so3_theta"]):
        R = tm.so3_rotations(th, N, rng_for(seed, 6, k)).mean(axis=0)
        b3, deg = (2 * math.cos(th) + 1) / 3, round(math.degrees(th))
        rows.append(row("T2", "beta", abs(b3), relation="==", family="so3", theta_deg=deg))
        rows.append(row("T2", "beta_mc", np.linalg.norm(R, 2), abs(b3), "~", MC_NOTE, family="so3", theta_deg=deg))
        rows.append(row("T2", "mean_z", _z(R, b3 * np.eye(3), N), 0.0, "~", Z_NOTE, family="so3", theta_deg=deg))
    lams, at = s["torus_lambda"], s["torus_a"]
    A, Q = tm.torus_generator(lams, rng_for(seed, 7))
    T = tm.torus_mean(A, at, N, rng_for(seed, 11))
    beta_t = max(abs(math.sin(at * x) / (at * x)) for x in lams)
    rows.append(row("T2", "beta", beta_t, relation="==", family="torus", d=2 * len(lams)))
    rows.append(
        row(
            "T2",
            "mean_z",
            _z(T, tm.torus_mean_closed(lams, at, Q), N),
            0.0,
            "~",
            Z_NOTE,
            family="torus",
            d=2 * len(lams),
        )
    )
    n = np.arange(1, s["product_n_max"] + 1)
    for fam, est, beta in (
        ("householder", tm.householder_product_mean(s["product_d"], n.size, s["product_samples"], rng_for(seed, 8)),
         1 - 2 / s["product_d"]),
        ("so3", tm.so3_product_mean(math.pi / 2, n.size, s["product_samples"], rng_for(seed, 9)), 1 / 3),
    ):  # fmt: skip
        z = float(np.abs(est - beta**n).max() * math.sqrt(s["product_samples"]))
        rows.append(row("T2", "product_z", z, 0.0, "~", Z_NOTE, family=fam, n_max=n.size))
    return rows


def check_t13(s: dict, seed: int) -> list[dict]:
    """Lemma 1 / Example 7 on SO(2): |h_k| <= 1 - min h, and the matrix-Fisher rho <= 1 - exp(-2 ||A||_*)."""
    rows, ks = [], list(range(1, s["harmonics"] + 1))
    for kappa in s["kappa"]:
        for m in s["floor"]:  # h = m + (1 - m) von Mises: a density with min h >= m
            vm = tm.von_mises_density(kappa)
            coeffs = tm.fourier_coefficients(lambda th, vm=vm, m=m: m + (1 - m) * vm(th), ks)
            rows.append(row("T13", "max_harmonic", coeffs.max(), 1 - m, "<=", "bound", kappa=kappa, floor=m))
    rng = rng_for(seed, 10)
    for i in range(s["fisher_draws"]):
        A = rng.standard_normal((2, 2)) * s["fisher_scale"]
        kappa = tm.matrix_fisher_kappa(A)
        quad = tm.fourier_coefficients(tm.von_mises_density(kappa, rng.uniform(-np.pi, np.pi)), [1])[0]
        closed = tm.von_mises_first_harmonic(kappa)
        nuc = np.linalg.svd(A, compute_uv=False).sum()
        rows.append(row("T13", "fisher_harmonic_err", abs(quad - closed), 0.0, "~", "abs 1e-12 (quadrature)", draw=i))
        rows.append(row("T13", "fisher_rho", closed, 1 - math.exp(-2 * nuc), "<=", "bound", draw=i))
    return rows
