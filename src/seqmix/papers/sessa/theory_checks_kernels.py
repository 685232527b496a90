"""Rows of theory_checks/summary.csv for spec §4 T7-T14 and §3.6 D1, D5: attention dilution, SSM forgetting,
the Sessa end-to-end lemmas, path counts, power-law convolutions, deep envelopes, selective retrieval, softmax
sharpening, and the fixed-routing and deep kernels (see seqmix.papers.sessa.theory_checks for the row format)."""

from __future__ import annotations

import math
from functools import partial

import numpy as np

from .theory import bounds as bd
from .theory import kernels as kn
from .theory import solve as ss
from .theory_checks_rows import row, slope


def check_t7(st: dict, rng: np.random.Generator) -> list[dict]:
    rows = []
    for spread in st["spreads"]:
        pairs = [bd.dilution_ratios(st["n"], spread, rng) for _ in range(st["draws"])]
        rows.append(row("T7", "c1_lower_ratio_min", min(p[0] for p in pairs), 1.0, delta=spread))
        rows.append(row("T7", "c1_upper_ratio_max", max(p[1] for p in pairs), 1.0, delta=spread))
        col = bd.diffuse_attention_column(st["tau"], st["lag_max"], spread, rng)
        scaled = col * (st["tau"] + np.arange(st["lag_max"] + 1) + 1)
        rows.append(row("T7", "prop9_scaled_min", scaled.min(), math.exp(-spread), delta=spread, tau=st["tau"]))
        rows.append(row("T7", "prop9_scaled_max", scaled.max(), math.exp(spread), delta=spread, tau=st["tau"]))
    seeds = range(st["draws"])
    rows.append(row("T7", "lemma43_ratio_max", max(bd.lemma43_ratio(st["t"], st["d"], s) for s in seeds), 1.0))
    rows.append(row("T7", "lemmaB4_ratio_max", max(bd.lemma_b4_ratio(st["n"], st["d"], s) for s in seeds), 1.0))
    return rows


def check_t8(st: dict, rng: np.random.Generator) -> list[dict]:
    a, b, c = bd.stable_lti(st["n"], st["rho"], rng)
    lti = bd.lti_kernel(a, b, c, st["lag_max"])
    lags = np.arange(st["lag_max"] // 2, st["lag_max"] + 1)
    fitted = float(np.polyfit(lags, np.log(lti[lags]), 1)[0])
    kappa = (1 + st["rho"]) / 2
    rows = [
        row("T8", "lti_semilog_slope", fitted, math.log(st["rho"]), gamma=st["rho"]),
        row("T8", "lti_c_at_kappa", (lti / kappa ** np.arange(lti.size)).max(), gamma=kappa),
    ]
    random_ratio, tight_ratio = bd.zoh_state_ratio(st["T"], st["a_min"], 1.0, rng)
    rows.append(row("T8", "zoh_state_ratio_random", random_ratio, 1.0))
    rows.append(row("T8", "zoh_state_ratio_tight", tight_ratio, 1.0))
    for c_delta in st["c_deltas"]:
        ratio = bd.freeze_time_ratio(st["T"], st["lam"], c_delta, rng)
        rows.append(row("T8", "freeze_time_ratio_max", ratio, 1.0, delta=c_delta))
    return rows


def check_t9(st: dict, rng: np.random.Generator) -> list[dict]:
    """Lemma B.5 (random diffuse and uniform routing) and Lemma B.6 over a grid of tau and beta."""
    T, rows = st["T"], []
    t, k = np.tril_indices(T, -1)
    for delta, gamma_max in zip(st["deltas"], st["gamma_maxes"]):
        eta = gamma_max * math.exp(delta)
        K = ss.resolvent(ss.diffuse_routing(T, delta, gamma_max, rng))
        ratio = np.abs(K[t, k]) / (eta * math.exp(eta) * (t - k) ** (eta - 1.0))
        rows.append(row("T9", "b5_ratio_max", ratio.max(), 1.0, gamma=gamma_max, delta=delta))
        rows.append(row("T9", "b5_diag_max_abs_err", np.abs(np.diag(K) - 1).max(), 0.0, gamma=gamma_max, delta=delta))
    for gamma in st["uniform_gammas"]:
        theta = ss.resolvent_theta(T, gamma)
        ratio = theta[t, k] / (gamma * math.exp(gamma) * (t - k) ** (gamma - 1.0))
        rows.append(row("T9", "b5_uniform_ratio_max", ratio.max(), 1.0, gamma=gamma, delta=0.0))
    for beta in st["betas"]:
        worst = max(
            float(
                (
                    kn.lemma_b6_sum(tau, beta, st["lag_max"]) / kn.lemma_b6_bound(np.arange(1, st["lag_max"] + 1), beta)
                ).max()
            )
            for tau in st["taus"]
        )
        rows.append(row("T9", "b6_ratio_max", worst, 1.0, beta=beta))
    return rows


def check_t10(st: dict) -> list[dict]:
    """Lemma H.1 (k-th power of the harmonic kernel vs its bound, and vs the dense power) and Prop. 33."""
    T, rows = st["T"], []
    H = np.tril(np.ones((T, T)), -1) / (np.arange(T) + 1.0)[:, None]
    t = np.arange(T)
    for k in st["ks"]:
        ratios = [kn.harmonic_power_column(k, T, tau)[1:] / kn.lemma_h1_bound(t[1:], k) for tau in (0, 1, T // 4)]
        rows.append(row("T10", "h1_ratio_max", max(float(r.max()) for r in ratios), 1.0, k=k))
        dense = np.linalg.matrix_power(H, k)[:, 0]
        rows.append(
            row("T10", "h1_column_vs_dense_max_abs", np.abs(kn.harmonic_power_column(k, T) - dense).max(), 0.0, k=k)
        )
        mismatch = sum(
            kn.count_paths_brute(lag, k) != kn.paths_closed_form(lag, k)
            or kn.count_paths_matrix(lag, k) != kn.paths_closed_form(lag, k)
            for lag in range(1, st["max_lag_paths"] + 1)
        )
        rows.append(row("T10", "path_count_mismatches", mismatch, 0.0, k=k, lag=st["max_lag_paths"]))
    return rows


def check_t11(st: dict) -> list[dict]:
    rows, n0, n1 = [], st["n_from"], st["n_max"]
    for beta, k in zip(st["betas"], st["ks"]):
        conv = kn.power_law_convolution(beta, k, n1)
        nu = k * (1 - beta) - 1
        rows.append(row("T11", "loglog_slope", slope(conv, n0, n1), nu, beta=beta, k=k, lag=n1))
        rows.append(row("T11", "normalised_at_n_max", conv[n1] / n1**nu, beta=beta, k=k, lag=n1))
    return rows


def check_t12(st: dict) -> list[dict]:
    """The far log-log slope (at ``far_lag``, 1e100: the log factors settle late) of each deep envelope; the
    Sessa criterion N (1 - beta) < 1 against the sign of its slope."""
    rows, far, mismatches = [], st["far_lag"], 0
    for depth in st["depths"]:
        tf = kn.envelope_transformer(np.array([far / 2, far]), depth)
        rows.append(row("T12", "transformer_far_slope", math.log(tf[1] / tf[0]) / math.log(2), k=depth))
        mb = kn.envelope_mamba(np.array([st["mamba_lag"], st["mamba_lag"] + 1.0]), depth, st["mamba_c"])
        rows.append(
            row(
                "T12",
                "mamba_semilog_slope",
                math.log(mb[1] / mb[0]),
                -st["mamba_c"],
                k=depth,
                lag=st["mamba_lag"],
                delta=st["mamba_c"],
            )
        )
        for beta in st["betas"]:
            s = kn.envelope_far_slope(depth, beta, far)
            rows.append(row("T12", "sessa_far_slope", s, beta=beta, k=depth))
            mismatches += (s < 0) != (depth * (1 - beta) < 1)
    rows.append(row("T12", "criterion_mismatches", mismatches, 0.0))
    return rows


def check_t13(st: dict) -> list[dict]:
    """Impulse transport through k macro-layers I + a K (K[i, j] = (i+1)^{-beta} 1[j < i]): v at the spec's lags,
    its slope vs nu_k, the margin normalised by (1+l)^{nu_k}, and the competitor mass's slope vs k (1 - beta)."""
    rows, L, l0 = [], st["lag_max"], st["slope_from"]
    for beta, k in zip(st["betas"], st["ks"]):
        apply = partial(kn.apply_power_kernel, beta=beta)
        v = kn.stack_transport(apply, kn.impulse(L + 1), k, st["a"])
        nu, p = k * (1 - beta) - 1, {"beta": beta, "k": k}
        rows += [row("T13", "v", v[lag], lag=lag, **p) for lag in st["lags"] if lag <= L]
        rows.append(row("T13", "loglog_slope", slope(v, l0, L), nu, lag=L, **p))
        norm = v[l0:] / (1.0 + np.arange(l0, L + 1)) ** nu
        rows.append(row("T13", "margin_norm_spread", norm.max() / norm.min(), lag=L, **p))
        others = np.full(L + 1, st["eps_h"])
        others[0] = 0.0  # the selector's competitors: eps_H everywhere but tau* = 0
        comp = kn.stack_transport(apply, others, k, st["a"])
        rows.append(row("T13", "competitor_loglog_slope", slope(comp, l0, L), k * (1 - beta), lag=L, **p))
    return rows


def check_t14(st: dict, rng: np.random.Generator) -> list[dict]:
    rows = []
    for n in st["ns"]:
        for delta in st["deltas"]:
            margin = bd.sharpening_margin(n, delta, st["gap"], rng, st["draws"])
            rows.append(row("T14", "sharpening_margin_min", margin, 0.0, k=n, delta=delta))
    for T in st["Ts"]:
        gap = bd.rope_gap(T)
        rows.append(row("T14", "rope_delta_T", gap, lag=T))
        rows.append(
            row("T14", "rope_sigma_c2_needed", math.log((T - 1) / st["deltas"][0]) / gap, lag=T, delta=st["deltas"][0])
        )
    return rows


def kernel_rows(st: dict, rng: np.random.Generator) -> list[dict]:
    """T7-T14, then D1 and D5 (theory_d_kernels)."""
    from .theory_checks_d import check_d1, check_d5

    rows = check_t7(st["t7"], rng) + check_t8(st["t8"], rng) + check_t9(st["t9"], rng) + check_t10(st["t10"])
    rows += check_t11(st["t11"]) + check_t12(st["t12"]) + check_t13(st["t13"]) + check_t14(st["t14"], rng)
    return rows + check_d1(st["d1"], rng) + check_d5(st["d5"])
