"""E10 bound checks of the frontier-superposition paper: each measuring function against facts derived by hand
(so a broken measurement cannot pass) and against an independent computation."""

from __future__ import annotations

import math

import torch

from seqmix.papers.superposition.theory import bounds as SB
from seqmix.papers.superposition.theory import closed_forms as CF
from seqmix.papers.superposition.theory import reduced as T
from seqmix.papers.superposition.theory import wemb as W

F64 = torch.float64


def test_lemma12_adversarial_instance_has_the_derived_ratio():
    """One member of S ahead by ln(|S|-1): σ_i σ_k -> e^-Δ / (4(|S|-1)), i.e. ratio |S|²/(4(|S|-1)) to the paper's
    bound (1 at |S| = 2, above 1 from |S| = 3)."""
    for m in (2, 3, 5, 8):
        r = SB.saturation_instance(*SB.adversarial_saturation(m, gap=12.0))
        assert math.isclose(r["cross"] / r["cross_bound"], m * m / (4 * (m - 1)), rel_tol=1e-3)
        assert r["mass_out"] <= r["mass_bound"]


def test_lemma12_parts_1_and_3_hold_and_the_jacobian_is_the_softmax_jacobian():
    a = torch.tensor([1.0, 0.5, -3.0, -4.0, -6.0], dtype=F64)
    S = torch.tensor([True, True, False, False, False])
    r = SB.saturation_instance(a, S)
    assert math.isclose(r["gap"], 3.5)
    Jac = torch.autograd.functional.jacobian(lambda x: torch.softmax(x, -1), a)
    assert math.isclose(r["restricted_norm"], float(torch.linalg.matrix_norm(Jac[:, ~S], ord=2)), rel_tol=1e-12)
    assert r["restricted_norm"] <= r["restricted_bound"] and r["mass_out"] <= r["mass_bound"]
    res = SB.softmax_saturation(300)
    assert res["random_mass_ratio"] <= 1 and res["random_restricted_ratio"] <= 1
    assert res["adversarial_cross_ratio"] > 1


def test_frontier_tail_means_follow_the_galton_watson_coupling():
    rows = SB.frontier_tail(50, 0.04, 2, 8000)
    c1 = next(r for r in rows if r["c"] == 1)
    # hop-1 frontier = out-degree of the root, Binomial(49, 0.04): mean 1.96, sd 1.37; 8000 draws -> se 0.015
    assert abs(c1["E_k"] - 1.96) < 0.06
    assert all(0 <= r["empirical_tail"] <= 1 for r in rows)
    assert all(r["informative"] == (r["bound"] < 1) for r in rows)


def test_prop3_expansion_matches_the_corrected_curvature():
    for k, K in ((1, 2), (2, 4), (4, 8), (3, 7)):
        e = SB.prop3_expansion(6.0, k, K)
        assert math.isclose(e["numeric"], e["corrected"], rel_tol=1e-4)
    e = SB.prop3_expansion(6.0, 2, 4)  # k_c = 2 = k_{c+1}/k_c: the paper's coefficient coincides
    assert math.isclose(e["paper"], e["corrected"], rel_tol=1e-12)
    e = SB.prop3_expansion(6.0, 1, 2)
    assert math.isclose(e["paper"] / e["corrected"], 2.0, rel_tol=1e-12)


def test_lemma31_kappa_matches_the_lemma29_gradient():
    k = torch.tensor([1.0, 2.0, 4.0], dtype=F64)
    for alpha in (3.0, 8.7):
        t = 1e-5
        assert math.isclose(T.lemma29_dL_dt(alpha, t, k, 2 * k) / t, SB.lemma31_kappa(alpha, k, 2 * k), rel_tol=1e-3)
        assert math.isclose(SB.lemma31_kappa_numeric(alpha, k, 2 * k), SB.lemma31_kappa(alpha, k, 2 * k), rel_tol=1e-3)


def test_gradient_flow_drives_t_to_zero():
    res = SB.mobius_gradient_flow(T.mobius_inits(4, seed=1), steps=10000, log_every=100)["runs"]
    prem = [r for r in res if r["premise"]]
    assert prem and all(abs(r["t_end"]) < 1e-3 * abs(r["t_start"]) for r in prem)


def test_all_graphs_is_the_gnp_distribution():
    adj, w = W._all_graphs(3, 0.3)
    assert adj.shape == (64, 3, 3) and math.isclose(float(w.sum()), 1.0, rel_tol=1e-12)
    assert float((adj.sum((-1, -2)) * w).sum()) == pytest_approx(6 * 0.3)
    assert not adj.diagonal(dim1=1, dim2=2).any()


def pytest_approx(x):
    import pytest

    return pytest.approx(x, rel=1e-12)


def test_perp_basis_is_orthonormal_and_orthogonal_to_I_J_and_shifts():
    n = 5
    for gauge, dim in ((False, n * n - 2), (True, n * n - n - 1)):
        Q = W._perp_basis(n, gauge)
        assert Q.shape == (n * n, dim)
        assert torch.allclose(Q.T @ Q, torch.eye(dim, dtype=F64), atol=1e-12)
        assert (Q.T @ torch.eye(n, dtype=F64).reshape(-1)).abs().max() < 1e-12
        assert (Q.T @ torch.ones(n * n, dtype=F64)).abs().max() < 1e-12
    shift = torch.outer(torch.arange(n, dtype=F64) - 2, torch.ones(n, dtype=F64)).reshape(-1)
    assert (W._perp_basis(n, True).T @ shift).abs().max() < 1e-12


def test_hessian_row_shifts_are_flat_and_gauge_free_part_is_a_restriction():
    """u 1^T shifts every logit of a row by the same amount: the loss cannot see it, so the Hessian on M_inv^⊥
    has a zero (or lower) eigenvalue at any W*; the gauge-free λ_min, a restriction, is >= the full one."""
    h = W.hessian_gap(3, 2.0, 2, 16, 8.0, "exact")
    assert abs(h["lambda_min"]) < 1e-12 or h["lambda_min"] < 0
    assert h["lambda_min_gauge_free"] >= h["lambda_min"] - 1e-15
    assert math.isclose(h["bound"], 1 / (8 * 16 * 27))


def test_stable_one_minus_cos_equals_the_lemma18_cosine():
    x = torch.linspace(0.1, 9.0, 50, dtype=F64)
    for k, K in ((1, 2), (4, 8), (3, 7)):
        naive = torch.tensor([1 - CF.cos_step(float(v), k, K) for v in x], dtype=F64)
        assert torch.allclose(SB.one_minus_cos_step(x, k, K), naive, atol=1e-14)


def test_selectivity_ladder_saturates_and_thresholds_grow_with_depth():
    import numpy as np

    rows = T.selectivity_ladder(100, 2.0, 3, 128, np.geomspace(0.5, 500, 13))
    for c in range(3):
        S = [r["S"] for r in rows if r["c"] == c]
        assert S[0] < 0.5 and S[-1] > 0.99  # uniform attention at small β, saturated at large β
    star = T.ladder_thresholds(rows)
    assert star[0] < star[2] < float("inf")
    assert T.ladder_thresholds([{"c": 0, "beta": 1.0, "S": 0.2}]) == {0: float("inf")}
