"""The B2S6 paper's data figures, one function per figure, each beside the CSV it is drawn from.

- ``figure3`` (E1): test mean ||g_pred - g||_2 per epoch, one panel per unit, one curve per width d
- ``figure4`` (E3): heat maps of the mean relative error over the (sigma1, sigma2) grid, one per unit
- ``figure5`` (E4): the three gradient ratios on log-log axes beside the paper's reference slopes (the
  reported values of claims e4-slope-c-w, e4-slope-c-b and e4-slope-L-b)
- ``figure6`` (E5): RMS training loss and the Delta-gradient norms per step, one column per model
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ...report.plots import legend_outside, paper_values, save_figure
from ...results import read_leaf_output

UNITS = {"s4d": "S4D", "s6": "S6", "b2s6": "B2S6"}


def _leaf_histories(spec: dict, experiment: str) -> list[tuple[dict, dict]]:
    return [
        (leaf["config"], read_leaf_output(Path(leaf["out_dir"]) / "history.json"))
        for leaf in spec["inputs"]["leaves"][experiment]
    ]


def figure3(spec: dict, out: Path) -> None:
    rows = []
    for cfg, hist in _leaf_histories(spec, "e1"):
        diag = hist.get("diagnostics") or {}
        per_epoch = -(-cfg["task"]["train_size"] // cfg["train"]["batch"])  # ceil: the task reads whole epochs
        for step, v in zip(diag.get("step", []), diag.get("test_l2", [])):
            if step > 0:
                rows.append(
                    {
                        "unit": cfg["variant"],
                        "d": cfg["model"]["width"],
                        "seed": cfg["seed"],
                        "epoch": step / per_epoch,
                        "test_l2": v,
                    }
                )
    df = pd.DataFrame(rows)
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4), sharey=True)
    for ax, (unit, title) in zip(axes, UNITS.items()):
        sub = df[df["unit"] == unit] if len(df) else df
        for i, (d, g) in enumerate(sub.groupby("d") if len(sub) else []):
            m = g.groupby("epoch")["test_l2"].mean()
            label = f"d = {d}" if unit != "b2s6" else f"(h, p) = ({int(round(d**0.5))}, {int(round(d**0.5))})"
            ax.plot(
                m.index, m.values, "o-", ms=3, color=plt.cm.viridis(i / max(1, sub["d"].nunique() - 1)), label=label
            )
        ax.set_title(title + (" (block only)" if unit == "b2s6" else ""))
        ax.set_xlabel("epoch")
    axes[0].set_ylabel(r"mean $\|\tilde g - g\|_2$ (test)")
    for ax in axes:  # each unit names its widths its own way: a legend under every panel
        if ax.lines:
            legend_outside(ax, below=True, ncols=2)
    fig.suptitle("Figure 3: recovering cosine coefficients with single-layer units over widths", fontsize=10, y=1.06)
    save_figure(fig, out / "figure3", df)


def figure4(spec: dict, out: Path) -> None:
    df = pd.read_csv(spec["inputs"]["summaries"]["e3"])
    cells = df.groupby(["variant", "sigma1", "sigma2"])["rel_err"].mean().reset_index()
    s1, s2 = sorted(cells["sigma1"].unique()), sorted(cells["sigma2"].unique())
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    for ax, (unit, title) in zip(axes, UNITS.items()):
        grid = np.full((len(s2), len(s1)), np.nan)
        for r in cells[cells["variant"] == unit].itertuples():
            grid[s2.index(r.sigma2), s1.index(r.sigma1)] = r.rel_err
        im = ax.imshow(grid, origin="lower", cmap="viridis", vmin=0, vmax=1)
        for (i, j), v in np.ndenumerate(grid):
            if np.isfinite(v):
                ax.text(j, i, f"{v:.3g}", ha="center", va="center", fontsize=7, color="w" if v < 0.5 else "k")
        ax.set_xticks(range(len(s1)), [f"{v:g}" for v in s1])
        ax.set_yticks(range(len(s2)), [f"{v:g}" for v in s2])
        ax.set_xlabel(r"$\sigma_1$")
        ax.set_title(title)
    axes[0].set_ylabel(r"$\sigma_2$")
    fig.colorbar(im, ax=list(axes), shrink=0.8, label="mean relative error")
    fig.suptitle("Figure 4: copy-me under input-magnitude imbalance (0.798 = predicting 0)", fontsize=10, y=1.06)
    save_figure(fig, out / "figure4", cells)


def figure5(spec: dict, out: Path) -> None:
    df = pd.read_csv(spec["inputs"]["artefacts"]["gradient_scaling"][0])
    series = df[df["quantity"] == "ratio"]
    panels = (  # the paper's reference slope of each panel: its claim's reported value
        ("c_w", r"$|\partial_w y_{S6}| / |\partial_b y_{S4D}|$ vs $c$", "e4-slope-c-w", "c"),
        ("c_b", r"$|\partial_b y_{S6}| / |\partial_b y_{S4D}|$ vs $c$", "e4-slope-c-b", "c"),
        ("L_b", r"$|\partial_b y_{S6}| / |\partial_b y_{S4D}|$ vs $L$", "e4-slope-L-b", "L"),
    )
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
    for ax, (panel, title, claim, xlabel) in zip(axes, panels):
        g = series[series["panel"] == panel].sort_values("x")
        x, y = g["x"].to_numpy(float), g["mean"].to_numpy(float)
        ref = float(spec["reported"][claim])
        ax.loglog(x, y, "o-", color="tab:blue", label="ours: closed form, mean of trials")
        paper_values(ax, x, y[0] * (x / x[0]) ** ref, line=True, marker="", label=f"paper: slope {ref:g} (Thm 3)")
        slope = df[df["quantity"] == f"slope_{panel}"]["value"].iloc[0]
        ax.set_title(f"{title}\nfitted slope {slope:.3f}", fontsize=9)
        ax.set_xlabel(xlabel)
        if xlabel == "L":  # the swept lengths as plain ticks: over a decade or two a log axis labels its minor
            # ticks (2x10^2, 3x10^2, ...), which run into each other
            ax.set_xticks(x, [f"{v:g}" for v in x], rotation=45 if len(x) > 6 else 0)
            ax.xaxis.set_minor_formatter(plt.NullFormatter())
    fig.tight_layout()
    for ax in axes:
        legend_outside(ax, below=True)
    fig.suptitle("Figure 5: gradient-ratio scaling (Thm 3)", fontsize=10, y=1.06)
    save_figure(fig, out / "figure5", series)


def figure6(spec: dict, out: Path) -> None:
    rows = []
    for cfg, hist in _leaf_histories(spec, "e5"):
        for i, step in enumerate(hist["step"]):
            rows.append(
                {
                    "model": cfg["variant"],
                    "c": cfg["task"]["scale"],
                    "seed": cfg["seed"],
                    "step": step,
                    "rms": float(np.sqrt(hist["train_loss"][i])),
                    **{k: hist[k][i] for k in ("grad_norm_w", "grad_norm_b") if k in hist},
                }
            )
    df = pd.DataFrame(rows)
    models = {"s4d": "S4D", "s6": "S6", "s6_fixed": r"S6 with fixed $\Delta$"}
    fig, axes = plt.subplots(2, 3, figsize=(12, 5.4), sharex=True, sharey="row")
    for col, (model, title) in enumerate(models.items()):
        sub = df[df["model"] == model]
        for (c, seed), g in sub.groupby(["c", "seed"]):
            axes[0, col].semilogy(g["step"], g["rms"], lw=0.8, label=f"c = {c:g}, seed {seed}")
            if "grad_norm_b" in g and g["grad_norm_b"].gt(0).any():
                axes[1, col].semilogy(g["step"], g["grad_norm_b"], lw=0.8, label=f"c = {c:g}, seed {seed}")
        axes[0, col].set_title(title)
        axes[1, col].set_xlabel("step")
        if not axes[1, col].lines:  # the frozen model's Delta parameters get no gradient
            axes[1, col].text(
                0.5, 0.5, "no gradient (Delta frozen)", ha="center", va="center", transform=axes[1, col].transAxes
            )
    axes[0, 0].set_ylabel("RMS loss")
    axes[1, 0].set_ylabel(r"$\|\partial \mathcal{L} / \partial b\|$")
    fig.suptitle("Figure 6: training loss and Delta-gradient norms per step", fontsize=10, y=1.06)
    legend_outside(fig)
    save_figure(fig, out / "figure6", df)
