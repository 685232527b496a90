"""Closed forms and reduced models of the frontier-superposition paper (spec §2.5, §4; E3, E6, E7, E10)."""

from __future__ import annotations

import math

import pytest
import torch

from seqmix.papers.superposition.theory import closed_forms as CF
from seqmix.papers.superposition.theory import reduced as T
from seqmix.papers.superposition.theory import wemb as W


@pytest.mark.parametrize("c", [0, 1, 2, 3])
def test_lemma18_maximiser(c):
    k, K = 2.0**c, 2.0 ** (c + 1)
    a = CF.alpha_star(k, K)
    assert a == pytest.approx([1, math.sqrt(2), 2, 2 * math.sqrt(2)][c])
    assert CF.cos_step(a, k, K) == pytest.approx(1.0, abs=1e-12)
    assert CF.cos_step_d1(a, k, K) == pytest.approx(0.0, abs=1e-12)
    assert CF.cos_step(0.0, k, K) == pytest.approx(2**-0.5)
    assert CF.cos_step(8.7, k, K) == pytest.approx([0.783, 0.811, 0.848, 0.891][c], abs=6e-4)
    # the derivative formula against a central difference
    x, h = 0.7, 1e-6
    assert CF.cos_step_d1(x, k, K) == pytest.approx(
        (CF.cos_step(x + h, k, K) - CF.cos_step(x - h, k, K)) / (2 * h), rel=1e-6
    )


@pytest.mark.parametrize("k,K,corr,paper", [(1, 2, -0.25, -0.5), (4, 8, -0.0625, -0.03125), (7, 15, -0.0272, -0.00833)])
def test_lemma27_curvature_spec_I14(k, K, corr, paper):
    assert CF.curvature_numeric(k, K) == pytest.approx(CF.curvature_corrected(k, K), rel=1e-4)
    assert CF.curvature_corrected(k, K) == pytest.approx(corr, abs=1e-4)
    assert CF.curvature_paper(k, K) == pytest.approx(paper, abs=1e-5)
    assert (abs(CF.curvature_paper(k, K) - CF.curvature_numeric(k, K)) < 1e-4) == (k * k == K)


def test_prop1_prop7_ladder_and_constants():
    assert CF.prop1_ceiling(2) == pytest.approx(0.7071, abs=1e-4) and CF.prop1_ceiling(4) == pytest.approx(
        0.8660, abs=1e-4
    )
    assert [round(CF.e2e_attenuation(2, 4, c), 3) for c in range(3)] == [0.5, 0.707, 1.0]
    assert [round(CF.e2e_attenuation(4, 4, c), 3) for c in range(3)] == [0.25, 0.5, 1.0]
    assert [round(CF.ladder_gamma(64, k, 98, 0.1)) for k in (1, 2, 4, 8)] == [110, 156, 220, 312]
    assert CF.gamma_sat(64, 4, 50) == pytest.approx(501, abs=1) and CF.gamma_sat(64, 8, 50) == pytest.approx(708, abs=1)
    assert CF.hessian_gap_bound(64, 50) == 1.5625e-8
    bI, bIII = CF.phase_betas(2.0, 3, 4.0)
    assert bI == pytest.approx(2.426, abs=1e-3) and bIII == pytest.approx(1.040, abs=1e-3)


def test_mobius_algebra():
    k = torch.tensor([1.0, 2.0, 4.0], dtype=torch.float64)
    K = 2 * k
    # with both channels linear the map is (αA + m_f B)/(A + sqrt(k) B)
    theta = torch.tensor([[1.7, 0.6, -0.2, -0.9]], dtype=torch.float64)
    A, B = T.mobius_AB(theta)
    want = (1.7 * A + (K - k) * B) / (A + k.sqrt() * B)
    assert torch.allclose(T.mobius_alpha_eff(theta, k, K, relu=False)[0], want)
    # on {A = 0} every step gets α* at once, whatever α
    theta = torch.tensor([[3.3, 1 / 1.274, -0.3, -1.274]], dtype=torch.float64)
    assert torch.allclose(T.mobius_alpha_eff(theta, k, K, relu=False)[0], (K - k) / k.sqrt())
    assert T.mobius_loss(theta, k, K, relu=False).item() == pytest.approx(0.0, abs=1e-12)
    for alpha, t in ((3.0, 0.5), (1.2, -0.3), (5.0, 2.0)):
        assert T.lemma29_dL_dt(alpha, t, k, K) == pytest.approx(
            T.lemma29_autograd(alpha, t, k, K), rel=1e-10, abs=1e-14
        )


def test_reduced_mobius_reaches_A_zero_from_the_spec_init():
    """E3: Adam, fp64, 1e4 steps from the spec's init (labelled as the spec's, not the paper's)."""
    res = T.train_mobius(torch.tensor([T.SPEC_INIT], dtype=torch.float64), relu=False, steps=10_000, log_every=5000)
    A, _ = T.mobius_AB(res["theta"])
    assert abs(float(A[0])) < 1e-12
    a, b1, eta = res["theta"][0, 1:].tolist()
    assert (a, b1, eta) == pytest.approx((0.785, -0.274, -1.274), abs=0.01)  # the paper's point, to 2 decimals


def test_both_mobius_forms_in_one_batch_end_as_each_alone():
    """E3 trains the ReLU and linear forms in one batch (a per-row mask): every row's trajectory is bit for
    bit the one it has alone."""
    inits = torch.cat([torch.tensor([T.SPEC_INIT], dtype=torch.float64), T.mobius_inits(3)])
    n = inits.shape[0]
    both = T.train_mobius(inits.repeat(2, 1), steps=300, relu=torch.arange(2 * n) < n, log_every=100)
    for f, relu in enumerate((True, False)):
        alone = T.train_mobius(inits, steps=300, relu=relu, log_every=100)
        assert torch.equal(both["theta"][f * n : (f + 1) * n], alone["theta"])
        mine = [{**r, "run": r["run"] - f * n} for r in both["trace"] if f * n <= r["run"] < (f + 1) * n]
        assert mine == alone["trace"]


def test_gradient_law_at_uniform_attention():
    """E6 (Prop. 7): at uniform attention R_c is close to (np)^{-(L-1-c)/2} (n = 300, np = 2, L = 4)."""
    rows = T.gradient_law(300, 2.0, 4, 128, point="uniform")
    assert rows[-1]["R"] == pytest.approx(1.0)
    for r in rows[:-1]:
        assert 0.4 * r["predicted"] < r["R"] < 1.5 * r["predicted"], r


def test_softmax_shift_invariance_fixes_the_signed_ratio():
    """The gradient w.r.t. W^emb has rows summing to 0, so its signed diag/off ratio is n - 1 exactly."""
    d = W.diagonal_advantage(n=20, np_=2.0, L=3, d=32, batches=2, batch=64)
    assert d["row_sum_rel"] < 1e-10
    assert d["signed_ratio"] == pytest.approx(19.0, rel=1e-6)


def test_conjecture_d_rows():
    rows = W.conjecture_d(3, n=20, d=32, batch=16)
    assert len(rows) == 9 and all(r["R"] > 0 and r["R_IJ"] > 0 for r in rows)
