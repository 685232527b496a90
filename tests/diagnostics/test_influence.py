"""The cross-model influence-vs-lag diagnostic (seqmix.diagnostics.influence, influence_fit).

Checked against an exact oracle (dense Jacobians from torch.autograd.functional.jacobian, with a tolerance from
the Hutchinson estimator's own variance), against closed-form laws (a geometric SSM kernel, a power-law
convolution), for causality, on real tasks and models, on the refusals and on degenerate profiles.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from seqmix import registry
from seqmix.capabilities import LayerStack
from seqmix.diagnostics.influence import influence_of, influence_profile
from seqmix.diagnostics.influence_fit import BEST_FIT, effective_memory, effective_memory_interval, fit_decay
from seqmix.models import build_model
from seqmix.models.lra import LRAClassifier


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


class LagKernel(nn.Module):
    """y_t = sum_s k[t, s] W x_s for a fixed (T, T) kernel and a fixed (d_out, d_in) matrix W: a linear model
    whose Jacobian block at (t, s) is k[t, s] W."""

    def __init__(self, k: torch.Tensor, d_in: int = 2, d_out: int | None = None, seed: int = 0):
        super().__init__()
        self.register_buffer("k", k.double())
        self.w = nn.Parameter(torch.randn(d_out or d_in, d_in, generator=gen(seed), dtype=torch.float64))

    def forward(self, x):
        return torch.einsum("ts,bsd,ed->bte", self.k, x, self.w)


def toeplitz(weights: torch.Tensor, T: int, causal: bool = True) -> torch.Tensor:
    """k[t, s] = weights[t - s] for s <= t (and weights[s - t] above the diagonal when not causal)."""
    lag = torch.arange(T)[:, None] - torch.arange(T)[None, :]
    k = weights.double()[lag.abs()]
    return torch.where(lag >= 0, k, torch.zeros_like(k)) if causal else k


class CausalMix(nn.Module):
    """x + tanh(prefix mean of x A): a nonlinear causal block, (B, T, d) -> (B, T, d)."""

    def __init__(self, d: int):
        super().__init__()
        self.a = nn.Linear(d, d)

    def forward(self, x):
        z = self.a(x).cumsum(1) / torch.arange(1, x.shape[1] + 1, dtype=x.dtype)[None, :, None]
        return x + torch.tanh(z)


class TinyStack(nn.Module):
    """A LayerStack token model: embedding -> two CausalMix blocks -> head."""

    def __init__(self, vocab: int = 7, d: int = 3):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList([CausalMix(d), CausalMix(d)])
        self.head = nn.Linear(d, vocab)

    def token_embedding(self):
        return self.embed

    def layers(self):
        return self.blocks

    def mixers(self):
        return list(self.blocks)

    def forward(self, tokens):
        x = self.embed(tokens)
        for blk in self.blocks:
            x = blk(x)
        return self.head(x)


def exact_blocks(fn, e: torch.Tensor, anchor: torch.Tensor) -> torch.Tensor:
    """Dense oracle: J_b = d fn(e_b)[anchor_b] / d e_b, (N, T, p, d) from torch.autograd.functional.jacobian."""
    out = []
    for b in range(len(e)):
        J = torch.autograd.functional.jacobian(lambda eb, b=b: fn(eb[None])[0, anchor[b]], e[b])  # (p, T, d)
        out.append(J.permute(1, 0, 2))
    return torch.stack(out)


def check_against_oracle(per_example, J: torch.Tensor, anchor: torch.Tensor, probes: int, sigmas: float = 5.0):
    """Each estimate^2 is the mean of K i.i.d. ||u^T J||^2, mean ||J||_F^2 and variance 2 ||J J^T||_F^2: it must
    lie within ``sigmas`` standard errors of the exact value."""
    for b in range(len(J)):
        for lag in range(int(anchor[b]) + 1):
            blk = J[b, int(anchor[b]) - lag]  # (p, d)
            exact = float(blk.pow(2).sum())
            sd = math.sqrt(2 * float((blk @ blk.T).pow(2).sum()) / probes)
            est = float(per_example[b, lag]) ** 2
            assert abs(est - exact) <= sigmas * sd + 1e-12, (b, lag, est, exact, sd)


def test_layer_stack_matches_the_dense_jacobian():
    torch.manual_seed(0)
    model = TinyStack().double()
    tokens = torch.randint(7, (3, 6))
    anchor = torch.tensor([5, 3, 4])
    K = 2000
    prof = influence_profile(model, tokens, probes=K, batch_size=2, generator=gen(1), anchor=anchor)
    e = model.embed(tokens).detach()

    def blocks(x):  # the oracle's own path: no hooks, the blocks called by hand
        for blk in model.blocks:
            x = blk(x)
        return x

    J = exact_blocks(blocks, e, anchor)
    check_against_oracle(prof["per_example"], J, anchor, K)
    assert prof["per_example"].dtype == torch.float64 and prof["per_example"].shape == (3, 6)
    assert all(p.grad is None for p in model.parameters())  # no parameter gradient is kept


def test_a_decoder_lm_matches_the_dense_jacobian():
    """The hooks on a real seqmix model: last block's output at the anchor, against the blocks run by hand."""
    cls = registry.get_task("assoc_recall")
    task = cls(**cls.example_options)
    torch.manual_seed(0)
    model = build_model(cls.example_model, task).double()
    assert isinstance(model, LayerStack)
    tokens = task.test_set()[0][:2, :8]
    anchor = torch.tensor([7, 7])
    K = 1000
    prof = influence_profile(model, tokens, probes=K, generator=gen(2))
    e = model.token_embedding()(tokens).detach()

    def blocks(x):
        for blk in model.layers():
            x = blk(x)
        return x

    check_against_oracle(prof["per_example"], exact_blocks(blocks, e, anchor), anchor, K)


def test_float_inputs_of_a_plain_model_match_the_dense_jacobian():
    """Not a LayerStack: x is the input itself, the target the output at the anchor."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 3), nn.Tanh(), LagKernel(toeplitz(torch.rand(5), 5), d_in=3)).double()
    x = torch.randn(2, 5, 2, dtype=torch.float64)
    K = 2000
    prof = influence_profile(model, x, probes=K, generator=gen(3))
    anchor = torch.tensor([4, 4])
    check_against_oracle(prof["per_example"], exact_blocks(model, x, anchor), anchor, K)


def test_a_linear_model_orders_the_lags_exactly():
    """J at lag l is k_l W: every probe scales all lags alike, so the profile is |k_l| times one factor."""
    k = torch.tensor([0.3, -2.0, 0.05, 1.1, -0.7, 0.9], dtype=torch.float64)
    model = LagKernel(toeplitz(k, 6), d_in=3, d_out=2)
    prof = influence_profile(model, torch.randn(4, 6, 3, dtype=torch.float64), probes=3, generator=gen())
    ratio = prof["per_example"] / prof["per_example"][:, :1]
    assert torch.allclose(ratio, (k.abs() / k.abs()[0]).double().expand(4, 6), rtol=1e-12)
    assert torch.equal(prof["influence"].argsort(), k.abs().argsort())
    exact = k.abs().double() * model.w.detach().norm()
    assert torch.equal(prof["influence"].argsort(), exact.argsort())


def test_a_geometric_kernel_decays_exponentially():
    rho, T, f = 0.8, 40, 0.01
    model = LagKernel(toeplitz(rho ** torch.arange(T, dtype=torch.float64), T), d_in=2)
    prof = influence_profile(model, torch.randn(5, T, 2, dtype=torch.float64), probes=4, generator=gen())
    fit = fit_decay(prof["lags"], prof["per_example"], n_boot=50)
    assert fit["exp_rate"] == pytest.approx(-math.log(rho), rel=1e-9)
    assert fit["exp_rate_lo"] <= fit["exp_rate"] + 1e-12 and fit["exp_rate"] <= fit["exp_rate_hi"] + 1e-12
    assert BEST_FIT[int(fit["best_fit"])] == "exp" and fit["exp_rss"] < 1e-12 < fit["power_rss"]
    by_hand = min(L for L in range(T + 1) if all(rho**m < f * rho**0 for m in range(L, T)))
    assert by_hand == 21 and effective_memory(prof["lags"], prof["influence"], f) == by_hand
    assert effective_memory_interval(prof["lags"], prof["per_example"], f, n_boot=20) == (21.0, 21.0)


def test_a_power_law_convolution_decays_as_a_power():
    p, T, f = 1.5, 64, 0.01
    w = torch.cat([torch.ones(1), torch.arange(1, T, dtype=torch.float64) ** -p])  # w_0 = 1, w_l = l^-p
    model = LagKernel(toeplitz(w, T), d_in=2)
    prof = influence_profile(model, torch.randn(4, T, 2, dtype=torch.float64), probes=4, generator=gen())
    fit = fit_decay(prof["lags"], prof["per_example"], n_boot=50)
    assert fit["power"] == pytest.approx(p, rel=1e-9) and fit["n_lags"] == T - 1
    assert BEST_FIT[int(fit["best_fit"])] == "power" and fit["power_rss"] < 1e-12 < fit["exp_rss"]
    # reference max(w_0, w_1) = 1; l^-p < f for l > f^(-1/p) = 21.5
    assert effective_memory(prof["lags"], prof["influence"], f) == math.floor(f ** (-1 / p)) + 1 == 22


def test_a_model_without_a_lag0_path_is_scaled_by_lag_1():
    """y_t = sum_{s<t} rho^(t-s-1) x_s (a strict shift): I(0) = 0, so the reference is I(1)."""
    rho, T, f = 0.7, 30, 0.01
    w = torch.cat([torch.zeros(1), rho ** torch.arange(T - 1, dtype=torch.float64)])
    model = LagKernel(toeplitz(w, T), d_in=2)
    prof = influence_profile(model, torch.randn(3, T, 2, dtype=torch.float64), probes=2, generator=gen())
    assert prof["influence"][0] == 0
    by_hand = min(L for L in range(T + 1) if all(w[m] < f * max(w[0], w[1]) for m in range(L, T)))
    assert by_hand == 14 and effective_memory(prof["lags"], prof["influence"], f) == by_hand


def test_bootstrap_intervals_cover_a_noisy_rate():
    """Rows c_i rho^l with multiplicative noise: the interval holds the true rate and narrows with more rows."""
    rho = 0.9
    lags = torch.arange(30)

    def rows(n, seed):
        g = gen(seed)
        noise = torch.exp(0.1 * torch.randn(n, 30, generator=g, dtype=torch.float64))
        return torch.rand(n, 1, generator=g, dtype=torch.float64) * rho**lags * noise

    few, many = fit_decay(lags, rows(8, 0), seed=1), fit_decay(lags, rows(128, 0), seed=1)
    for fit in (few, many):
        assert fit["exp_rate_lo"] < -math.log(rho) < fit["exp_rate_hi"]
    assert many["exp_rate_hi"] - many["exp_rate_lo"] < few["exp_rate_hi"] - few["exp_rate_lo"]
    assert fit_decay(lags, rows(8, 0), seed=1) == few  # seeded


def test_a_causal_model_ignores_sources_after_the_anchor():
    torch.manual_seed(0)
    model = TinyStack().double()
    tokens = torch.randint(7, (3, 6))
    anchor = torch.tensor([2, 5, 3])
    prof = influence_profile(model, tokens, probes=4, generator=gen(), anchor=anchor)
    assert torch.equal(prof["lags"], torch.arange(6)) and torch.equal(prof["anchor"], anchor)
    assert torch.equal(prof["after_anchor"], torch.zeros(3, dtype=torch.float64))
    beyond = torch.arange(6)[None, :] > anchor[:, None]
    assert torch.isnan(prof["per_example"][beyond]).all() and torch.isfinite(prof["per_example"][~beyond]).all()
    # the sources after the anchor do not matter: the sequence cut after its anchor gives the same row (one
    # sequence per call, so that both calls draw the same probes)
    for b in range(3):
        a = int(anchor[b])
        whole = influence_profile(model, tokens[b : b + 1], probes=4, generator=gen(), anchor=a)
        cut = influence_profile(model, tokens[b : b + 1, : a + 1], probes=4, generator=gen())
        assert torch.allclose(cut["per_example"], whole["per_example"], rtol=1e-12, atol=0)
    # the mean over lags counts only the sequences that have the lag
    assert torch.allclose(prof["influence"][4], prof["per_example"][1, 4])
    short = influence_profile(model, tokens, probes=2, generator=gen(), anchor=3)
    assert short["per_example"].shape == (3, 4)


def test_a_bidirectional_model_shows_sources_after_the_anchor():
    k = toeplitz(0.5 ** torch.arange(6, dtype=torch.float64), 6, causal=False)
    prof = influence_profile(
        LagKernel(k), torch.randn(2, 6, 2, dtype=torch.float64), probes=2, generator=gen(), anchor=3
    )
    assert (prof["after_anchor"] > 0).all()


def test_a_pooled_output_is_the_target_whole():
    """Mean pooling then a linear head: every source's block is W / T, the same at every lag."""

    class Pooled(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = nn.Linear(2, 3).double()

        def forward(self, x):
            return self.head(x.mean(1))

    model, N, T, K = Pooled(), 3, 5, 2000
    prof = influence_profile(model, torch.randn(N, T, 2, dtype=torch.float64), probes=K, generator=gen())
    row = prof["per_example"]
    assert torch.allclose(row, row[:, :1].expand_as(row), rtol=1e-12)
    J = (model.head.weight.detach() / T).expand(N, T, 3, 2)
    check_against_oracle(row, J, torch.full((N,), T - 1), K)


def test_the_model_runs_in_eval_mode_and_its_mode_is_restored():
    class Watch(nn.Module):
        """The identity, recording the mode of every forward (dropout, BatchNorm: eval mode matters)."""

        def __init__(self):
            super().__init__()
            self.modes = []

        def forward(self, x):
            self.modes.append(self.training)
            return x

    model = TinyStack().double().train()
    model.blocks.append(Watch())
    influence_profile(model, torch.randint(7, (2, 4)), probes=1, generator=gen())
    assert model.training and model.blocks[-1].modes and not any(model.blocks[-1].modes)
    plain = LagKernel(toeplitz(torch.ones(4), 4)).eval()
    prof = influence_profile(plain, torch.randn(2, 4, 2), probes=1, generator=gen())  # float32 into float64
    assert not plain.training and prof["influence"].dtype == torch.float64


def same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        x == y or (math.isnan(x) and math.isnan(y)) for x, y in zip(a.values(), b.values())
    )


@pytest.mark.parametrize("name", ["assoc_recall", "symbolsoup", "lra_image", "lra_listops"])
def test_influence_of_a_task_gives_one_summary_row(name):
    """decoder_lm on an LM task, sequence_classifier on symbolsoup, lra_classifier on pixels and on token ids."""
    torch.set_num_threads(1)
    cls = registry.get_task(name)
    task = cls(**cls.example_options)
    torch.manual_seed(0)
    model = build_model(cls.example_model, task)
    assert isinstance(model, LayerStack)
    row = influence_of(task, model, n_examples=4, probes=2, n_boot=20)
    profile = row.pop("profile")
    T = task.test_set()[0].shape[1]
    assert profile["lags"] == list(range(T)) and len(profile["influence"]) == T
    for key in ("influence_exp_rate", "influence_power", "effective_memory"):
        assert {key, f"{key}_lo", f"{key}_hi"} <= set(row)
    assert all(isinstance(v, float) for v in row.values()), row
    assert row["influence_n_examples"] == 4.0 and row["influence_lag0"] > 0
    assert row["influence_best_fit"] in (0.0, 1.0) and row["influence_n_lags"] == T - 1
    assert 0 <= row["effective_memory"] <= T
    again = influence_of(task, model, n_examples=4, probes=2, n_boot=20)
    assert again.pop("profile") == profile and same(again, row)  # seeded


def test_influence_of_a_right_padded_set_at_its_last_real_tokens():
    """ListOps is right-padded (PAD 0): anchors at each sequence's last real token, cut to n_examples."""
    cls = registry.get_task("lra_listops")
    task = cls(**cls.example_options)
    torch.manual_seed(0)
    model = build_model(cls.example_model, task)
    x = task.test_set()[0]
    last = (x != 0).long().cumsum(1).argmax(1)  # the first position of the largest count: the last real token
    assert int(last[:3].max()) < x.shape[1] - 1  # shorter than the window: T-1 would be a pad
    row = influence_of(task, model, n_examples=3, probes=2, n_boot=10, anchor=last)
    assert row["profile"]["lags"] == list(range(int(last[:3].max()) + 1))
    assert row["influence_n_examples"] == 3.0


def test_refusals_name_the_model():
    retrieval = LRAClassifier(
        d_model=4, n_layers=1, mixer={"name": "s4d", "d_state": 2}, vocab_size=9, num_classes=2, n_documents=2
    )
    with pytest.raises(TypeError, match="no influence diagnostic for LRAClassifier"):
        influence_profile(retrieval, torch.ones(2, 2, 8, dtype=torch.int64), generator=gen())
    plain = LagKernel(toeplitz(torch.ones(4), 4))
    with pytest.raises(TypeError, match="no influence diagnostic for LagKernel.*LayerStack"):
        influence_profile(plain, torch.ones(2, 4, dtype=torch.int64), generator=gen())
    with pytest.raises(TypeError, match="no influence diagnostic for LagKernel"):
        influence_profile(plain, torch.ones(2, 4), generator=gen())  # (B, T) floats: not one sequence a row
    with pytest.raises(ValueError, match="anchor"):
        influence_profile(plain, torch.ones(2, 4, 2), generator=gen(), anchor=4)
    cls = registry.get_task("lag_sensitivity")
    with pytest.raises(TypeError, match="LagSensitivity.*test_set"):
        influence_of(cls(**cls.example_options), plain)


def test_degenerate_profiles_give_nan():
    nan = float("nan")
    cases = {
        "all zero": (torch.arange(5), torch.zeros(3, 5)),
        "one lag": (torch.arange(1), torch.ones(3, 1)),
        "all nan": (torch.arange(5), torch.full((3, 5), nan)),
        "no examples": (torch.arange(5), torch.zeros(0, 5)),
        "two lags": (torch.arange(2), torch.ones(3, 2)),
    }
    for what, (lags, pe) in cases.items():
        fit = fit_decay(lags, pe, n_boot=10)
        assert all(math.isnan(v) for k, v in fit.items() if k != "n_lags"), (what, fit)
        mean = pe.nanmean(0) if len(pe) else torch.full((len(lags),), nan)
        if what != "two lags":
            assert math.isnan(effective_memory(lags, mean)), what
            assert all(math.isnan(v) for v in effective_memory_interval(lags, pe, n_boot=10)), what
    # partly NaN: the unknown lags are skipped, the rest still fit
    pe = 0.5 ** torch.arange(8, dtype=torch.float64).expand(2, 8).clone()
    pe[:, 3] = nan
    assert fit_decay(torch.arange(8), pe, n_boot=5)["exp_rate"] == pytest.approx(math.log(2))
    # a flat profile never drops: the memory reaches the window's end (a lower bound)
    assert effective_memory(torch.arange(8), torch.ones(8)) == 8.0
    with pytest.raises(ValueError, match="fraction"):
        effective_memory(torch.arange(8), torch.ones(8), 0.0)
