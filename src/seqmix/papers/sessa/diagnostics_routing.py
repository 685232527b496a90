"""D7 of spec §3.6: the realised routing of the trained E1/E2 models, per layer, read through the mixers'
capabilities on each layer's mixer input (captured by a hook during one forward per sequence).

Each probe sequence runs alone, cropped to its real tokens (E1 drops its left padding, E2 ends at its anchor;
causality makes the crop exact for E2), so position t counts from the sequence's first real token.
- Sessa (FeedbackRouting): gamma_t (mean, std, max|gamma|, a histogram on [-1, 1]), the feedback entropy H_t
  against log t (``entropy_ratio`` = mean of H_t / log t over t >= 2: 1 is uniform, diffuse), the effective
  support exp(H_t) / t, c2_hat = max t alpha_fb[t, j], the realised eta_hat = max|gamma| c2_hat (per sequence,
  then the max: the subcritical condition of Thm. 8 is eta < 1; ``eta_cfg`` uses the configured gamma_max),
  and the solve kernel (I - B_fb)^{-1}[tau + l, tau] averaged over sources tau <= max_source, with its
  log-log slope over l >= min_fit_lag.
- forward attention (AttentionWeights: the Transformer's, and Sessa's forward branch, the only routing of
  Sessa without feedback): alpha[tau + l, tau] averaged over heads and tau <= max_source, its log-log slope
  (uniform attention gives about -1), ``fwd_entropy_ratio`` H_t / log(t + 1) and ``fwd_logit_spread_mean``.
- Mamba2 (SelectiveDecay): Delta_t statistics, exp(A_h sum Delta) against l (its semi-log slope: -lambda
  c_Delta for a steady decay) and c_Delta = min over windows of length >= min_window of sum Delta / length.
Rows with ``layer`` empty summarise all layers (max over layers of eta_hat, c2_hat, max|gamma|).
"""

from __future__ import annotations

import math

import torch

from ...capabilities import AttentionWeights, FeedbackRouting, SelectiveDecay
from ...diagnostics import routing as R
from ...diagnostics.hooks import captured
from ...diagnostics.hutchinson import loglog_slope, semilog_slope
from .diagnostics_common import Profile, leaf_keys, leaf_models, probe_batch

GAMMA_BINS = torch.linspace(-1.0, 1.0, 21, dtype=torch.float64)
# how a per-sequence quantity pools over the probe sequences (default: the mean)
REDUCE = {"gamma_absmax": max, "c2_hat": max, "eta_hat": max, "eta_cfg": max, "c_delta": min, "delta_min": min}
REDUCE["delta_max"] = max


class _LayerStats:
    """What one layer accumulates over the probe sequences: named scalar lists and named profiles."""

    def __init__(self):
        self.values: dict[str, list[float]] = {}
        self.profiles: dict[str, Profile] = {}
        self.gamma_hist = torch.zeros(len(GAMMA_BINS) - 1, dtype=torch.float64)

    def add(self, name: str, value) -> None:
        self.values.setdefault(name, []).append(float(value))

    def profile(self, name: str, curve: torch.Tensor) -> None:
        self.profiles.setdefault(name, Profile()).add(curve)


def _sessa(st: _LayerStats, m, a: torch.Tensor, sources: list[int]) -> None:
    gamma, alpha = m.gamma(a).double(), m.feedback_weights(a).double()  # (1, n), (1, n, n)
    n = gamma.shape[1]
    g = gamma.reshape(-1)
    st.gamma_hist += torch.histc(g.clamp(-1, 1), bins=len(GAMMA_BINS) - 1, min=-1, max=1).double()
    st.add("gamma_mean", g.mean())
    st.add("gamma_std", g.std(unbiased=False))
    st.add("gamma_absmax", g.abs().max())
    H = R.row_entropy(alpha)[0]  # (n,)
    t = torch.arange(n, dtype=torch.float64)
    if n > 2:
        st.add("entropy_ratio", (H[2:] / t[2:].log()).mean())
        st.add("support_fraction", (H[1:].exp() / t[1:]).mean())
        st.add("logit_spread_mean", R.logit_spread(alpha, strict=True)[0, 2:].mean())
    st.profile("entropy", H)
    c2 = float(R.c2_hat(alpha)[0])
    st.add("c2_hat", c2)
    st.add("eta_hat", float(g.abs().max()) * c2)
    st.add("eta_cfg", m.gamma_max * c2)
    srcs = [s for s in sources if s < n]
    st.profile("solve_kernel", R.kernel_profile(R.solve_kernel(gamma, alpha, srcs), srcs))


def _attention(st: _LayerStats, m, a: torch.Tensor, sources: list[int]) -> None:
    alpha = m.attention_weights(a).double()  # (1, H, n, n)
    n = alpha.shape[-1]
    st.profile("attention_diagonal", R.diagonal_profile(alpha, [s for s in sources if s < n]))
    if n > 1:
        H = R.row_entropy(alpha)[0].mean(0)  # heads averaged: (n,)
        st.add("fwd_entropy_ratio", (H[1:] / torch.arange(2, n + 1, dtype=torch.float64).log()).mean())
        st.add("fwd_logit_spread_mean", R.logit_spread(alpha, strict=False)[0, :, 1:].mean())


def _decay(st: _LayerStats, m, a: torch.Tensor, sources: list[int], min_window: int) -> None:
    delta, A = m.step_sizes(a).double(), m.decay_rates().double()  # (1, n, H), (H,)
    n = delta.shape[1]
    st.add("delta_mean", delta.mean())
    st.add("delta_min", delta.min())
    st.add("delta_max", delta.max())
    st.add("lambda_delta_mean", (delta * -A).mean())
    c = R.min_window_rate(delta, min_window)
    if torch.isfinite(c).all():
        st.add("c_delta", c.min())
    st.profile("accumulated_decay", R.accumulated_decay(delta, A, [s for s in sources if s < n]))


def _crop(batch, i: int) -> torch.Tensor:
    """Sequence i's real tokens up to its anchor: (1, n)."""
    keep = batch.valid[i].nonzero()[:, 0]
    return batch.tokens[i, int(keep.min()) : int(keep.max()) + 1][None]


def _layer_rows(keys: dict, layer: int, st: _LayerStats, settings: dict) -> tuple[list, list]:
    """(summary rows, curve rows) of one layer: scalars pooled over the sequences (``REDUCE``), the gamma
    histogram, and each profile with its slopes over lags >= min_fit_lag."""
    at = {**keys, "layer": layer}
    rows, curves = [], []
    for name, vals in st.values.items():
        how = REDUCE.get(name)
        rows.append({**at, "quantity": name, "value": how(vals) if how else sum(vals) / len(vals)})
        if name == "c2_hat":
            rows.append({**at, "quantity": "c2_hat_median", "value": float(torch.tensor(vals).median())})
    if "eta_hat" in st.values:
        rows.append({**at, "quantity": "subcritical", "value": float(max(st.values["eta_hat"]) < 1)})
        for lo, hi, c in zip(GAMMA_BINS[:-1].tolist(), GAMMA_BINS[1:].tolist(), st.gamma_hist.tolist()):
            curves.append({**at, "measure": "gamma_hist", "x": (lo + hi) / 2, "value": c})
    for name, prof in st.profiles.items():
        curve = prof.mean()
        curves += [{**at, "measure": name, "x": i, "value": float(v)} for i, v in enumerate(curve)]
        if name == "entropy":  # H_t against t (the figure draws it against log t)
            continue
        x = torch.arange(len(curve), dtype=torch.float64)
        fit = x >= settings["min_fit_lag"]
        rows.append({**at, "quantity": f"{name}_loglog_slope", "value": loglog_slope(x[fit], curve[fit])})
        if name == "accumulated_decay":
            rows.append({**at, "quantity": f"{name}_semilog_slope", "value": semilog_slope(x[fit], curve[fit])})
    return rows, curves


def routing_leaf(exp: str, leaf: dict, settings: dict) -> tuple[list, list]:
    """D7 for one leaf: (summary rows, curve rows)."""
    task, [(_, _, model)] = leaf_models(leaf)
    batch = probe_batch(task, settings["sequences"])
    sources = list(range(settings["max_source"] + 1))
    mixers = model.mixers()
    stats = [_LayerStats() for _ in mixers]
    with torch.no_grad():
        for i in range(len(batch.tokens)):
            with captured(mixers, "input") as inputs:
                model(_crop(batch, i))
            for st, m, a in zip(stats, mixers, inputs):
                if isinstance(m, FeedbackRouting) and m.feedback:
                    _sessa(st, m, a, sources)
                if isinstance(m, AttentionWeights):
                    _attention(st, m, a, sources)
                if isinstance(m, SelectiveDecay):
                    _decay(st, m, a, sources, settings["min_window"])
    keys = leaf_keys(exp, leaf)
    rows, curves = [], []
    for layer, st in enumerate(stats):
        r, c = _layer_rows(keys, layer, st, settings)
        rows += r
        curves += c
    for name in ("eta_hat", "c2_hat", "gamma_absmax"):
        per_layer = [r["value"] for r in rows if r["quantity"] == name and math.isfinite(r["value"])]
        if per_layer:
            rows.append({**keys, "layer": "", "quantity": f"{name}_all_layers", "value": max(per_layer)})
    if any(r["quantity"] == "eta_hat_all_layers" for r in rows):
        eta = next(r["value"] for r in rows if r["quantity"] == "eta_hat_all_layers")
        rows.append({**keys, "layer": "", "quantity": "subcritical_all_layers", "value": float(eta < 1)})
    return rows, curves
