"""Rows of the theory checks T3-T6 and T12 (rotations spec §4): the score side."""

from __future__ import annotations

import math

import numpy as np

from ._checks_mixing import Z_NOTE
from ._rows import rng_for, row
from .theory import scores as ts


def haar_scale(d: int) -> int:
    """The spec's mixing scale for Householder products, about (d/2) ln d steps."""
    return math.ceil(d / 2 * math.log(d))


def check_t3(s: dict, seed: int) -> list[dict]:
    """Thm 4 / Prop 2 / Thm 5 with Householder products (uniform v), q = k = e_1."""
    rows, N = [], s["samples"]
    for i, d in enumerate(s["d"]):
        for n in s["det_n"]:
            det = ts.householder_product_det(d, n, rng_for(seed, 20, i, n))
            rows.append(row("T3", "det_err", abs(det - (-1) ** n), 0.0, "~", "abs 1e-9 (LU)", d=d, n=n))
        ns = sorted({max(1, round(r * haar_scale(d))) for r in s["n_rel"]})
        sc = ts.householder_scores(d, ns, N, rng_for(seed, 21, i))
        ks = {n: ts.ks_to_haar(sc[n], d) for n in ns}
        above = [n for n in ns if ks[n] > 2 * ts.ks_critical(N)]  # the geometric part, above the sampling floor
        if len(above) >= 2:
            slope = float(np.polyfit(above, np.log([ks[n] for n in above]), 1)[0]) * haar_scale(d)
            rows.append(row("T3", "ks_log_slope", slope, 0.0, "<=", "ln KS per (d/2) ln d steps", d=d))
        for n in ns:
            rows.append(row("T3", "ks", ks[n], ts.ks_critical(N), "", "decays to the 1% KS floor",
                            d=d, n=n, n_rel=round(n / haar_scale(d), 3)))  # fmt: skip
            z = abs(sc[n].mean() - (1 - 2 / d) ** n) * math.sqrt(N)  # E q^T P_n k = q^T (E H)^n k
            rows.append(row("T3", "mean_z", z, 0.0, "~", Z_NOTE, d=d, n=n))
        # after the last n the law must be Haar up to sampling: KS below the 1% critical value
        rows.append(row("T3", "ks_at_mixing", ks[ns[-1]], ts.ks_critical(N), "<=", "1% KS critical value", d=d,
                        n=ns[-1]))  # fmt: skip
    for j, d in enumerate(s["tail_d"]):
        x = ts.householder_scores(d, [2 * haar_scale(d)], N, rng_for(seed, 22, j))[2 * haar_scale(d)]
        for sv in s["tail_s"]:
            levy, haar = ts.levy_tail(d, sv), ts.haar_tail(d, sv)
            emp = float((x >= sv).mean())
            slack = 3 * math.sqrt(max(haar, 1 / N) / N)  # binomial noise of the empirical tail
            rows.append(row("T3", "levy_tail", levy, relation="==", d=d, s=sv))
            rows.append(row("T3", "haar_tail", haar, levy, "<=", "exact Beta tail vs the Levy bound", d=d, s=sv))
            rows.append(row("T3", "empirical_tail", emp, levy + slack, "<=", "Levy + 3 binomial std", d=d, s=sv,
                            n=2 * haar_scale(d)))  # fmt: skip
    slack, gamma = ts.near_route_slack(s["near_d"], s["near_scale"], s["near_trials"], rng_for(seed, 23))
    rows.append(row("T3", "near_route_slack", slack, 0.0, ">=", f"gamma up to {gamma:.3f}", d=s["near_d"]))
    return rows


def check_t4(s: dict, seed: int) -> list[dict]:
    """Thm 2: Pr[S >= s] <= exp(-B (s - eps_sc)^2 / 2); near routes S >= cos delta."""
    rows, N = [], s["samples"]
    for i, B in enumerate(s["blocks"]):
        uni = ts.matched_scores(B, N, rng_for(seed, 30, i), None, 0)
        walk = ts.matched_scores(B, N, rng_for(seed, 31, i), s["walk_a"], s["walk_n"])
        eps_walk = abs(math.sin(s["walk_a"]) / s["walk_a"]) ** s["walk_n"]
        rows.append(row("T4", "score_std", uni.std(), math.sqrt(1 / (2 * B)), "~", "rel 0.05 (Monte Carlo)", B=B))
        for sv in s["s"]:
            rows.append(row("T4", "hoeffding_bound", ts.hoeffding_tail(B, sv, s["eps_sc"]), relation="==", B=B, s=sv,
                            eps_sc=s["eps_sc"]))  # fmt: skip
            rows.append(row("T4", "tail_uniform", (uni >= sv).mean(), ts.hoeffding_tail(B, sv, 0.0), "<=", "bound",
                            B=B, s=sv))  # fmt: skip
            rows.append(row("T4", "tail_walk", (walk >= sv).mean(), ts.hoeffding_tail(B, sv, eps_walk), "<=", "bound",
                            B=B, s=sv, eps_sc=round(eps_walk, 6)))  # fmt: skip
            for M in s["union_m"]:
                u = M * ts.hoeffding_tail(B, sv, s["eps_sc"])
                rows.append(row("T4", "union_bound", u, relation="==", B=B, s=sv, M=M, eps_sc=s["eps_sc"]))
        delta = s["near_delta"]
        near = np.cos(rng_for(seed, 32, i).uniform(-delta, delta, size=(N, B))).mean(axis=1)
        rows.append(row("T4", "near_score_min", near.min(), math.cos(delta), ">=", "bound", B=B, delta=delta))
    return rows


def check_t5(s: dict, seed: int) -> list[dict]:
    """Prop 1 / Cor 1: the gap lam g that forces rho_D <= rho*, ||alpha_D|| <= a*; synthetic logits obey it."""
    K, rho_s, a_s = s["k_near"], s["rho_star"], s["a_star"]
    need_rho, need_a = ts.gap_needed(s["m_max"], K, rho_s, a_s)
    rows = [
        row("T5", "gap_rho", need_rho, relation="==", M=s["m_max"], K=K, rho_star=rho_s),
        row("T5", "gap_a", need_a, relation="==", M=s["m_max"], K=K, a_star=a_s),
        row("T5", "lam_needed", max(need_rho, need_a) / s["g"], relation="==", M=s["m_max"], g=s["g"]),
    ]
    M, rng = s["m_sim"], rng_for(seed, 40)
    lg = max(ts.gap_needed(M, K, rho_s, a_s))
    near = rng.uniform(0.0, 2.0, size=(s["trials"], K)) + lg  # near logits >= lam c_near (= lg), far <= 0
    far = -rng.exponential(1.0, size=(s["trials"], M))
    rho, a2 = ts.far_stats(near, far)
    rows.append(row("T5", "rho_max", rho.max(), rho_s, "<=", "bound", M=M, K=K))
    rows.append(row("T5", "a_max", a2.max(), a_s, "<=", "bound", M=M, K=K))
    worst, _ = ts.far_stats(np.full((1, K), ts.gap_needed(M, K, rho_s, a_s)[0]), np.zeros((1, M)))
    rows.append(row("T5", "rho_worst_case", worst[0], rho_s, "~", "equality at the edges, abs 1e-12", M=M, K=K))
    return rows


def check_t6(s: dict, seed: int) -> list[dict]:
    """Props 3-4: far mass is bounded below under bounded logits; ALiBi's bias keeps it bounded."""
    rows = []
    for lam in s["lam"]:
        for K in s["k"]:
            for M in s["m"]:
                rows.append(row("T6", "lower_bound", ts.far_mass_lower_bound(M, K, lam), relation="==", lam=lam, K=K,
                                M=M))  # fmt: skip
    rng, d = rng_for(seed, 50), s["d"]
    for lam in s["lam"]:
        for M in s["m_sim"]:
            K = s["k_sim"]
            far = rng.uniform(-lam, lam, size=(s["trials"], M))
            rho, _ = ts.far_stats(np.full((s["trials"], K), float(lam)), far)
            bound = ts.far_mass_lower_bound(M, K, lam)
            rows.append(row("T6", "rho_min", rho.min(), bound, ">=", "bound", lam=lam, K=K, M=M))
            worst, _ = ts.far_stats(np.full((1, K), float(lam)), np.full((1, M), -float(lam)))
            rows.append(row("T6", "rho_worst_case", worst[0], bound, "~", "equality, rel 1e-12", lam=lam, K=K, M=M))
            alpha = ts.softmax(np.concatenate([np.full(K, float(lam)), far[0]]))
            gain = ts.near_gain(alpha[:K], ts.random_orthogonal(d, K, rng))
            rows.append(row("T6", "near_gain", gain, 1 - rho[0], "<=", "sigma_max(B_S) <= 1 - rho_D", lam=lam, M=M))
            rows.append(row("T6", "near_gain_cap", 1 - rho[0], 1 - bound, "<=", "bound", lam=lam, M=M))
            gap = rng.uniform(0, 1, size=(s["trials"], M))
            near = gap.min(axis=1, keepdims=True) + s["delta"] * rng.uniform(0, 1, size=(s["trials"], K))
            rho_g, _ = ts.far_stats(near, gap)
            rows.append(row("T6", "rho_min_fixed_gap", rho_g.min(), ts.far_mass_lower_bound_gap(M, K, s["delta"]), ">=",
                            "bound", delta=s["delta"], K=K, M=M))  # fmt: skip
    m, w = s["alibi_slope"], s["alibi_window"]
    for L in s["alibi_L"]:
        rows.append(row("T6", "alibi_far_mass", ts.alibi_far_mass(m, w, L), ts.alibi_far_mass_closed(m, w, L), "~",
                        "geometric sum, rel 1e-9", slope=m, w=w, L=L))  # fmt: skip
        rows.append(row("T6", "alibi_far_mass_limit", ts.alibi_far_mass(m, w, L), math.exp(-m * w), "<=",
                        "bounded whatever L", slope=m, w=w, L=L))  # fmt: skip
        flat = ts.softmax(np.zeros(L))[w:].sum()  # the same keys without the bias: (L - w) / L -> 1
        rows.append(row("T6", "nobias_far_mass", flat, (L - w) / L, "~", "abs 1e-12", w=w, L=L))
    return rows


def check_t12(s: dict, seed: int) -> list[dict]:
    """§8.2: sigmoid/softplus weights do not normalise: the far sum grows like M, its l2 norm like sqrt(M)."""
    rows = []
    for k, act in enumerate(("sigmoid", "softplus")):
        g = ts.unnormalised_growth(s["m"], s["lam"], rng_for(seed, 60, k), act)
        ms = list(g)
        rows.append(row("T12", "sum_slope", ts.loglog_slope(ms, [g[m][0] for m in ms]), 1.0, "~", "abs 0.05", act=act))
        rows.append(row("T12", "l2_slope", ts.loglog_slope(ms, [g[m][1] for m in ms]), 0.5, "~", "abs 0.05", act=act))
    return rows
