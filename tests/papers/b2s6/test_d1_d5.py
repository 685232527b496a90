"""B2S6 diagnostics D1 and D5 (spec "Extra diagnostics"): the Jacobian norms behind S_k against a hand-computed
linear case and central finite differences, the fitted asymptotics of Thms 2 and 5, the units' step sizes
(``deltas``) and the forget-event statistic on a hand-built Delta."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from seqmix.mixers.ssm import B2S6, S4D, S6
from seqmix.models import build_model
from seqmix.papers.b2s6 import d1_profiles as d1
from seqmix.papers.b2s6 import d5_delta as d5


class _Weighted(torch.nn.Module):
    """y_t = sum_(k <= t) W_k u_k: the Jacobian of the last output w.r.t. u_k is W_k exactly."""

    def __init__(self, W: torch.Tensor):
        super().__init__()
        self.W = W  # (L, d, d)

    def forward(self, u):  # (B, L, d)
        return torch.cumsum(torch.einsum("kij,bkj->bki", self.W, u), dim=1)


def test_jacobian_norms_hand_case_and_finite_differences():
    """||J_k||_F: equal to ||W_k||_F for a linear map; for S6 equal to central finite differences (float64)."""
    W = torch.randn(5, 3, 3, dtype=torch.float64)
    norms = d1.jacobian_norms(_Weighted(W), torch.randn(5, 3, dtype=torch.float64))
    torch.testing.assert_close(norms, W.flatten(1).norm(dim=1))
    torch.manual_seed(1)
    unit = S6(3, d_state=2).double()
    u = torch.randn(4, 3, dtype=torch.float64)
    eps, fd = 1e-6, torch.zeros(4, 3, 3, dtype=torch.float64)  # (k, out, in)
    with torch.no_grad():
        for k in range(4):
            for j in range(3):
                up, dn = u.clone(), u.clone()
                up[k, j] += eps
                dn[k, j] -= eps
                fd[k, :, j] = (unit(up[None])[0, -1] - unit(dn[None])[0, -1]) / (2 * eps)
    torch.testing.assert_close(d1.jacobian_norms(unit, u), fd.flatten(1).norm(dim=1), rtol=1e-6, atol=1e-9)
    S = d1.region_sums(d1.jacobian_norms(unit, u), 2)
    assert set(S) == {"before", "at", "after"} and S["after"] > 0


def test_cases_normalise_the_delta_logits():
    """u_k0 is scaled so that w . u_k0 = +1 / -1 (S6) and the B2S6 block logits alternate +1, -1."""
    for case, want in (("s6_pos", [1.0]), ("s6_neg", [-1.0]), ("b2s6_mixed", [1.0, -1.0, 1.0, -1.0])):
        unit, u = d1.build_case(case, 8, 4, 6, 2, 4, 0)
        torch.testing.assert_close(d1.delta_logits(unit, u[2]), torch.tensor(want, dtype=torch.float64))


def test_profiles_follow_thms_2_and_5():
    """The spec D1 asymptotics on the library's units: S6 forgets the past (or the current input) exponentially
    with the predicted rate, S_k0 ~ 1/c; B2S6 with blocks of both signs decays only polynomially (-2, -1, 0);
    S4D's profile does not move with c."""
    st = {"d": 4, "n": 4, "L": 6, "k0": 2, "h": 2, "seed": 0, "fit_from": 1e3, "exp_fit_from": 10.0}
    st["c_values"] = list(np.logspace(0, 4, 9))
    curves = [r for case in d1.CASES for r in d1.case_curves(case, st)]
    got = {(r["case"], r["quantity"]): r["value"] for case in d1.CASES for r in d1.case_summary(case, curves, st)}
    assert got[("s6_pos", "rate_before_over_predicted")] == pytest.approx(1.0, abs=0.05)
    assert got[("s6_neg", "rate_at_over_predicted")] == pytest.approx(1.0, abs=0.05)
    assert got[("s6_pos", "slope_at")] == pytest.approx(-1.0, abs=0.02)
    for region, slope in zip(d1.REGIONS, (-2.0, -1.0, 0.0)):
        assert got[("b2s6_mixed", f"slope_{region}")] == pytest.approx(slope, abs=0.02)
    assert got[("s4d", "max_change")] < 1e-12
    below = [r for r in curves if r["below_precision"]]
    assert below and all(r["case"] in ("s6_pos", "s6_neg") and r["S"] == 0 for r in below)


def test_unit_deltas_are_the_forward_step_sizes():
    """``deltas`` (D5's input): S6 softplus(w . u + b), B2S6 one logit per block plus the channel's b, S4D
    exp(log_dt)."""
    torch.manual_seed(0)
    u = torch.randn(2, 5, 8)
    s6, b2, s4 = S6(8, d_state=4), B2S6(8, blocks=2, d_state=4, complex=False), S4D(8, d_state=4)
    torch.testing.assert_close(s6.deltas(u), F.softplus((u @ s6.w)[..., None] + s6.b))
    logit = (u.view(2, 5, 2, 4) * b2.w).sum(-1).repeat_interleave(4, dim=-1)
    torch.testing.assert_close(b2.deltas(u), F.softplus(logit + b2.b))
    torch.testing.assert_close(s4.deltas(u), torch.exp(s4.log_dt).expand(2, 5, 8))


def test_forget_events_on_a_hand_built_delta():
    """Delta (B = 2, L = 2, d = 4, h = 2 blocks of 2) with min |Re a| = 0.5: a channel forgets when Delta > 10;
    a block when both its channels do; 'all' when both blocks do."""
    delta = torch.tensor(
        [
            [[11.0, 12.0, 1.0, 20.0], [11.0, 11.0, 11.0, 11.0]],  # step 0: block 0 only; last step: all
            [[1.0, 1.0, 1.0, 1.0], [9.0, 30.0, 30.0, 30.0]],  # step 0: none; last step: block 1 only
        ]
    )
    ev = d5.forget_events(delta, 0.5, 2, 5.0)
    assert ev["block"].tolist() == [[[True, False], [True, True]], [[False, False], [False, True]]]
    assert ev["all"].tolist() == [[False, True], [False, False]]
    rows = {(r["quantity"], r.get("block")): r["value"] for r in d5.event_rows(ev, 2)}
    assert rows[("forget_fraction", None)] == pytest.approx(10 / 16)
    assert rows[("forget_fraction_last", None)] == pytest.approx(7 / 8)
    assert rows[("all_blocks_forget_last", None)] == 0.5 and rows[("any_block_forget_last", None)] == 1.0
    assert rows[("block_forget_fraction_last", 0)] == 0.5 and rows[("block_forget_fraction_last", 1)] == 1.0
    assert rows[("predicted_all_blocks", None)] == 0.25


def test_unit_deltas_of_a_probe_come_from_its_unit_input():
    """D5 reads Delta from what the probe's unit receives (after the encoder), through a hook."""
    torch.manual_seed(0)
    model = build_model({"name": "ssm_probe", "width": 8, "mixer": {"name": "s6", "d_state": 4}}, _Sizes())
    x = torch.randn(3, 7, 1)
    delta, unit = d5.unit_deltas(model, x)
    torch.testing.assert_close(delta, unit.deltas(model.M(x)))
    assert delta.shape == (3, 7, 8)


class _Sizes:
    """The sizes a probe is built from (Task.model_inputs)."""

    def model_inputs(self):
        return {"d_in": 1, "d_out": 1, "seq_len": 7}
