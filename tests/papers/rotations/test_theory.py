"""The rotations paper's theory checks T1-T13 and E6 (rotations spec §4, E6), as tests of the closed forms in
seqmix.papers.rotations.theory against independent oracles (Monte Carlo, dense matrices, brute force, quadrature),
and of the two artefact functions of seqmix.papers.rotations.

Numbers written here are the spec's [S] tables (§4 T1-T11, E6), not read from the code. Monte Carlo
comparisons use 5 standard errors (a mean of unit-norm quantities has standard error <= 1/sqrt(N)). The last
tests run the ``theory_checks`` analysis at its tiny sizes and judge every theory claim of
config/papers/rotations.yaml with the claims engine: the consistency claims must hold.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import yaml

from seqmix.claims import engine as C
from seqmix.claims.checks import DIFFERS, HOLDS
from seqmix.config.claim_families import expand_claims
from seqmix.io import write_text
from seqmix.papers.rotations import ARTEFACTS
from seqmix.papers.rotations._checks_mixing import brute_force_window
from seqmix.papers.rotations.theory import mixing as tm
from seqmix.papers.rotations.theory import scores as ts
from seqmix.papers.rotations.theory import stylized as st
from seqmix.papers.rotations.theory import values as tv


def rng(*salt: int) -> np.random.Generator:
    return np.random.default_rng([12345, *salt])


# ----------------------------------------------------------------------------- T1


@pytest.mark.parametrize("a", [0.5, 2.0, math.pi])
def test_t1_first_harmonic_is_the_sinc_power(a):
    """|E e^{i m Theta_n}| = (sin(ma)/(ma))^n exactly for i.i.d. U[-a, a] steps (Monte Carlo, 5 std errors)."""
    N, n = 4000, np.arange(1, 31)
    emp = tm.harmonic_mc(a, [1, 3], 30, N, rng(1))
    for row, m in zip(emp, (1, 3)):
        assert np.abs(row - np.abs(math.sin(m * a) / (m * a)) ** n).max() < 5 / math.sqrt(N)


def test_t1_windows_match_brute_force_and_the_spec_table():
    spec = {0.5: (55, 110, 165), 1.0: (14, 27, 41), 2.0: (3, 6, 9), math.pi: (1, 1, 1)}
    for a, ws in spec.items():
        for eps, w in zip((0.1, 0.01, 0.001), ws):
            assert tm.mixing_window(tm.sinc_beta(a), eps) == w == brute_force_window(tm.sinc_beta(a), eps)
    assert tm.mixing_window(1.0, 0.1) == math.inf and tm.mixing_window(0.0, 0.1) == 1


def test_t1_random_variant_blocks_pitfall_8():
    """d_h = 96: per-block windows (eps = 0.01) and how many blocks mix within 512, 8192, 65536 tokens."""
    betas = tm.block_betas(96)
    for b, w in {0: 27, 1: 40, 4: 128, 8: 595, 16: 12825, 24: 276310}.items():
        assert tm.mixing_window(betas[b], 0.01) == w == brute_force_window(betas[b], 0.01)
    assert abs(tm.mixing_window(betas[47], 0.01) / 1.88e9 - 1) < 0.005  # 1e-9 from 1: log1p keeps the digits
    assert [tm.mixed_blocks(96, 0.01, L) for L in (512, 8192, 65536)] == [8, 15, 21]
    assert [tm.mixed_blocks(96, 0.1, L) for L in (512, 8192, 65536)] == [10, 17, 23]


def test_t1_expected_matched_score_vs_monte_carlo_and_spec():
    for n, want in {1: 0.989, 16: 0.904, 512: 0.717, 65536: 0.454}.items():
        assert abs(tm.expected_matched_score(96, n) - want) < 1e-3
    N = 3000
    mc = tm.matched_score_mc(16, [1, 4, 16], N, rng(2))
    closed = [tm.expected_matched_score(16, n) for n in (1, 4, 16)]
    assert np.abs(mc - closed).max() < 5 / math.sqrt(N)


# ----------------------------------------------------------------------------- T2


def test_t2_householder_means_isotropic_and_anisotropic():
    """E H = I - 2 Sigma_nu: Sigma_nu by quadrature (1/d I when isotropic) vs Monte Carlo."""
    d, N = 12, 20000
    assert np.allclose(tm.projected_gaussian_second_moment(np.ones(d)), 1 / d, atol=1e-12)
    var = np.ones(d)
    var[-1] = 0.01
    mu = tm.projected_gaussian_second_moment(var)
    assert abs(mu.sum() - 1) < 1e-10 and mu[-1] < mu[0]
    H = tm.householder_mean(tm.sample_householder(d, N, rng(3), np.sqrt(var)))
    assert np.linalg.norm(H - (np.eye(d) - 2 * np.diag(mu)), 2) < 5 / math.sqrt(N)
    assert abs((1 - 2 / 96) - 0.97917) < 5e-6


def test_t2_givens_so3_and_torus_means():
    N = 20000
    d, a = 8, 1.0
    G = tm.givens_mean(d, a, N, rng(4))
    assert np.linalg.norm(G - (1 - 2 * (1 - math.sin(a) / a) / d) * np.eye(d), 2) < 5 / math.sqrt(N)
    assert abs(1 - 2 * (1 - math.sin(1)) / 96 - 0.99670) < 5e-6
    for th, beta in ((math.pi / 2, 1 / 3), (2 * math.pi / 3, 0.0)):
        R = tm.so3_rotations(th, N, rng(5)).mean(axis=0)
        assert np.linalg.norm(R - beta * np.eye(3), 2) < 5 / math.sqrt(N)
    A, Q = tm.torus_generator([1.0, 2.0, 3.0, 4.0], rng(6))
    assert np.allclose(A, -A.T)
    T = tm.torus_mean(A, 1.0, N, rng(7))
    assert np.linalg.norm(T - tm.torus_mean_closed([1.0, 2.0, 3.0, 4.0], 1.0, Q), 2) < 5 / math.sqrt(N)
    assert abs(np.linalg.norm(tm.torus_mean_closed([1.0, 2.0, 3.0, 4.0], 1.0, Q), 2) - 0.8415) < 5e-5


def test_t2_products_decay_as_beta_power():
    """Thm 3: ||E P_n|| <= beta^n, with equality for the isotropic families."""
    N, n = 2000, np.arange(1, 16)
    assert np.abs(tm.householder_product_mean(6, 15, N, rng(8)) - (1 - 2 / 6) ** n).max() < 5 / math.sqrt(N)
    assert np.abs(tm.so3_product_mean(math.pi / 2, 15, N, rng(9)) - 3.0**-n).max() < 5 / math.sqrt(N)


# ----------------------------------------------------------------------------- T3-T6


def test_t3_householder_products_go_haar():
    for n in (1, 2, 7):
        assert abs(ts.householder_product_det(8, n, rng(10, n)) - (-1) ** n) < 1e-10
    N = 2000
    # the Haar law's CDF is right: a uniform point's first coordinate passes the KS test
    assert ts.ks_to_haar(tm.sample_householder(10, N, rng(11))[:, 0], 10) < ts.ks_critical(N)
    sc = ts.householder_scores(10, [2, 40], N, rng(12))
    assert ts.ks_to_haar(sc[2], 10) > 0.3 and ts.ks_to_haar(sc[40], 10) < ts.ks_critical(N)
    for (d, s), want in {(64, 0.3): 0.1174, (64, 0.5): 7.6e-4, (96, 0.3): 0.0278, (96, 0.5): 1.39e-5}.items():
        assert abs(ts.levy_tail(d, s) / want - 1) < 0.005 and ts.haar_tail(d, s) <= ts.levy_tail(d, s)
    slack, gamma = ts.near_route_slack(8, 0.05, 10, rng(13))
    assert slack >= 0 and 0 < gamma < 1


def test_t4_hoeffding_bound_values_and_tails():
    for (B, s), want in {(48, 0.5): 3.14e-3, (48, 0.9): 5.5e-9, (32, 0.5): 0.0215, (32, 0.7): 4.9e-4}.items():
        assert abs(ts.hoeffding_tail(B, s, 0.01) / want - 1) < 0.02
    assert abs(512 * ts.hoeffding_tail(48, 0.9, 0.01) / 2.8e-6 - 1) < 0.02
    S = ts.matched_scores(8, 20000, rng(14), None, 0)
    assert abs(S.std() - math.sqrt(1 / 16)) < 0.01  # sqrt(1 / (2B))
    for s in (0.3, 0.5):
        assert (S >= s).mean() <= ts.hoeffding_tail(8, s, 0.0)


def test_t5_gap_condition_is_exact_at_the_edges():
    rho_gap, a_gap = ts.gap_needed(65536, 1, 0.1, 0.01)
    assert abs(rho_gap - 13.29) < 0.005 and abs(a_gap - 10.15) < 0.005 and abs(rho_gap / 0.4 - 33.2) < 0.05
    M = 1000
    lg = ts.gap_needed(M, 2, 0.2, 1.0)[0]
    rho, _ = ts.far_stats(np.full((1, 2), lg), np.zeros((1, M)))
    assert abs(rho[0] - 0.2) < 1e-12  # equality at the edges
    rho, _ = ts.far_stats(np.full((1, 2), lg + 0.01), np.zeros((1, M)))
    assert rho[0] < 0.2


def test_t6_far_mass_lower_bound():
    table = {(2, 1, 511): 0.9035, (5, 1, 8191): 0.2711, (5, 8, 65535): 0.2711, (8, 1, 65535): 0.0073}
    for (lam, K, M), want in table.items():
        assert abs(ts.far_mass_lower_bound(M, K, lam) - want) < 5e-5
    lam, K, M = 3.0, 4, 500
    far = rng(15).uniform(-lam, lam, size=(20, M))
    rho, _ = ts.far_stats(np.full((20, K), lam), far)
    assert rho.min() >= ts.far_mass_lower_bound(M, K, lam)
    alpha = ts.softmax(np.concatenate([np.full(K, lam), far[0]]))
    assert ts.near_gain(alpha[:K], ts.random_orthogonal(6, K, rng(16))) <= 1 - rho[0] + 1e-15
    for L in (512, 65536):
        assert abs(ts.alibi_far_mass(1 / 32, 64, L) - ts.alibi_far_mass_closed(1 / 32, 64, L)) < 1e-12
    assert ts.alibi_far_mass(1 / 32, 64, 65536) < math.exp(-2) + 1e-9


# ----------------------------------------------------------------------------- T7-T11


def test_t7_shared_background_covariance():
    d, M, N = 10, 6, 40000
    alpha = rng(17).dirichlet(np.ones(M))
    P = ts.random_orthogonal(d, M, rng(18))
    exact = tv.shared_background_cov(alpha, P, 1.0, 1.0)
    mc = tv.shared_background_cov_mc(alpha, P, 1.0, 1.0, N, rng(19))
    assert np.linalg.norm(mc - exact, 2) / np.linalg.norm(exact, 2) < 4 * math.sqrt(d / N)
    ks = np.arange(64, 256, dtype=np.float64)
    a = np.full(ks.size, 1 / ks.size)
    delta = tv.shared_background_cov(a, tv.rope_transports(16, ks), 1.0, 1.0)
    floor = tv.rope_coherence(a, ks, 16).min() ** 2 + a @ a
    assert abs(np.linalg.eigvalsh(delta).min() - floor) < 1e-12


def test_t7_random_walk_second_moment_and_spec_table():
    a = rng(20).uniform(size=50)
    for m in (0.0, 0.5, 0.99):
        assert abs(tv.random_walk_second_moment(a, m) - tv.random_walk_second_moment_dense(a, m)) < 1e-10
    N, half = 4000, 0.8
    u = np.full(100, 1 / 100)
    mc = (np.abs(tv.walk_phasors(N, 10, 110, half, rng(21)) @ u) ** 2).mean()
    assert abs(mc - tv.random_walk_second_moment(u, math.sin(half) / half)) < 5 / math.sqrt(N)
    f = tm.rope_frequencies(96)
    u = np.full(448, 1 / 448)
    ks = np.arange(64, 512, dtype=np.float64)
    q = tv.rope_coherence(u, ks, 96)
    for b, rms, rope in ((0, 0.160, 0.0038), (8, 0.645, 0.0188), (24, 0.999, 0.350)):
        assert abs(math.sqrt(tv.random_walk_second_moment(u, math.sin(f[b]) / f[b])) - rms) < 6e-4
        assert abs(q[b] - rope) < 6e-4


def test_t8_t9_value_side_bounds():
    assert abs(tv.rpp(0.5**10, 0.1, 0.01, 0.5, 48, 0.05) - 0.2299) < 5e-5
    assert abs(tv.rsame(0.5, 10, 0.1, 0.01, 10.0, 48, 0.05) - 0.4005) < 5e-5
    assert abs(tv.rsame(0.5, 10, 0.1, 0.1 / 256, 10.0, 48, 0.05) - 0.0655) < 5e-5
    half = tv.half_width_for_beta(0.84)
    assert abs(math.sin(half) / half - 0.84) < 1e-12
    alpha = tv.far_weights("geometric", 10, 300, 1.0)
    bound = tv.rpp(0.84**10, 1.0, float(np.linalg.norm(alpha)), 0.84, 16, 0.05)
    g = rng(22)
    assert max(tv.separate_path_trial(alpha, 10, half, 16, g).max() for _ in range(10)) <= bound
    trial = tv.same_path_trial(16, 300, 10, tv.half_width_for_beta(0.5), 4.0, rng(23))
    lo, hi = tv.leave_one_block_ratios(trial, 4.0)
    assert math.exp(-0.5) <= lo < 1 < hi <= math.exp(0.5)  # e^{-+2 lam / B}, not vacuous
    assert trial["t_max"] <= tv.rsame(0.5, 10, trial["rho"], trial["a"], 4.0, 16, 0.05)


def test_t10_t11_selection_and_near_signal():
    for _ in range(5):
        l2, coh = tv.adaptive_selection_trial(10000, 0.1, rng(24, _))
        assert l2 <= math.sqrt(2 * math.pi / 1000) and coh >= math.cos(0.1)
    assert abs(tv.lemma4_gamma(0.0, 0.02, 16, 48, 16, 0.05) - 0.364) < 5e-4
    assert abs(tv.lemma4_gamma(0.0, 0.1, 16, 48, 16, 0.05) - 1.82) < 5e-3
    assert (tv.near_route_angles(0.02, 16, 48, 16, 200, rng(25)) > 0.364).mean() <= 0.05
    for _ in range(5):
        smin, gamma = tv.near_gain_trial(12, 3, 5, 0.1, 0.03, rng(26, _))
        assert smin >= 0.9 * (1 - gamma)


def test_t12_t13():
    g = ts.unnormalised_growth([256, 1024, 4096, 16384], 5.0, rng(27))
    ms = list(g)
    assert abs(ts.loglog_slope(ms, [g[m][0] for m in ms]) - 1) < 0.05
    assert abs(ts.loglog_slope(ms, [g[m][1] for m in ms]) - 0.5) < 0.05
    for kappa in (0.5, 3.0):
        quad = tm.fourier_coefficients(tm.von_mises_density(kappa, 0.7), [1])[0]
        assert abs(quad - tm.von_mises_first_harmonic(kappa)) < 1e-12
        floor = math.exp(-kappa) / np.i0(kappa)  # min of the density
        assert tm.von_mises_first_harmonic(kappa) <= 1 - floor
    A = np.array([[1.0, 0.3], [-0.2, 0.5]])
    assert tm.von_mises_first_harmonic(tm.matrix_fisher_kappa(A)) <= 1 - math.exp(-2 * np.linalg.svd(A)[1].sum())


# ----------------------------------------------------------------------------- E6


def test_e6_far_mass_table_at_512():
    rows = st.far_mass_table([5.0, 10.0], [512], draws=2, seed=0)
    got = {(r["transport"], r["lam"]): r for r in rows}
    assert abs(got["nope", 5.0]["rho_D"] - 0.875) < 1e-12  # uniform weights: (512 - 64) / 512
    assert abs(got["rope", 5.0]["rho_D"] - 0.620) < 1e-3 and abs(got["rope", 10.0]["rho_D"] - 0.183) < 1e-3
    assert abs(got["random_pi", 10.0]["rho_D"] - 0.033) < 0.02
    assert got["random_pi", 5.0]["max_t"] < 0.2 * got["random_pi", 5.0]["rho_D"]  # value-side cancellation
    assert all(r["rho_D"] >= r["lower_bound"] and r["max_t"] <= r["rho_D"] + 1e-12 for r in rows)


# ----------------------------------------------------------------------------- the artefacts


@pytest.fixture(scope="module")
def checks_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("rotations") / "theory_checks"
    ARTEFACTS["theory_checks"]({"analysis": {}}, out)
    return out


def _draft_claims(root) -> list[dict]:
    """The paper config's claims on the theory_checks table (the others read trained models)."""
    cfg = yaml.safe_load((root / "config" / "papers" / "rotations.yaml").read_text())
    theory = [c for c in cfg["claims"] if c["ours"]["table"] == "theory_checks"]
    return expand_claims(theory, cfg["claim_defaults"], ["closed-form", "spec-derived"])[0]


def test_theory_checks_writes_every_check(checks_dir):
    df = pd.read_csv(checks_dir / "summary.csv")
    assert list(df.columns) == ["check", "quantity", "case", "value", "predicted", "relation", "tolerance",
                                "abs_err", "slack"]  # fmt: skip
    assert set(df["check"]) == {f"T{i}" for i in range(1, 14)} | {"E6"}
    assert np.isfinite(df["value"]).all() and (checks_dir / "summary.csv.sha256").exists()
    bounds = df[df["relation"].isin(["<=", ">="])]
    assert len(bounds) > 50 and (bounds["slack"] >= 0).all()


def test_every_draft_claim_holds_at_tiny(checks_dir, root):
    """The claims the paper config will paste in, judged by the one claims engine on the tiny analysis: every
    claim holds; and the engine sees a failure when a number moves (a window off by one differs)."""
    claims = _draft_claims(root)
    assert len(claims) > 150
    results = C.evaluate_claims(claims, checks_dir.parent, "tiny")
    bad = [(r.id, r.verdict, r.ours, r.detail) for r in results if r.verdict != HOLDS]
    assert not bad
    df = pd.read_csv(checks_dir / "summary.csv", keep_default_na=False)
    moved = checks_dir.parent / "moved"
    df.loc[(df["quantity"] == "window") & (df["case"] == "a=1,eps=0.01"), "value"] = 28.0
    write_text(moved / "theory_checks" / "summary.csv", df.to_csv(index=False), checksum=True)
    verdicts = {r.id: r.verdict for r in C.evaluate_claims(claims, moved, "tiny")}
    assert verdicts["rot-T1-window-a1-eps0.01"] == DIFFERS and verdicts["rot-T1-window-a2-eps0.01"] == HOLDS


def test_settings_reject_unknown_keys(tmp_path):
    with pytest.raises(ValueError, match=r"analysis.theory_checks.t1.sampels: unknown setting"):
        ARTEFACTS["theory_checks"]({"analysis": {"theory_checks": {"t1": {"sampels": 10}}}}, tmp_path)


def test_figure_e6_writes_png_pdf_csv(tmp_path):
    spec = {"analysis": {"figure_e6": {"lengths": [128, 512], "draws": 1, "harmonic_samples": 500,
                                       "same_path": {"trials": 1}}}}  # fmt: skip
    ARTEFACTS["figure_e6"](spec, tmp_path)
    assert {p.name for p in tmp_path.iterdir()} == {"figure_e6.png", "figure_e6.pdf", "figure_e6.csv"}
    df = pd.read_csv(tmp_path / "figure_e6.csv")
    assert set(df["panel"]) == {"a", "b", "c"}
    b = df[df["panel"] == "b"].set_index(["series", "x"])["y"]
    assert b["nope", 512] == pytest.approx(0.875) and b["nope", 128] == pytest.approx(0.5)
    assert (b.xs("lower_bound", level="series") <= b.xs("random_pi", level="series")).all()


def _schema_keys(node: dict) -> dict:
    """The nested key tree of a schema's object properties (scales left out)."""
    return {k: _schema_keys(v) if "properties" in v else None for k, v in node["properties"].items() if k != "scales"}


def _settings_keys(d: dict) -> dict:
    return {k: _settings_keys(v) if isinstance(v, dict) else None for k, v in d.items()}


def test_analysis_schema_types_the_draft_and_follows_the_defaults(root):
    """The package's analysis.schema.yaml (what the paper config's `analysis:` block will be validated
    against) accepts the draft's block, rejects a typo under a scale, and names exactly the settings the code
    reads (so neither can drift from the other)."""
    from pathlib import Path

    from seqmix.config.artefacts import analysis_schema_file
    from seqmix.config.base import ConfigError, load_yaml, validate
    from seqmix.papers.rotations.settings import FIGURE_TINY, TINY

    schema = load_yaml(analysis_schema_file("rotations"))
    draft = yaml.safe_load((root / "config" / "papers" / "rotations.yaml").read_text())["analysis"]
    validate(draft, schema, Path("draft"), "analysis")
    draft["theory_checks"]["scales"]["cpu"]["t8"]["trails"] = 3
    with pytest.raises(ConfigError, match=r"analysis.theory_checks.scales.cpu.t8.*'trails' was unexpected"):
        validate(draft, schema, Path("draft"), "analysis")
    assert _schema_keys(schema["$defs"]["theory_checks"]) == _settings_keys(TINY)
    assert _schema_keys(schema["$defs"]["figure_e6_scaled"]) == _settings_keys(FIGURE_TINY)
