"""Rows of the theory checks T7-T11 (rotations spec §4): the value side and the near signal."""

from __future__ import annotations

import math

import numpy as np

from ._checks_mixing import Z_NOTE
from ._rows import rng_for, row
from .theory import scores as ts
from .theory import values as tv

COV_NOTE = "< 4 in units of sqrt(d / samples) (sample-covariance error, relative to ||Delta||_op)"


def _cov_z(est: np.ndarray, exact: np.ndarray, samples: int) -> float:
    d = exact.shape[0]
    return float(np.linalg.norm(est - exact, 2) / np.linalg.norm(exact, 2) / math.sqrt(d / samples))


def check_t7(s: dict, seed: int) -> list[dict]:
    """Def. 1 / Example 9: the far covariance identity, RoPE's floor, random-walk vs RoPE coherence."""
    rows, d, N, c0, sw = [], s["d"], s["samples"], s["c0"], s["sigma_w"]
    rng = rng_for(seed, 70)
    alpha = rng.dirichlet(np.ones(s["m_keys"])) * s["rho"]
    transports = {"haar": ts.random_orthogonal(d, s["m_keys"], rng), "identity": np.eye(d)[None].repeat(s["m_keys"], 0)}
    for name, P in transports.items():
        exact = tv.shared_background_cov(alpha, P, c0, sw)
        mc = tv.shared_background_cov_mc(alpha, P, c0, sw, N, rng_for(seed, 71))
        rows.append(row("T7", "cov_z", _cov_z(mc, exact, N), 0.0, "~", COV_NOTE, transport=name, d=d))
    identity = tv.shared_background_cov(alpha, transports["identity"], c0, sw)
    scalar = (c0**2 * alpha.sum() ** 2 + sw**2 * alpha @ alpha) * np.eye(d)
    rows.append(row("T7", "identity_cov_err", np.abs(identity - scalar).max(), 0.0, "~", "abs 1e-12", d=d))
    w, dh = s["window"], s["d_head"]
    ks = np.arange(w, s["dense_L"], dtype=np.float64)
    a_u = np.full(ks.size, s["rho"] / ks.size)
    delta = tv.shared_background_cov(a_u, tv.rope_transports(dh, ks), c0, sw)
    floor = c0**2 * tv.rope_coherence(a_u, ks, dh).min() ** 2 + sw**2 * a_u @ a_u
    rows.append(
        row("T7", "rope_min_eig", np.linalg.eigvalsh(delta).min(), floor, "~", "equality, abs 1e-12", L=s["dense_L"])
    )
    f = 10000.0 ** (-2.0 * np.arange(dh // 2) / dh)
    for L in s["lengths"]:
        ks = np.arange(w, L, dtype=np.float64)
        a_u = np.full(ks.size, s["rho"] / ks.size)
        q = tv.rope_coherence(a_u, ks, dh)
        for b in s["blocks"]:
            rms = math.sqrt(tv.random_walk_second_moment(a_u, math.sin(f[b]) / f[b]))
            rows.append(row("T7", "walk_rms", rms, relation="==", b=b, L=L, w=w))
            rows.append(row("T7", "rope_coherence", q[b], rms, "<=", "RoPE cancels better (uniform weights)", b=b, L=L))
        # same path: weights picked by RoPE's own matched score are phase-aligned, so they cancel less
        alpha = ts.softmax(s["lam"] * np.cos(np.outer(np.arange(L), f)).mean(axis=1))
        far = alpha[w:]
        sel = tv.rope_coherence(far, ks, dh) / far.sum()
        rows.append(row("T7", "rope_selected_coherence", sel.max(), (q / s["rho"]).max(), ">=",
                        "score-selected weights cancel less than uniform ones", L=L, lam=s["lam"]))  # fmt: skip
    L, rng = s["walk_mc_L"], rng_for(seed, 72)
    ks = np.arange(w, L)
    a_u = np.full(ks.size, s["rho"] / ks.size)
    for b in s["blocks"]:
        m = math.sin(f[b]) / f[b]
        ph = tv.walk_phasors(s["walk_mc_samples"], w, L, f[b], rng)
        mc = float((np.abs(ph @ a_u) ** 2).mean())
        exact = tv.random_walk_second_moment(a_u, m)
        rows.append(row("T7", "walk_second_moment_z", abs(mc - exact) * math.sqrt(s["walk_mc_samples"]) / s["rho"] ** 2,
                        0.0, "~", Z_NOTE, b=b, L=L))  # fmt: skip
        dense = tv.random_walk_second_moment_dense(a_u, m)
        rows.append(row("T7", "walk_recursion_err", abs(exact - dense), 0.0, "~", "abs 1e-12", b=b, L=L))
    return rows


def check_t8(s: dict, seed: int) -> list[dict]:
    """Thm 7: max_b |t_b| <= R_pp with probability >= 1 - eta, for fixed far weights and independent V walks."""
    rows, B, eta = [], s["blocks"], s["eta"]
    for i, beta in enumerate(s["betas"]):
        half = tv.half_width_for_beta(beta)
        for w in s["windows"]:
            for L in s["lengths"]:
                for profile in s["profiles"]:
                    alpha = tv.far_weights(profile, w, L, s["rho"], s["geometric_ratio"])
                    bound = tv.rpp(beta**w, s["rho"], float(np.linalg.norm(alpha)), beta, B, eta)
                    rng = rng_for(seed, 80, i, w, L)
                    t = np.stack([tv.separate_path_trial(alpha, w, half, B, rng) for _ in range(s["trials"])])
                    p = dict(beta=beta, w=w, L=L, profile=profile)
                    rows.append(row("T8", "violation_rate", (t.max(axis=1) > bound).mean(), eta, "<=", "bound", **p))
                    rows.append(row("T8", "t_max_mean", t.max(axis=1).mean(), bound, "<=", "R_pp", **p))
                    exact = tv.random_walk_second_moment(alpha, beta)
                    z = abs((t**2).mean() - exact) * math.sqrt(t.size) / s["rho"] ** 2
                    rows.append(row("T8", "second_moment_z", z, 0.0, "~", Z_NOTE, **p))
    return rows


def check_t9(s: dict, seed: int) -> list[dict]:
    """Thm 6: the same-path bound R_same on simulated Assumption 3, the sandwich (31), the worked values."""
    B, lam, beta, w, eta = s["blocks"], s["lam"], s["beta"], s["window"], s["eta"]
    rows = [row("T9", "e2h", math.exp(2 * lam / B), relation="==", B=B, lam=lam)]
    for i, (rho, a) in enumerate(s["worked"]):
        p = dict(worked=i, beta=beta, w=w, rho=rho)  # a is often 0.1 / 256: the index names the case
        rows.append(row("T9", "R_pp", tv.rpp(beta**w, rho, a, beta, B, eta), relation="==", **p))
        rows.append(
            row("T9", "R_same", tv.rsame(beta, w, rho, a, lam, B, eta), rho, "", "vs identity coherence rho", **p)
        )
    half = tv.half_width_for_beta(beta)
    for j, L in enumerate(s["lengths"]):
        rng = rng_for(seed, 90, j)
        trials = [tv.same_path_trial(B, L, w, half, lam, rng) for _ in range(s["trials"])]
        bounds = [tv.rsame(beta, w, t["rho"], t["a"], lam, B, eta) for t in trials]
        viol = np.mean([t["t_max"] > r for t, r in zip(trials, bounds)])
        rows.append(row("T9", "violation_rate", viol, eta, "<=", "bound", L=L, lam=lam, beta=beta, w=w))
        rows.append(
            row("T9", "t_max_mean", np.mean([t["t_max"] for t in trials]), np.mean(bounds), "<=", "R_same", L=L)
        )
        rows.append(row("T9", "rho_mean", np.mean([t["rho"] for t in trials]), relation="", L=L))
        if L <= s["sandwich_max_L"]:
            lo, hi = tv.leave_one_block_ratios(trials[0], lam)
            rows.append(row("T9", "sandwich_min", lo, math.exp(-2 * lam / B), ">=", "eq. (31), exact", L=L))
            rows.append(row("T9", "sandwich_max", hi, math.exp(2 * lam / B), "<=", "eq. (31), exact", L=L))
    return rows


def check_t10(s: dict, seed: int) -> list[dict]:
    """Example 10: weights chosen by looking at the phases keep a small l2 norm yet add coherently."""
    M, eps, rng = s["m"], s["eps"], rng_for(seed, 100)
    l2b, fail = math.sqrt(2 * math.pi / (M * eps)), math.exp(-M * eps / (8 * math.pi))
    res = np.array([tv.adaptive_selection_trial(M, eps, rng) for _ in range(s["trials"])])
    return [
        row("T10", "l2_bound", l2b, relation="==", M=M, eps=eps),
        row("T10", "fail_exponent", M * eps / (8 * math.pi), relation="==", M=M, eps=eps),
        row(
            "T10", "l2_exceed_rate", (res[:, 0] > l2b).mean(), fail, "<=", "bound (+ 1/trials resolution)", M=M, eps=eps
        ),
        row("T10", "l2_max", res[:, 0].max(), l2b, "<=", "w.p. >= 1 - e^-(M eps / 8 pi)", M=M, eps=eps),
        row("T10", "coherence_min", res[:, 1].min(), math.cos(eps), ">=", "bound (always)", M=M, eps=eps),
    ]


def check_t11(s: dict, seed: int) -> list[dict]:
    """Lemma 3 / Cor 2 / Lemma 4: near routes close to identity keep the signal."""
    rows, B, S, eta, n = [], s["blocks"], s["near"], s["eta"], s["n_sig"]
    for i, sigma in enumerate(s["sigma"]):
        gamma = tv.lemma4_gamma(0.0, sigma, n, B, S, eta)
        rows.append(row("T11", "gamma", gamma, relation="==", sigma=sigma, n_sig=n, B=B, S=S))
        rows.append(row("T11", "kappa", (1 - s["rho_star"]) ** 2 * (1 - gamma) ** 2 if gamma < 1 else 0.0,
                        relation="==", sigma=sigma, rho_star=s["rho_star"]))  # fmt: skip
        worst = tv.near_route_angles(sigma, n, B, S, s["trials"], rng_for(seed, 110, i))
        rows.append(row("T11", "angle_exceed_rate", (worst > gamma).mean(), eta, "<=", "bound", sigma=sigma))
    th = np.linspace(-np.pi, np.pi, 101)
    norms = [np.linalg.norm(np.array([[math.cos(t) - 1, -math.sin(t)], [math.sin(t), math.cos(t) - 1]]), 2) for t in th]
    rows.append(row("T11", "rotation_norm_err", np.abs(np.array(norms) - 2 * np.abs(np.sin(th / 2))).max(), 0.0, "~",
                    "||R(t) - I|| = 2|sin(t/2)|, abs 1e-12"))  # fmt: skip
    rng, slack = rng_for(seed, 111), np.inf
    for _ in range(s["gain_trials"]):
        smin, gamma = tv.near_gain_trial(
            s["gain_d"], s["gain_rank"], s["gain_near"], s["rho_star"], s["gain_scale"], rng
        )
        slack = min(slack, smin - (1 - s["rho_star"]) * (1 - gamma))
    rows.append(row("T11", "gain_slack_min", slack, 0.0, ">=", "Lemma 3", d=s["gain_d"], r=s["gain_rank"]))
    return rows
