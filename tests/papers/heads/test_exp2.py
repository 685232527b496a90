"""Exp. II of the heads paper: the Jacobian-vs-lag diagnostics, the linear SSM and causal MHA mixers, the
lag_sensitivity task, and the diagnose stage that measures models at initialisation.

The SSM's autograd Jacobian is checked against its closed form C A^(T-1) B to 1e-10 in float64, and the
norms against the float32 underflow of pitfall P5.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch

from seqmix.diagnostics.jacobian import (
    geomean_log10,
    jacobian_norms,
    lag_jacobian,
    last_output,
    output_jacobian,
    output_jacobians,
    relative_error,
)
from seqmix.mixers.base import build_mixer
from seqmix.mixers.lti_ssm import LinearSSM, haar_orthogonal
from seqmix.mixers.mha import CausalMHA, CausalSoftmaxHead
from seqmix.tasks.lag_sensitivity import LagSensitivity

torch.set_num_threads(1)


def ssm(d=8, N=8, seed=0, **kw) -> LinearSSM:
    torch.manual_seed(seed)
    return LinearSSM(d, state=N, **kw).double()


def mha(d=8, heads=2, seed=0) -> CausalMHA:
    torch.manual_seed(seed)
    return CausalMHA(d, heads=heads).double()


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


# ----------------------------------------------------------------------------- diagnostics


@pytest.mark.parametrize("T", [1, 2, 10, 60])
def test_ssm_autograd_jacobian_equals_closed_form(T):
    m = ssm(d=6, N=5)
    x = rand(3, T, 6)
    for lag in sorted({0, T // 2, T - 1}):
        J = lag_jacobian(m, x, lag)
        assert J.shape == (3, 6, 6) and J.dtype == torch.float64
        with torch.no_grad():
            ref = m.lag_operator(lag)
        assert float(relative_error(J, ref).max()) < 1e-10, (T, lag)
    # the default lag is T - 1: dy_{T-1}/dx_0
    assert torch.equal(lag_jacobian(m, x), lag_jacobian(m, x, T - 1))


def test_output_jacobians_every_position_and_batch_independence():
    """One set of p backward passes gives every input position; each sequence's block is its own."""
    m = ssm(d=4, N=3)
    x = rand(2, 7, 4)
    Js = output_jacobians(last_output(m), x)
    assert Js.shape == (2, 4, 7, 4)
    for t in range(7):
        with torch.no_grad():
            assert torch.allclose(Js[:, :, t], m.lag_operator(6 - t).expand(2, 4, 4), atol=1e-12)
    assert torch.equal(output_jacobian(last_output(m), x, 3), Js[:, :, 3])
    # batch independence of the attention model's blocks: the first sequence's block is unchanged when
    # the second sequence changes
    a = mha()
    x = rand(2, 9, 8)
    J1 = lag_jacobian(a, x)
    x2 = x.clone()
    x2[1] = rand(9, 8, seed=5)
    J2 = lag_jacobian(a, x2)
    assert torch.allclose(J1[0], J2[0], atol=1e-14) and not torch.allclose(J1[1], J2[1])


def test_attention_jacobian_against_a_dense_autograd_jacobian():
    a = mha(d=8, heads=2)
    x = rand(1, 6, 8)
    dense = torch.autograd.functional.jacobian(lambda z: a(z)[0, -1], x)[:, 0, 0]  # (p, d) wrt x_0
    assert torch.allclose(lag_jacobian(a, x)[0], dense, atol=1e-12)
    # the last-output shortcut gives the same block
    assert torch.allclose(lag_jacobian(a, x, fn=a.forward_last)[0], dense, atol=1e-12)


def test_norms_in_float64_avoid_the_float32_underflow():
    """P5: entries of 1e-23 are representable in float32 but their squares underflow to 0."""
    J = torch.full((1, 64, 64), 1e-23, dtype=torch.float32)
    assert float((J**2).sum().sqrt()) == 0.0  # a sum-of-squares norm in float32 reads exactly 0
    n = jacobian_norms(J)
    assert n["fro"].dtype == torch.float64
    assert n["fro"].item() == pytest.approx(64e-23, rel=1e-6)  # sqrt(64 * 64) * 1e-23
    assert n["spec"].item() == pytest.approx(64e-23, rel=1e-6)  # rank one: all-equal entries
    assert n["sumgrad"].item() == pytest.approx(64 * 1e-23 * 8, rel=1e-6)  # ||1^T J||_2 = 64e-23 * sqrt(64)


def test_lag_jacobian_argument_errors():
    m = ssm(d=3, N=2)
    with pytest.raises(ValueError, match="lag must be in"):
        lag_jacobian(m, rand(1, 4, 3), lag=4)
    with pytest.raises(ValueError, match="fn must return"):
        output_jacobian(lambda x: x, rand(1, 4, 3), 0)


def test_geomean_log10():
    g, s = geomean_log10([1e-2, 1e-4])
    assert g == pytest.approx(1e-3) and s == pytest.approx(1.0)
    assert geomean_log10([5.0]) == (pytest.approx(5.0), 0.0)


# ----------------------------------------------------------------------------- the linear SSM


def test_scan_conv_fft_agree():
    m = ssm(d=5, N=7, seed=3)
    x = rand(2, 33, 5)
    with torch.no_grad():
        y = m(x)
        assert torch.allclose(m.forward_conv(x), y, atol=1e-12)
        assert torch.allclose(m.forward_fft(x), y, atol=1e-12)
        # and a token-by-token recurrence written here
        h = torch.zeros(2, 7, dtype=torch.float64)
        for t in range(33):
            h = h @ m.A.weight.T + x[:, t] @ m.B.weight.T
            assert torch.allclose(y[:, t], h @ m.C.weight.T, atol=1e-12)


def test_default_init_is_pytorch_linear():
    torch.manual_seed(0)
    m = LinearSSM(64, state=64)
    torch.manual_seed(0)
    ref = torch.nn.Linear(64, 64, bias=False)  # the first draw of the same seed: A's init
    assert torch.equal(m.A.weight, ref.weight)
    bound = 1 / math.sqrt(64)
    for lin in (m.A, m.B, m.C):
        assert lin.bias is None and lin.weight.abs().max() <= bound


def test_orthogonal_init_has_radius_and_norm_rho():
    m = ssm(d=16, N=16, init="orthogonal", rho=0.9)
    A = m.A.weight.detach()
    assert torch.allclose(A.T @ A, 0.81 * torch.eye(16, dtype=torch.float64), atol=1e-6)  # float32 init, then cast
    assert m.spectral_radius() == pytest.approx(0.9, abs=1e-6)
    for tau in (1, 5, 20):
        assert float(torch.linalg.matrix_norm(torch.linalg.matrix_power(A, tau), ord=2)) == pytest.approx(
            0.9**tau, rel=1e-5
        )
    Q = haar_orthogonal(8, generator=torch.Generator().manual_seed(0))
    assert torch.allclose(Q.T @ Q, torch.eye(8, dtype=torch.float64), atol=1e-12)


def test_ssm_argument_errors():
    with pytest.raises(ValueError, match="rho is set exactly when"):
        LinearSSM(4, init="orthogonal")
    with pytest.raises(ValueError, match="rho is set exactly when"):
        LinearSSM(4, rho=0.9)
    with pytest.raises(ValueError, match="init must be"):
        LinearSSM(4, init="hippo")
    with pytest.raises(ValueError, match="state"):
        LinearSSM(4, state=0)
    with pytest.raises(ValueError, match="expected input"):
        LinearSSM(4)(torch.zeros(1, 3, 5))


# ----------------------------------------------------------------------------- attention


def test_mha_is_causal_and_forward_last_is_the_last_output():
    a = mha(d=8, heads=4)
    x = rand(2, 10, 8)
    with torch.no_grad():
        y = a(x)
        assert torch.allclose(a.forward_last(x), y[:, -1], atol=1e-12)
        x2 = x.clone()
        x2[:, 6:] += 3.0
        y2 = a(x2)
    assert torch.allclose(y2[:, :6], y[:, :6], atol=1e-12) and not torch.allclose(y2[:, 6:], y[:, 6:])


def test_mha_equals_the_sum_of_heads_footnote_1():
    """Footnote 1 (spec §4.6): concatenated heads followed by W_O equal the sum over heads of alpha^(h) V^(h)
    with V^(h) = W_O^(h) W_V^(h) (biases zero at init)."""
    d, H = 8, 2
    a = mha(d=d, heads=H)
    x = rand(1, 5, d)[0]
    W_Q, W_K, W_V = a.attn.in_proj_weight.detach().double().chunk(3)
    W_O = a.attn.out_proj.weight.detach().double()
    dh = d // H
    y = torch.zeros(5, d, dtype=torch.float64)
    mask = torch.ones(5, 5, dtype=torch.bool).triu(1)
    for h in range(H):
        sl = slice(h * dh, (h + 1) * dh)
        S = (x @ W_Q[sl].T) @ (x @ W_K[sl].T).T / math.sqrt(dh)
        alpha = torch.softmax(S.masked_fill(mask, float("-inf")), dim=-1)
        V_h = W_O[:, sl] @ W_V[sl]  # p x d
        y += alpha @ x @ V_h.T
    with torch.no_grad():
        assert torch.allclose(a(x[None])[0], y, atol=1e-12)
        assert torch.allclose(a.value_output_product(), W_O @ W_V, atol=0)


def test_single_head_softmax_layer_eq9():
    g = torch.Generator().manual_seed(0)
    W_Q, W_K, V = (torch.randn(3, 3, generator=g, dtype=torch.float64) for _ in range(3))
    head = CausalSoftmaxHead(W_Q, W_K, V)
    x = torch.randn(4, 3, generator=g, dtype=torch.float64)
    alpha = head.weights(x)
    assert torch.allclose(alpha.sum(-1), torch.ones(4, dtype=torch.float64)) and torch.all(alpha.triu(1) == 0)
    # unscaled logits: row i is softmax_{t <= i}(q_i^T k_t)
    i = 2
    s = torch.stack([(W_Q @ x[i]) @ (W_K @ x[t]) for t in range(i + 1)])
    assert torch.allclose(alpha[i, : i + 1], torch.softmax(s, 0), atol=1e-14)
    assert torch.allclose(head(x), alpha @ x @ V.T)


def test_mha_argument_errors():
    with pytest.raises(ValueError, match="unknown option.*d_out"):  # self-attention maps width d to d
        build_mixer("mha", 4, d_out=5)
    with pytest.raises(ValueError, match="positive divisor"):
        CausalMHA(6, heads=4)


# ----------------------------------------------------------------------------- the task


def test_lag_sensitivity_rows_for_the_ssm_and_attention():
    from seqmix.diagnostics.lag_sensitivity import diagnose
    from seqmix.models.bare import BareMixer

    task = LagSensitivity(d=8, T=[3, 6], T_extra=[9], draws=2)
    assert task.grid == [3, 6, 9] and task.seq_len == 9
    assert torch.equal(task.inputs(0, 6), task.inputs(0, 6)) and not torch.equal(task.inputs(0, 6), task.inputs(1, 6))
    torch.manual_seed(0)
    model = BareMixer(**task.model_inputs(), mixer={"name": "linear_ssm", "state": 8}).double()
    out = diagnose(task, model, seed=0)
    df = pd.DataFrame(out["rows"])
    assert len(df) == 3 * 2 and list(df["lag"]) == [2, 2, 5, 5, 8, 8]
    assert (df["rel_err"] < 1e-10).all() and (df["bound_ratio"] <= 1).all()
    assert (df["fro"] - df["closed_form"]).abs().max() < 1e-10 * df["closed_form"].max()  # input-independent
    assert df["ln_rho"].iloc[0] == pytest.approx(math.log(df["rho"].iloc[0]))
    assert [t for t, _ in out["metrics"]["fro_geomean"]] == [3, 6, 9]
    torch.manual_seed(0)
    model = BareMixer(**task.model_inputs(), mixer={"name": "mha", "heads": 2}).double()
    df = pd.DataFrame(diagnose(task, model, seed=0)["rows"])
    assert "closed_form" not in df and (df["fro_times_T"] == df["fro"] * df["T"]).all()
    assert (df["uniform_approx"] * df["T"]).nunique() == 1  # ||W_O W_V||_F / T


def test_diagnose_cell_measures_the_initial_model(tmp_path):
    """The diagnose stage on a cell of an untrained experiment: rows per (leaf, T, draw), a marker per leaf,
    and a skip on the second call."""
    from seqmix.io import config_hash
    from seqmix.pipeline import stages

    cfg = {
        "task": {"name": "lag_sensitivity", "d": 4, "T": [2, 5], "draws": 2},
        "model": {"name": "bare", "mixer": {"name": "linear_ssm", "state": 3}},
        "train": {"dtype": "float64"},
        "eval": {},
        "paper": "heads",
        "experiment": "exp2",
        "variant": "ssm",
        "point": "-",
        "seed": 0,
        "sweep_value": None,
    }
    leaf = {"id": "ssm/-/seed0", "hash": config_hash(cfg), "out_dir": str(tmp_path / "ssm"), "config": cfg}
    run = {
        "paper": "heads",
        "experiment": "exp2",
        "cell": "ssm-0",
        "scale": "tiny",
        "results": str(tmp_path),
        "tracking": {"uri": "none"},
        "leaves": [leaf],
    }
    out = stages.run_stage("diagnose", run)
    assert len(out["rows"]) == 2 * 2 and out["leaves"][0]["trained"] is False
    assert {"variant", "seed", "model", "T", "lag", "fro", "closed_form"} <= set(out["rows"][0])
    assert out["rows"][0]["model"] == "linear_ssm"
    assert (tmp_path / "ssm" / "diagnose.csv").exists() and (tmp_path / "ssm" / "diagnose.json").exists()
    mtime = (tmp_path / "ssm" / "diagnose.json").stat().st_mtime_ns
    again = stages.run_stage("diagnose", run)
    assert (tmp_path / "ssm" / "diagnose.json").stat().st_mtime_ns == mtime
    assert again["rows"] == out["rows"]
