"""D1 (fixed-routing kernels) and D5 (deep path sums) of sessa spec §3.6: the curves |influence| vs lag that
``figure_d1_kernels`` and ``figure_d5_deep`` draw, and their fitted slopes as theory_checks rows."""

from __future__ import annotations

import math
from functools import partial

import numpy as np

from .theory import bounds as bd
from .theory import kernels as kn
from .theory import solve as ss
from .theory_checks_rows import row, semilog_slope, slope


def d1_curves(st: dict, rng: np.random.Generator) -> list[dict]:
    """[{kernel, gamma, tau, delta, lag: (L+1,), value: (L+1,)}]: attention 1/(tau+l+1) and a diffuse random
    alpha, SSM exp(-lambda c_Delta l), Sessa [(I - B)^{-1}][tau+l, tau] with B = gamma/t (the recursion), and
    the uniform closed form of Prop. 29 beside it."""
    L = st["lag_max"]
    lags = np.arange(L + 1)
    out = []
    for tau in st["taus"]:
        out.append({"kernel": "attention", "gamma": "", "tau": tau, "delta": "", "value": 1.0 / (tau + lags + 1)})
        for gamma in st["gammas"]:
            out.append(
                {"kernel": "sessa", "gamma": gamma, "tau": tau, "delta": "", "value": ss.uniform_column(tau, L, gamma)}
            )
            closed = np.concatenate([[1.0], ss.uniform_closed_form(tau, lags[1:], gamma)])
            out.append({"kernel": "sessa_closed_form", "gamma": gamma, "tau": tau, "delta": "", "value": closed})
    spread = st["attn_spread"]
    out.append(
        {
            "kernel": "attention_diffuse",
            "gamma": "",
            "tau": 0,
            "delta": spread,
            "value": bd.diffuse_attention_column(0, L, spread, rng),
        }
    )
    for c_delta in st["c_deltas"]:
        out.append(
            {"kernel": "ssm", "gamma": "", "tau": 0, "delta": c_delta, "value": np.exp(-st["lam"] * c_delta * lags)}
        )
    for curve in out:
        curve["lag"] = lags
    return out


def check_d1(st: dict, rng: np.random.Generator) -> list[dict]:
    rows, L, l0 = [], st["lag_max"], st["slope_from"]
    for c in d1_curves(st, rng):
        p = {"tau": c["tau"], "lag": L}
        if c["kernel"] == "attention":
            rows.append(row("D1", "attention_loglog_slope", slope(c["value"], l0, L), -1.0, **p))
        elif c["kernel"] == "attention_diffuse":
            fit = float(np.polyfit(np.log(c["lag"][l0:]), np.log(c["value"][l0:]), 1)[0])
            rows.append(row("D1", "attention_diffuse_loglog_slope", fit, -1.0, delta=c["delta"], **p))
        elif c["kernel"] == "sessa":
            rows.append(
                row("D1", "sessa_loglog_slope", slope(c["value"], l0, L), c["gamma"] - 1, gamma=c["gamma"], **p)
            )
        elif c["kernel"] == "ssm":
            rows.append(
                row(
                    "D1",
                    "ssm_semilog_slope",
                    semilog_slope(c["value"], l0, L),
                    -st["lam"] * c["delta"],
                    delta=c["delta"],
                    **p,
                )
            )
    return rows


def d5_curves(st: dict) -> list[dict]:
    """[{model, beta, k, lag, value}]: the transport from tau* = 0 to l through k residual macro-layers: Sessa
    I + a (i+1)^{-beta} 1[j < i] for each beta, the deep harmonic (Transformer) I + a H and the deep exponential
    (Mamba) I + a e^{-c (t - tau)} 1[tau < t], and Cor. 4.7's envelopes of the last two at depth k."""
    L, a, lags = st["lag_max"], st["a"], np.arange(st["lag_max"] + 1)
    e0 = kn.impulse(L + 1)
    out = []
    for k in st["ks"]:
        for beta in st["betas"]:
            v = kn.stack_transport(partial(kn.apply_power_kernel, beta=beta), e0, k, a)
            out.append({"model": "sessa", "beta": beta, "k": k, "lag": lags, "value": v})
        out.append(
            {
                "model": "transformer",
                "beta": "",
                "k": k,
                "lag": lags,
                "value": kn.stack_transport(kn.apply_harmonic, e0, k, a),
            }
        )
        v = kn.stack_transport(partial(kn.apply_exponential, c=st["mamba_c"]), e0, k, a)
        out.append({"model": "mamba", "beta": "", "k": k, "lag": lags, "value": v})
        # Cor. 4.7's horizon-uniform envelopes at depth k (shapes, up to constants)
        env = kn.envelope_transformer(lags, k)
        out.append({"model": "transformer_envelope", "beta": "", "k": k, "lag": lags, "value": env})
        env = kn.envelope_mamba(lags, k, st["mamba_c"])
        out.append({"model": "mamba_envelope", "beta": "", "k": k, "lag": lags, "value": env})
    return out


def check_d5(st: dict) -> list[dict]:
    rows, L, l0 = [], st["lag_max"], st["slope_from"]
    for c in d5_curves(st):
        p = {"k": c["k"], "lag": L}
        if c["model"] == "sessa":
            nu = c["k"] * (1 - c["beta"]) - 1
            rows.append(row("D5", "sessa_loglog_slope", slope(c["value"], l0, L), nu, beta=c["beta"], **p))
        elif c["model"] == "transformer":
            # predicted: the slope of Cor. 4.7's envelope (log(1+l))^{k-1}/(1+l) over the same lags
            env = kn.envelope_transformer(np.arange(L + 1), c["k"])
            rows.append(row("D5", "transformer_loglog_slope", slope(c["value"], l0, L), slope(env, l0, L), **p))
        elif c["model"] == "mamba":
            l1 = min(L, l0 + int(math.ceil(200 / st["mamba_c"])))  # before the tail underflows
            env = kn.envelope_mamba(np.arange(l1 + 1), c["k"], st["mamba_c"])  # (1+l)^{k-1} e^{-c l}
            rows.append(
                row(
                    "D5",
                    "mamba_semilog_slope",
                    semilog_slope(c["value"], l0, l1),
                    semilog_slope(env, l0, l1),
                    delta=st["mamba_c"],
                    **p,
                )
            )
    return rows
