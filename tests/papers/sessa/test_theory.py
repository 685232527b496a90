"""The Sessa paper's theory checks T1-T14 and closed-form diagnostics D1, D2, D3, D5 (spec §4, §3.6), as tests
of the closed forms in seqmix.papers.sessa.theory against independent oracles: dense float64 solves and matrix
powers, token-by-token loops, and brute-force enumeration of paths and compositions. The oracles here are
written from the equations and never call the function they check.

The pipeline writes the measured quantities to results/<scale>/sessa/theory_checks/summary.csv (the
``theory_checks`` analysis of seqmix.papers.sessa); the last tests run that analysis and the two figures and
judge the ``theory-*`` claims of config/papers/sessa.yaml with the claims engine. Every test here fails on a
main without these modules (guards: the closed forms, the recursions, the block and the artefact's CSV).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from seqmix.claims import engine as C
from seqmix.claims.checks import CONSISTENCY, DIFFERS, HOLDS
from seqmix.config.artefacts import analysis_slice
from seqmix.config.loading import load_paper
from seqmix.io import write_text
from seqmix.papers.sessa import figures_theory
from seqmix.papers.sessa import theory_checks as theory
from seqmix.papers.sessa.theory import block as sb
from seqmix.papers.sessa.theory import bounds as bd
from seqmix.papers.sessa.theory import kernels as kn
from seqmix.papers.sessa.theory import solve as ss
from seqmix.papers.sessa.theory_checks_rows import COLUMNS

EXACT = 1e-12


def dense_resolvent(B: np.ndarray) -> np.ndarray:
    """The oracle: a general dense inverse (LU), not the triangular solve or the recursion."""
    return np.linalg.inv(np.eye(B.shape[0]) - B)


def solve_loop(B: np.ndarray, f: np.ndarray) -> np.ndarray:
    """s_t = f_t + sum_{j<t} B[t, j] s_j, one token at a time."""
    s = np.zeros_like(f)
    for t in range(f.shape[0]):
        s[t] = f[t] + sum(B[t, j] * s[j] for j in range(t))
    return s


# ----------------------------------------------------------------------------- T1, T2


def test_t1_solve_neumann_and_path_sums_match_the_oracles():
    rng = np.random.default_rng(0)
    B = ss.random_strict_lower(12, rng)
    f = rng.standard_normal((12, 3))
    oracle = solve_loop(B, f)
    assert np.abs(ss.solve(B, f) - oracle).max() < EXACT
    assert np.abs(ss.neumann(B, f) - oracle).max() < EXACT
    assert np.abs(ss.resolvent(B) - dense_resolvent(B)).max() < EXACT
    Bs = ss.random_strict_lower(6, rng)
    for k in range(7):
        assert np.abs(ss.path_power(Bs, k) - np.linalg.matrix_power(Bs, k)).max() < EXACT
    assert not ss.path_power(Bs, 6).any()  # nilpotent: no 6-hop path in 6 tokens


def test_t2_row_sums_and_the_stability_bound():
    rng = np.random.default_rng(1)
    B = ss.random_strict_lower(40, rng, row_sum=0.9)
    assert np.abs(B).sum(axis=1).max() <= 0.9 + 1e-12 and abs(np.abs(B[-1]).sum() - 0.9) < 1e-12
    f = rng.standard_normal((40, 5))
    assert ss.norm_inf2(solve_loop(B, f)) <= ss.norm_inf2(f) / (1 - 0.9)


def test_t2_block_matches_a_token_loop_and_obeys_its_bound():
    """The numpy block's feedback solve against the recursion s_t = f_t + gamma_t sum_j alpha_fb[t, j] s_j,
    and ||G(x)||_{inf,2} under Prop. 25's bound for inputs with ||x_t|| <= R."""
    rng = np.random.default_rng(2)
    p = sb.random_block(6, rng)
    x = rng.standard_normal((9, 6))
    x *= 2.0 / np.linalg.norm(x, axis=1, keepdims=True)
    out = sb.block_forward(p, x)
    assert np.allclose(out["alpha_fb"].sum(axis=1), [0] + [1] * 8) and not np.triu(out["alpha_fb"]).any()
    s = solve_loop(out["gamma"][:, None] * out["alpha_fb"], out["f"])
    assert np.abs(out["s"] - s).max() < EXACT
    assert np.abs(out["y"] - (x + (s * out["g"]) @ p["W_out"] + p["b_out"])).max() < EXACT
    bound = sb.block_bound(p, 2.0)
    assert ss.norm_inf2(out["y"]) <= bound["bound"] and np.abs(out["gamma"]).max() <= bound["rho_R"]
    assert ss.norm_inf2(out["f"]) <= bound["F_R"]


# ----------------------------------------------------------------------------- T3-T6: uniform and diffuse routing


@pytest.mark.parametrize("gamma,tau", [(0.3, 0), (0.5, 5), (0.9, 2)])
def test_t4_recursion_and_closed_form_match_the_dense_inverse(gamma, tau):
    T = 80
    dense = dense_resolvent(ss.uniform_routing(T, gamma))[:, tau]
    lags = np.arange(1, T - tau)
    assert np.abs(ss.uniform_column(tau, T - tau - 1, gamma) - dense[tau:]).max() < EXACT
    assert np.abs(ss.uniform_closed_form(tau, lags, gamma) - dense[tau + 1 :]).max() < EXACT
    assert abs(dense[tau + 1] - gamma / (tau + 1)) < EXACT


def test_t4_gautschi_bounds_and_the_spec_values():
    """tau = 0: (gamma/G(1+gamma))(t+1)^-beta <= y_t <= (gamma/G(1+gamma)) t^-beta; the spec's reference
    values y(100) = 0.05635 (gamma 0.5) and 0.01329 (gamma 0.3)."""
    for gamma in (0.3, 0.5, 0.7):
        y = ss.uniform_column(0, 2000, gamma)[1:]
        lo, hi = ss.gautschi_bounds(np.arange(1, 2001), gamma)
        assert (y >= lo).all() and (y <= hi).all()
    assert abs(ss.uniform_column(0, 100, 0.5)[100] - 0.05635) < 5e-6
    assert abs(ss.uniform_column(0, 100, 0.3)[100] - 0.01329) < 5e-6


def test_t5_theta_is_the_resolvent_and_t6_code_its_row_sums():
    T, gamma = 60, 0.5
    R = dense_resolvent(ss.uniform_routing(T, gamma))
    assert np.abs(ss.resolvent_theta(T, gamma) - (R - np.eye(T))).max() < EXACT
    c = ss.positional_code(T, gamma)
    assert np.abs(c - R.sum(axis=1)).max() < EXACT
    # the spec's sequence (spec §3.6 D3, 4 decimals) and its limit 1/(1 - gamma) = 2
    assert np.allclose(c[:6], [1, 1.5, 1.625, 1.6875, 1.7266, 1.7539], atol=5e-5)
    assert (np.diff(c) > 0).all() and c[-1] < 2


def test_d3_construction_writes_the_code_along_u_only():
    d, T, gamma, lam = 5, 12, 0.5, 0.7
    u = np.eye(d)[2]
    x = np.random.default_rng(3).standard_normal((T, d))
    y = sb.block_forward(sb.positional_block(d, gamma, lam, u), x)["y"]
    assert np.abs(y - x - lam * np.outer(ss.positional_code(T, gamma), u)).max() < EXACT


def test_t3_diffuse_routing_respects_c2_and_theorem_8():
    rng = np.random.default_rng(4)
    T, delta, gamma_max = 120, 0.5, 0.5
    B = ss.diffuse_routing(T, delta, gamma_max, rng)
    t = np.arange(T)[:, None]
    assert (np.abs(B) <= gamma_max * math.exp(delta) / np.maximum(t, 1) + 1e-15).all()
    assert not np.triu(B).any()
    y = dense_resolvent(B)[4:, 3]
    eta = gamma_max * math.exp(delta)
    assert (np.abs(y) <= ss.theorem8_bound(np.arange(1, T - 3), eta)).all()


# ----------------------------------------------------------------------------- T7-T14: kernels and bounds


def test_t7_lemma_4_3_ratio_is_one_minus_alpha():
    """For token-wise q, k the Lemma 4.3 sum equals 2 alpha (1 - alpha) ||d logit/dx||: the ratio is
    1 - alpha_tau < 1, never above."""
    r = bd.lemma43_ratio(6, 4, seed=0)
    assert 0.5 < r <= 1.0
    assert bd.lemma_b4_ratio(20, 5, seed=0) <= 1.0


def test_t9_lemma_b6_sum_matches_a_loop():
    beta, tau = 0.4, 7
    s = kn.lemma_b6_sum(tau, beta, 50)
    loop = [sum((tau + l - k) ** -beta / (k + 1) for k in range(tau, tau + l)) for l in range(1, 51)]
    assert np.allclose(s, loop, rtol=1e-12, atol=0)
    assert (s <= kn.lemma_b6_bound(np.arange(1, 51), beta)).all()


def test_t10_harmonic_powers_path_counts_and_lemma_h1():
    T = 30
    H = np.tril(np.ones((T, T)), -1) / (np.arange(T) + 1.0)[:, None]
    for k in (1, 2, 3):
        col = kn.harmonic_power_column(k, T, 2)
        assert np.abs(col - np.linalg.matrix_power(H, k)[:, 2]).max() < EXACT
        assert (col[1:] <= kn.lemma_h1_bound(np.arange(1, T), k) + 1e-15).all()
    N = np.tril(np.ones((12, 12)), -1)
    for k in (1, 2, 3, 4):
        for lag in range(1, 12):
            dense = int(round(np.linalg.matrix_power(N, k)[lag, 0]))
            assert kn.count_paths_brute(lag, k) == kn.count_paths_matrix(lag, k) == dense == math.comb(lag - 1, k - 1)


def test_t11_power_law_convolution_matches_compositions():
    """K^{*k}(n) = sum over n_1 + ... + n_k = n, n_i >= 1 of prod n_i^-beta, enumerated."""
    beta, n_max = 0.5, 9
    for k in (1, 2, 3):
        conv = kn.power_law_convolution(beta, k, n_max)
        for n in range(1, n_max + 1):
            brute = sum(
                math.prod(m**-beta for m in parts)
                for parts in itertools.product(range(1, n + 1), repeat=k)
                if sum(parts) == n
            )
            assert abs(conv[n] - brute) < EXACT


@pytest.mark.parametrize("kernel", ["power", "harmonic", "exponential"])
def test_t13_d5_stacks_match_dense_matrix_powers(kernel):
    T, a, beta, c = 40, 0.7, 0.5, 0.1
    i, j = np.meshgrid(np.arange(T), np.arange(T), indexing="ij")
    strict = i > j
    dense_k = {
        "power": np.where(strict, (i + 1.0) ** -beta, 0.0),
        "harmonic": np.where(strict, 1.0 / (i + 1.0), 0.0),
        "exponential": np.where(strict, np.exp(-c * (i - j)), 0.0),
    }[kernel]
    apply = {
        "power": lambda v: kn.apply_power_kernel(v, beta),
        "harmonic": kn.apply_harmonic,
        "exponential": lambda v: kn.apply_exponential(v, c),
    }[kernel]
    v0 = np.random.default_rng(5).standard_normal(T)
    for k in (1, 2, 3):
        want = np.linalg.matrix_power(np.eye(T) + a * dense_k, k) @ v0
        assert np.abs(kn.stack_transport(apply, v0, k, a) - want).max() < 1e-10


def test_t12_envelope_criterion():
    """N (1 - beta) < 1 decays, = 1 grows through its log factors, > 1 grows."""
    assert kn.envelope_far_slope(2, 0.6, 1e100) < 0 < kn.envelope_far_slope(2, 0.5, 1e100)
    assert kn.envelope_far_slope(3, 0.5, 1e100) > 0.4
    assert kn.envelope_transformer(np.array([1e6]), 3)[0] < kn.envelope_transformer(np.array([1e3]), 3)[0]


def test_t14_rope_gap_and_sharpening():
    assert abs(bd.rope_gap(16) - (1 - math.cos(6))) < 1e-15  # s = 6 is closest to 2 pi below 16
    assert abs(bd.rope_gap(1024) - 1.8e-9) < 0.05e-9  # the spec's [computed here] value
    assert bd.sharpening_margin(64, 0.05, 3.0, np.random.default_rng(0), 50) >= 0


# ----------------------------------------------------------------------------- the pipeline artefact


@pytest.fixture(scope="module")
def tiny_artefact(tmp_path_factory, root):
    paper = load_paper(root / "config" / "papers" / "sessa.yaml", "tiny")
    spec = {"analysis": analysis_slice(paper, ["theory_checks"], "tiny")}
    out = tmp_path_factory.mktemp("sessa")
    theory.theory_checks(spec, out / "theory_checks")
    return paper, spec, out


def test_theory_checks_artefact_writes_the_declared_columns_and_claims_hold(tiny_artefact):
    """The analysis the pipeline runs at tiny, judged by the claims engine: every consistency theory-* claim
    holds, every derived one is judged (holds at tiny: nothing is trained); an injected error differs."""
    paper, _, out = tiny_artefact
    path = out / "theory_checks" / "summary.csv"
    df = pd.read_csv(path)
    assert tuple(df.columns) == COLUMNS
    want = {f"T{i}" for i in range(1, 15)} | {"D1", "D5"}  # D2 is under T3, D3 under T6
    assert set(df["check"]) == want
    claims = [c for c in paper["claims"] if c["id"].startswith("theory-")]
    assert len(claims) >= 150
    for res in C.evaluate_claims(claims, out, "tiny"):
        want = (HOLDS,) if res.kind == CONSISTENCY else (HOLDS, DIFFERS)
        assert res.verdict in want, (res.id, res.kind, res.ours, res.detail)
    df.loc[(df["check"] == "T4") & (df["quantity"] == "loglog_slope") & (df["gamma"] == 0.3), "value"] += 0.01
    write_text(path, df.to_csv(index=False), checksum=True)
    verdicts = {r.id: r.verdict for r in C.evaluate_claims(claims, out, "tiny")}
    assert verdicts["theory-T4-slope-g0.3-tau0"] == DIFFERS and verdicts["theory-T4-slope-g0.5-tau0"] == HOLDS


def test_figures_write_png_pdf_and_csv(tiny_artefact, tmp_path):
    _, spec, _ = tiny_artefact
    figures_theory.figure_d1_kernels(spec, tmp_path)
    figures_theory.figure_d5_deep(spec, tmp_path)
    for name in ("figure_d1_kernels", "figure_d5_deep"):
        for ext in ("png", "pdf", "csv"):
            assert (tmp_path / f"{name}.{ext}").stat().st_size > 0
    d1 = pd.read_csv(tmp_path / "figure_d1_kernels.csv")
    assert {"attention", "sessa", "sessa_closed_form", "ssm"} <= set(d1["kernel"])
    sessa = d1[(d1.kernel == "sessa") & (d1.gamma == 0.5) & (d1.tau == 0)].set_index("lag")["value"]
    closed = d1[(d1.kernel == "sessa_closed_form") & (d1.gamma == 0.5) & (d1.tau == 0)].set_index("lag")["value"]
    assert np.allclose(sessa, closed, rtol=1e-10)
    d5 = pd.read_csv(tmp_path / "figure_d5_deep.csv")
    models = {"sessa", "transformer", "mamba", "transformer_envelope", "mamba_envelope"}
    assert set(d5["model"]) == models and set(d5["k"]) == {1, 2, 3}
