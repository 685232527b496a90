"""The Sessa figures of spec §3.6 (the paper's own two figures are schematics, spec §3.5; these are not in the
paper), one function per figure, each beside the CSV it is drawn from. Both compute their curves from the
closed forms with the ``theory_checks`` settings (the same functions as the analysis's D1/D5 rows).

- ``figure_d1_kernels``: D1, |influence| vs lag of the fixed-routing kernels (log-log and semi-log panels)
- ``figure_d5_deep``: D5, transport vs lag through k = 1, 2, 3 macro-layers, Sessa against the deep
  Transformer and Mamba kernels
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .theory_checks_d import d1_curves, d5_curves
from .theory_checks_rows import semilog_slope, slope

GAMMA_COLORS = {0.3: "tab:green", 0.5: "tab:blue", 0.7: "tab:purple", 0.9: "tab:red"}
BETA_STYLES = ["-", "--", "-.", ":"]
K_COLORS = {1: "tab:blue", 2: "tab:orange", 3: "tab:green"}


def _grid(lag_max: int) -> np.ndarray:
    """~200 lags >= 1 to draw and to write: log-spaced, plus every 64th for the semi-log panel (the closed forms
    are smooth, so every lag would only make the PDF and the CSV large)."""
    return np.union1d(np.unique(np.geomspace(1, lag_max, 150).astype(int)), np.arange(64, lag_max + 1, 64))


def _long(curves: list[dict], keys: tuple[str, ...], lags: np.ndarray) -> list[dict]:
    """The curves as long CSV rows on ``lags``."""
    return [{**{k: c[k] for k in keys}, "lag": int(l), "value": float(c["value"][l])} for c in curves for l in lags]


def figure_d1_kernels(spec: dict, out: Path) -> None:
    import matplotlib.pyplot as plt

    from ...report.plots import legend_outside, save_figure

    st = spec["analysis"]["theory_checks"]["d1"]
    curves = d1_curves(st, np.random.default_rng(spec["analysis"]["theory_checks"]["seed"]))
    l0, L = st["slope_from"], st["lag_max"]
    grid = _grid(L)
    fig, (ax_log, ax_semi) = plt.subplots(1, 2, figsize=(12, 4.6))
    for c in curves:
        x, y = grid, np.abs(c["value"][grid])
        if c["kernel"] == "attention" and c["tau"] == 0:
            ax_log.loglog(x, y, color="black", lw=1.6, label=f"attention 1/(t+1), slope {slope(c['value'], l0, L):.3f}")
        elif c["kernel"] == "attention_diffuse":
            ax_log.loglog(x, y, color="grey", lw=0.5, alpha=0.6, label=f"diffuse attention (spread {c['delta']})")
        elif c["kernel"] == "sessa" and c["tau"] in (0, max(st["taus"])):
            ls = "-" if c["tau"] == 0 else "--"
            fitted = slope(c["value"], l0, L)
            label = f"Sessa γ={c['gamma']}, τ={c['tau']}: slope {fitted:.3f} (−(1−γ) = {c['gamma'] - 1:.1f})"
            ax_log.loglog(x, y, ls, color=GAMMA_COLORS.get(c["gamma"], "tab:brown"), lw=1.3, label=label)
        elif c["kernel"] == "sessa_closed_form" and c["tau"] == 0:
            ax_log.loglog(x[::6], y[::6], "o", ms=3, mfc="none", color=GAMMA_COLORS.get(c["gamma"], "tab:brown"))
        elif c["kernel"] == "ssm":
            s = semilog_slope(c["value"], l0, L)
            ax_semi.semilogy(x, y, lw=1.4, label=f"SSM exp(−λ c_Δ l), c_Δ={c['delta']}: slope {s:.4f}/step")
    for c in curves:  # the slow power laws on semi-log axes, for contrast
        if c["kernel"] in ("attention", "sessa") and c["tau"] == 0 and c.get("gamma") in ("", 0.5, 0.9):
            name = c["kernel"] + ("" if c["gamma"] == "" else f" γ={c['gamma']}")
            ax_semi.semilogy(grid, c["value"][grid], ":", lw=1.2, label=f"{name} (power law)")
    ax_log.plot([], [], "o", mfc="none", color="black", ms=3, label="closed form, Prop. 29 (τ = 0)")
    ax_log.set(xlabel="lag l", ylabel="|influence|", title=f"D1 log-log: power laws (slopes over l = {l0}..{L})")
    ax_semi.set(xlabel="lag l", ylabel="|influence|", title="D1 semi-log: the SSM is a straight line", ylim=(1e-30, 3))
    fig.tight_layout()
    for ax in (ax_log, ax_semi):
        ax.grid(alpha=0.3, which="both", lw=0.4)
        legend_outside(ax, below=True, fontsize=6.5)
    save_figure(fig, Path(out) / "figure_d1_kernels", _long(curves, ("kernel", "gamma", "tau", "delta"), grid))


def figure_d5_deep(spec: dict, out: Path) -> None:
    import matplotlib.pyplot as plt

    from ...report.plots import legend_outside, save_figure

    st = spec["analysis"]["theory_checks"]["d5"]
    curves = d5_curves(st)
    l0, L = st["slope_from"], st["lag_max"]
    grid = _grid(L)
    fig, axes = plt.subplots(1, len(st["ks"]), figsize=(4.4 * len(st["ks"]), 4.4))
    for ax, k in zip(np.atleast_1d(axes), st["ks"]):
        for c in (c for c in curves if c["k"] == k):
            x, y = grid, c["value"][grid]
            if c["model"] == "sessa":
                i = st["betas"].index(c["beta"])
                nu = k * (1 - c["beta"]) - 1
                label = f"Sessa β={c['beta']:.3g}: slope {slope(c['value'], l0, L):+.3f} (ν={nu:+.2f})"
                ax.loglog(x, y, BETA_STYLES[i % len(BETA_STYLES)], color=K_COLORS.get(k, "tab:blue"), label=label)
            elif c["model"] in ("transformer", "mamba"):
                color = "black" if c["model"] == "transformer" else "tab:red"
                kind = "harmonic" if c["model"] == "transformer" else "exponential"
                ax.loglog(x, np.maximum(y, 1e-300), color=color, lw=1.0, label=f"{c['model']} (deep {kind})")
            else:  # the envelopes, thin dashed beside their kernels
                color = "black" if c["model"] == "transformer_envelope" else "tab:red"
                ax.loglog(
                    x,
                    np.maximum(y, 1e-300),
                    "--",
                    color=color,
                    lw=0.6,
                    alpha=0.7,
                    label=f"{c['model'].replace('_', ' ')} (Cor. 4.7)",
                )
        ax.set(xlabel="lag l", title=f"k = {k} macro-layers", ylim=(1e-8, None))
        ax.grid(alpha=0.3, which="both", lw=0.4)
    np.atleast_1d(axes)[0].set_ylabel("transport from τ* = 0 to l")
    fig.tight_layout()
    for ax in np.atleast_1d(axes):
        legend_outside(ax, below=True, fontsize=6.5)
    save_figure(fig, Path(out) / "figure_d5_deep", _long(curves, ("model", "beta", "k"), grid))
