"""The ``theory_checks`` analysis of the Sessa paper: the measured quantities of spec §4's checks T1-T14 and of
the closed-form diagnostics D1, D2, D3, D5 (spec §3.6) -> theory_checks/summary.csv.

One long row per measured number: ``check, quantity, gamma, beta, tau, k, delta, lag, value, predicted``
(parameters that do not apply are empty; ``predicted`` is the law's value where the law gives one: a slope,
a closed form, a bound, else empty). The verdicts are the ``theory-*`` claims of config/papers/sessa.yaml,
judged by the one claims engine; nothing here compares or decides. Settings: the ``theory_checks`` slice of
the paper's ``analysis:`` block (typed by analysis.schema.yaml in this package). T1-T6 and D2, D3 are
here; T7-T14 in ``theory_kernels``, D1 and D5 in ``theory_d_kernels``. D2's rows are T3's (the same Theorem 8
check with the spec's D2 table) and D3's are T6's. Not computed: T15 (universal approximation: existence only,
no numeric target, spec §4), and the explicit end-to-end constants C(R) of T8 (Prop. 4) and T9 (Thm. 23),
which need a concrete model's Lipschitz constants; the lemmas they are assembled from (4.4, 5, B.5, B.6) are
checked.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ...report.tables import write_csv
from . import theory_checks_kernels as tk
from .theory import block as sb
from .theory import solve as ss
from .theory_checks_rows import COLUMNS, row, slope


def check_t1(st: dict, rng: np.random.Generator) -> list[dict]:
    """T1: solve = Neumann (T x D, fp64) and B^k = the brute-force path sum (T <= 10)."""
    B = ss.random_strict_lower(st["T"], rng)
    f = rng.standard_normal((st["T"], st["D"]))
    s = ss.solve(B, f)
    rows = [
        row("T1", "solve_vs_neumann_max_abs", np.abs(s - ss.neumann(B, f)).max(), 0.0),
        row("T1", "solve_residual_max_abs", np.abs(s - B @ s - f).max(), 0.0),
    ]
    Bs = ss.random_strict_lower(st["brute_T"], rng)
    worst = max(np.abs(np.linalg.matrix_power(Bs, k) - ss.path_power(Bs, k)).max() for k in range(st["brute_T"] + 1))
    rows.append(row("T1", "matrix_power_vs_path_sum_max_abs", worst, 0.0))
    return rows


def check_t2(st: dict, rng: np.random.Generator) -> list[dict]:
    """T2: ||s||_{inf,2} / (||f||_{inf,2} / (1 - rho)) <= 1 on random B with row sums <= rho, and on the tight
    case (uniform routing, constant f); the block bound on a random block with ||x_t|| <= R."""
    rows = []
    for rho in st["rhos"]:
        worst = 0.0
        for _ in range(st["draws"]):
            B = ss.random_strict_lower(st["T"], rng, row_sum=rho)
            f = rng.standard_normal((st["T"], st["D"]))
            worst = max(worst, ss.norm_inf2(ss.solve(B, f)) * (1 - rho) / ss.norm_inf2(f))
        rows.append(row("T2", "stability_ratio_random", worst, 1.0, gamma=rho))
        tight = ss.solve(ss.uniform_routing(st["T"], rho), np.ones((st["T"], 1)))
        rows.append(row("T2", "stability_ratio_uniform", ss.norm_inf2(tight) * (1 - rho), 1.0, gamma=rho))
    worst_block = 0.0
    for _ in range(st["draws"]):
        p = sb.random_block(st["block_D"], rng)
        x = rng.standard_normal((st["block_T"], st["block_D"]))
        x *= st["radius"] / np.linalg.norm(x, axis=1, keepdims=True) * rng.uniform(0.2, 1.0, (st["block_T"], 1))
        worst_block = max(
            worst_block, ss.norm_inf2(sb.block_forward(p, x)["y"]) / sb.block_bound(p, st["radius"])["bound"]
        )
    rows.append(row("T2", "block_bound_ratio", worst_block, 1.0))
    return rows


def check_t3_d2(st: dict, rng: np.random.Generator) -> list[dict]:
    """T3 / D2: random diffuse routing (logits U[0, Delta], gamma_t in [-gamma_max, gamma_max]); the largest
    ratio |y_{tau+l}| / (eta e^eta l^{-(1-eta)}) over l and draws; eta, beta, C = eta e^eta; the eta = 0 corner."""
    rows = []
    T, tau = st["T"], st["tau"]
    lags = np.arange(1, T - tau)
    for delta, gamma_max in zip(st["deltas"], st["gamma_maxes"]):
        eta = gamma_max * math.exp(delta)
        worst = 0.0
        for _ in range(st["draws"]):
            y = ss.solve(ss.diffuse_routing(T, delta, gamma_max, rng), np.eye(T)[:, [tau]])[tau + 1 :, 0]
            worst = max(worst, float((np.abs(y) / ss.theorem8_bound(lags, eta)).max()))
        p = {"gamma": gamma_max, "delta": delta, "tau": tau}
        rows += [
            row("T3", "eta", eta, **p),
            row("T3", "beta_tail", 1 - eta, **p),
            row("T3", "C", eta * math.exp(eta), **p),
            row("T3", "max_ratio", worst, 1.0, **p),
        ]
    y0 = ss.solve(ss.diffuse_routing(T, 1.0, 0.0, rng), np.eye(T)[:, [tau]])[tau + 1 :, 0]
    rows.append(row("T3", "eta0_max_abs", np.abs(y0).max(), 0.0, gamma=0.0, delta=1.0, tau=tau))
    return rows


def check_t4(st: dict) -> list[dict]:
    """T4: uniform routing: recursion vs Prop. 29's closed form, y at the spec's lags, the l = from..lag_max
    log-log slope, Gautschi's two-sided bound (tau = 0), y_{tau+1} = gamma/(tau+1), the tau^{-gamma} prefactor."""
    rows, L, l0 = [], st["lag_max"], st["slope_from"]
    for gamma, tau in zip(st["gammas"], st["taus"]):
        y = ss.uniform_column(tau, L, gamma)
        lags = np.arange(1, L + 1)
        closed = ss.uniform_closed_form(tau, lags, gamma)
        p = {"gamma": gamma, "tau": tau}
        rows.append(row("T4", "recursion_vs_closed_form_max_abs", np.abs(y[1:] - closed).max(), 0.0, **p))
        rows += [row("T4", "y", y[l], closed[l - 1], lag=l, **p) for l in st["lags"] if l <= L]
        rows.append(row("T4", "y1_minus_gamma_over_tau1", abs(y[1] - gamma / (tau + 1)), 0.0, **p))
        rows.append(row("T4", "loglog_slope", slope(y, l0, L), gamma - 1, lag=L, **p))
        if tau == 0:
            lo, hi = ss.gautschi_bounds(lags, gamma)
            rows.append(row("T4", "gautschi_lower_ratio_min", (y[1:] / lo).min(), 1.0, **p))
            rows.append(row("T4", "gautschi_upper_ratio_max", (y[1:] / hi).max(), 1.0, **p))
    for gamma in sorted(set(st["gammas"])):
        taus = np.array(st["prefactor_taus"], dtype=float)
        logs = [ss.prefactor_log(int(t), gamma) for t in taus]
        fitted = float(np.polyfit(np.log(taus), logs, 1)[0])
        rows.append(row("T4", "prefactor_tau_slope", fitted, -gamma, gamma=gamma, tau=int(taus.max())))
    return rows


def check_t5(st: dict) -> list[dict]:
    """T5: Theta of Lemma K.15 vs the dense inverse of I - B; its two-sided constants c-, c+ on the grid
    (and on the half grid: they must not drift with T); the largest partial row sum vs gamma / (1 - gamma)."""
    rows = []
    for gamma in st["gammas"]:
        T = st["T"]
        theta = ss.resolvent_theta(T, gamma)
        dense = ss.resolvent(ss.uniform_routing(T, gamma)) - np.eye(T)
        rows.append(row("T5", "theta_vs_inverse_max_abs", np.abs(theta - dense).max(), 0.0, gamma=gamma))
        for size in (T // 2, T):
            i, j = np.tril_indices(size, -1)
            ratio = theta[i, j] / ((j + 1.0) ** (-gamma) * (i + 1.0) ** (gamma - 1))
            rows.append(row("T5", "c_minus", ratio.min(), gamma=gamma, lag=size))
            rows.append(row("T5", "c_plus", ratio.max(), gamma=gamma, lag=size))
        partial = np.cumsum(theta[:, ::-1], axis=1)[:, ::-1]  # [i, j] = sum_{k >= j} Theta[i, k]
        rows.append(row("T5", "row_sum_max", partial.max(), gamma / (1 - gamma), gamma=gamma))
    return rows


def check_t6_d3(st: dict, rng: np.random.Generator) -> list[dict]:
    """T6 / D3: the positional code c_t (values, monotonicity, limit, mu_t and the increment identity) and the
    construction through the block: output - x = lam c_t u, nothing along a direction orthogonal to u."""
    gamma, T = st["gamma"], st["T"]
    c = ss.positional_code(T, gamma)
    mu = np.cumsum(c) / np.arange(1, T + 1)
    rows = [row("T6", "c", c[t], gamma=gamma, lag=t) for t in range(st["values"])]
    p = {"gamma": gamma}
    rows += [
        row("T6", "c_min_increment", np.diff(c).min(), **p),
        row("T6", "c_last_gap_to_limit", 1 / (1 - gamma) - c[-1], 0.0, lag=T - 1, **p),
        row("T6", "mu_max_times_1_minus_gamma", mu.max() * (1 - gamma), 1.0, **p),
        row("T6", "increment_identity_max_abs", np.abs(np.diff(c)[1:] - gamma * np.diff(mu)[:-1]).max(), 0.0, **p),
    ]
    d, bt = st["block_D"], st["block_T"]
    u = np.eye(d)[0]
    out = sb.block_forward(sb.positional_block(d, gamma, st["lam"], u), x := rng.standard_normal((bt, d)))
    delta = out["y"] - x
    rows.append(row("T6", "block_code_max_abs_err", np.abs(delta - st["lam"] * np.outer(c[:bt], u)).max(), 0.0, **p))
    rows.append(row("T6", "block_orthogonal_leak_max_abs", np.abs(delta[:, 1:]).max(), 0.0, **p))
    rows.append(
        row(
            "T6",
            "c_vs_solve_row_sums_max_abs",
            np.abs(c[:bt] - ss.solve(ss.uniform_routing(bt, gamma), np.ones((bt, 1)))[:, 0]).max(),
            0.0,
            **p,
        )
    )
    return rows


def theory_check_rows(st: dict) -> list[dict]:
    """Every row of theory_checks/summary.csv, in check order (T1..T14, D1, D5)."""
    rng = np.random.default_rng(st["seed"])
    rows = check_t1(st["t1"], rng) + check_t2(st["t2"], rng) + check_t3_d2(st["t3"], rng)
    rows += check_t4(st["t4"]) + check_t5(st["t5"]) + check_t6_d3(st["t6"], rng)
    return rows + tk.kernel_rows(st, rng)


def theory_checks(spec: dict, out: Path) -> None:
    rows = theory_check_rows(spec["analysis"]["theory_checks"])
    bad = [r for r in rows if tuple(r) != COLUMNS]
    if bad:  # a row built by hand instead of row(): the claims would read a misaligned table
        raise ValueError(f"theory_checks: rows without the columns {COLUMNS}: {bad[:2]}")
    write_csv(Path(out) / "summary.csv", rows, checksum=True)  # the claims verify it
