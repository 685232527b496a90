"""D4 of spec §3.6: one-block end-to-end Jacobians at random initialisation (Prop. 10).

One Sessa block (``SessaBlock``: y = x + (mixer(GELU(a)) * g) W_out + b_out) around each mixer, in float64, on
x ~ N(0, I): (1, T, D). The q/k projections are scaled by s_qk to move the attention into (s_qk small) or out
of the diffuse regime: Sessa's forward q/k rows of ``qkv`` and the whole feedback projection (q_b, k_b); the
Transformer's q/k rows; for Mamba2, which has no q/k, its B and C rows of ``in_proj`` (C_t . B_j plays the part
of a logit in SSD), so s_qk moves its selectivity the same way. Every block of a mixer is built from the same
seed, so the s_qk settings differ by the scaling alone.

||dy_{tau+l}/dx_tau||_F for every l at once by forward-mode JVPs with K Hutchinson tangents at x_tau
(``diagnostics.hutchinson.jvp_lag_norms``), pooled over ``sequences`` draws of x as sqrt(mean ||J v||^2).
The realised routing on the block's mixer input: Sessa's c2_hat = max t alpha_fb[t, j], the feedback logit
spread, gamma statistics and beta_hat = 1 - max|gamma| c2_hat (Thm. 8 needs beta > 0; spec: "often violated
at init"); the Transformer's logit spread; Mamba2's Delta and c_Delta.
-> summary.csv (mixer, s_qk, tau, quantity, value), jacobians.csv (mixer, s_qk, tau, lag, fro) and the figure.
"""

from __future__ import annotations

from pathlib import Path

import torch

from ...diagnostics import routing as R
from ...diagnostics.hooks import captured
from ...diagnostics.hutchinson import jvp_lag_norms, loglog_slope, semilog_slope
from ...mixers.base import build_mixer
from ...mixers.sessa import SessaBlock
from ...report.tables import write_csv
from .diagnostics_figures import d4_figure

LABELS = {"sessa": "Sessa", "softmax_attention": "Transformer", "mamba2": "Mamba2"}


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


# how a routing quantity pools over the draws of x: extremes stay extremes, the rest is averaged
REDUCE = {"c2_hat": max, "logit_spread_max": max, "gamma_absmax": max, "delta_min": min, "c_delta": min}


def scale_qk(name: str, mixer: torch.nn.Module, s: float) -> None:
    """Multiply the q/k projections (weights and biases) of a freshly built mixer by s (see the module doc)."""
    with torch.no_grad():
        if name in ("sessa", "softmax_attention"):
            d = mixer.d_model
            mixer.qkv.weight[: 2 * d] *= s
            if mixer.qkv.bias is not None:
                mixer.qkv.bias[: 2 * d] *= s
            if name == "sessa" and mixer.feedback:
                mixer.proj_fb.weight *= s
                mixer.proj_fb.bias *= s
        elif name == "mamba2":
            lo = 2 * mixer.d_inner  # [z | x | B | C | dt]: B and C follow z and x
            mixer.in_proj.weight[lo : lo + 2 * mixer.G * mixer.N] *= s
        else:
            raise ValueError(f"d4_init_jacobians: no q/k scaling defined for mixer {name!r}")


def init_block(name: str, options: dict, d_model: int, seq_len: int, s_qk: float, seed: int) -> SessaBlock:
    """A float64 Sessa block around ``name`` with its q/k scaled by s_qk, built from ``seed``."""
    torch.manual_seed(seed)
    mixer = build_mixer(name, d_model, layer_idx=0, seq_len=seq_len, **options)
    scale_qk(name, mixer, s_qk)
    return SessaBlock(d_model, mixer).double().eval()


def routing_rows(name: str, block: SessaBlock, x: torch.Tensor) -> dict[str, float]:
    """The realised routing quantities of the block's mixer on input x: (1, T, D)."""
    with torch.no_grad(), captured([block.mixer], "input") as inp:
        block(x)
    a, m, out = inp[0], block.mixer, {}
    with torch.no_grad():
        return _routing(name, m, a, out)


def _routing(name: str, m: torch.nn.Module, a: torch.Tensor, out: dict) -> dict[str, float]:
    if name == "sessa":
        gamma, alpha = m.gamma(a).double(), m.feedback_weights(a).double()
        c2 = float(R.c2_hat(alpha).max())
        spread = R.logit_spread(alpha, strict=True)[:, 2:]
        out |= {"c2_hat": c2, "logit_spread_mean": float(spread.mean()), "logit_spread_max": float(spread.max())}
        out |= {
            "gamma_mean": float(gamma.mean()),
            "gamma_std": float(gamma.std()),
            "gamma_absmax": float(gamma.abs().max()),
        }
        out["beta_hat"] = 1.0 - out["gamma_absmax"] * c2
    elif name == "softmax_attention":
        spread = R.logit_spread(m.attention_weights(a).double(), strict=False)[..., 1:]
        out |= {"logit_spread_mean": float(spread.mean()), "logit_spread_max": float(spread.max())}
    elif name == "mamba2":
        delta = m.step_sizes(a).double()
        out |= {"delta_mean": float(delta.mean()), "delta_min": float(delta.min())}
        out["lambda_delta_mean"] = float((delta * -m.decay_rates().double()).mean())
        out["c_delta"] = float(R.min_window_rate(delta, min(8, delta.shape[1])).min())
    return out


def mixer_rows(name: str, st: dict, s_qk: float, seed: int) -> tuple[list, list]:
    """(summary rows, Jacobian rows) of one mixer at one s_qk."""
    D, T, K = st["d_model"], st["seq_len"], st["tangents"]
    block = init_block(name, st["mixers"][name], D, T, s_qk, seed)
    gen = torch.Generator().manual_seed(seed)
    xs = [torch.randn(1, T, D, generator=gen, dtype=torch.float64) for _ in range(st["sequences"])]
    keys = {"mixer": name, "label": LABELS.get(name, name), "s_qk": s_qk}
    summary, curves = [], []
    for tau in st["sources"]:
        sq = sum(jvp_lag_norms(block, x, tau, K, gen).pow(2) for x in xs) / len(xs)
        fro = sq.sqrt()[0, tau:]  # lags 0 .. T-1-tau
        lags = torch.arange(len(fro), dtype=torch.float64)
        curves += [{**keys, "tau": tau, "lag": int(lag), "fro": float(v)} for lag, v in zip(lags, fro)]
        fit = lags >= st["min_fit_lag"]
        for q, v in (
            ("slope_loglog", loglog_slope(lags[fit], fro[fit])),
            ("slope_semilog", semilog_slope(lags[fit], fro[fit])),
            ("fro_lag0", float(fro[0])),
            ("fro_lag1", float(fro[1]) if len(fro) > 1 else float("nan")),
            ("fro_last", float(fro[-1])),
        ):
            summary.append({**keys, "tau": tau, "quantity": q, "value": v})
    draws = [routing_rows(name, block, x) for x in xs]
    route = {q: REDUCE.get(q, _mean)([d[q] for d in draws]) for q in draws[0]}
    if "beta_hat" in route:  # from the pooled maxima, not the mean of per-draw betas
        route["beta_hat"] = 1.0 - route["gamma_absmax"] * route["c2_hat"]
    summary += [{**keys, "tau": "", "quantity": q, "value": v} for q, v in route.items()]
    return summary, curves


def d4_rows(st: dict) -> tuple[list, list]:
    summary, curves = [], []
    for name in st["mixers"]:
        for s_qk in st["s_qk"]:
            s, c = mixer_rows(name, st, float(s_qk), int(st["seed"]))
            summary += s
            curves += c
    return summary, curves


def d4_init_jacobians(spec: dict, out: Path) -> None:
    st = spec["analysis"]["d4_init_jacobians"]
    summary, curves = d4_rows(st)
    write_csv(Path(out) / "summary.csv", summary, checksum=True)  # the claims verify it
    write_csv(Path(out) / "jacobians.csv", curves)
    d4_figure(curves, summary, Path(out) / "d4_init_jacobians", spec["scale"])
