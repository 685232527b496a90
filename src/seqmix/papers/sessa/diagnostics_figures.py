"""The figures of the diagnostics D4, D6-D8 (spec §3.6), drawn from the rows their artefacts write (the CSV
beside each figure holds the same numbers). Log-log axes for influence against lag (spec: "log-log and
semi-log axes of |influence| vs lag")."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from ...report.plots import legend_outside, save

COLORS = {"sessa": "C0", "transformer": "C1", "mamba2": "C2", "sessa_nofb": "C3", "softmax_attention": "C1"}


def d4_figure(curves: list[dict], summary: list[dict], stem: Path, scale: str) -> None:
    """One panel per mixer: ||dy_{tau+l}/dx_tau||_F against l (log-log), one line per (s_qk, tau), with
    1/(tau + l + 1) (attention's envelope) scaled to the Transformer's curve at l = 1 as a dashed guide."""
    df = pd.DataFrame(curves)
    mixers = list(dict.fromkeys(df["mixer"]))
    fig, axes = plt.subplots(1, len(mixers), figsize=(4.2 * len(mixers), 3.4), squeeze=False)
    for ax, name in zip(axes[0], mixers):
        part = df[(df["mixer"] == name) & (df["lag"] >= 1)]
        for (s, tau), g in part.groupby(["s_qk", "tau"]):
            ax.loglog(g["lag"], g["fro"], lw=1, ls="-" if s < 1 else "--", label=f"s_qk={s:g}, τ={tau}")
            if name == "softmax_attention" and len(g):
                ref = g["fro"].iloc[0] * (tau + 2) / (tau + g["lag"] + 1)
                ax.loglog(g["lag"], ref, color="k", lw=0.6, ls=":")
        ax.set_title(part["label"].iloc[0] if len(part) else name)
        ax.set_xlabel("lag l")
        ax.set_ylabel("‖∂y_{τ+l}/∂x_τ‖_F (Hutchinson)")
    fig.suptitle(f"D4: one block at random init ({scale}); dotted: 1/(τ+l+1)", fontsize=9)
    fig.tight_layout()
    legend_outside(fig, fontsize=6)  # the same (s_qk, τ) lines in every panel
    save(fig, stem)


def _lag_panels(df: pd.DataFrame, measure: str, ylabel: str, title: str, stem: Path, marks: pd.DataFrame) -> None:
    """One panel per experiment, one line per variant (mean over seeds of the binned profile), log-log."""
    exps = sorted(df["experiment"].unique()) if len(df) else []
    fig, axes = plt.subplots(1, max(1, len(exps)), figsize=(4.6 * max(1, len(exps)), 3.4), squeeze=False)
    for ax, exp in zip(axes[0], exps):
        part = df[(df["experiment"] == exp) & (df["measure"] == measure) & (df["lag_lo"] >= 1)]
        for variant, g in part.groupby("variant", sort=False):
            mean = g.groupby("lag_mid")["mean"].mean()
            ax.loglog(mean.index, mean.values, marker="o", ms=2, lw=1, color=COLORS.get(variant), label=variant)
        for v in marks[marks["experiment"] == exp]["value"].unique() if len(marks) else []:
            if v > 0 and math.isfinite(v):
                ax.axvline(v, color="grey", lw=0.6, ls=":")
        ax.set_title(exp)
        ax.set_xlabel("lag (log2 bins)")
        ax.set_ylabel(ylabel)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    legend_outside(fig, fontsize=6)  # one colour per variant in every panel
    save(fig, stem)


def d6_figure(curves: list[dict], summary: list[dict], stem: Path, scale: str) -> None:
    df, s = pd.DataFrame(curves), pd.DataFrame(summary)
    marks = s[s["quantity"].str.startswith("mark_lag")].groupby(["experiment", "quantity"], as_index=False)["value"]
    _lag_panels(
        df,
        "influence",
        "‖∂h_t/∂e_τ‖_F (Hutchinson VJP)",
        f"D6: trained influence vs lag ({scale}); dotted: median stylized-block / true-key lags",
        stem,
        marks.median(),
    )


def d8_figure(curves: list[dict], summary: list[dict], stem: Path, scale: str) -> None:
    df = pd.DataFrame(curves)
    final = df[df["stage"] == "final"].assign(measure="final")
    init = df[df["stage"] == "init"].assign(measure="init")
    exps = sorted(df["experiment"].unique())
    fig, axes = plt.subplots(1, len(exps), figsize=(4.6 * len(exps), 3.4), squeeze=False)
    for ax, exp in zip(axes[0], exps):
        for part, ls in ((init, "--"), (final, "-")):
            p = part[(part["experiment"] == exp) & (part["lag_lo"] >= 1)]
            for variant, g in p.groupby("variant", sort=False):
                mean = g.groupby("lag_mid")["mean"].mean()
                label = f"{variant} ({p['measure'].iloc[0]})"
                ax.loglog(mean.index, mean.values, ls=ls, lw=1, color=COLORS.get(variant), label=label)
        ax.set_title(exp)
        ax.set_xlabel("lag (log2 bins)")
        ax.set_ylabel("‖∂L/∂e_τ‖")
    fig.suptitle(f"D8: loss gradient vs lag at init (dashed) and final (solid) ({scale})", fontsize=9)
    fig.tight_layout()
    legend_outside(fig, fontsize=6)  # one colour per variant in every panel
    save(fig, stem)


def d7_figure(curves: list[dict], summary: list[dict], stem: Path, scale: str) -> None:
    """Four panels: Sessa's gamma histogram, H_t against log t (with the uniform line H = log t), the solve
    kernel and the Transformer's alpha[tau + l, tau] (log-log), Mamba2's accumulated decay (semi-log)."""
    df = pd.DataFrame(curves)
    fig, axes = plt.subplots(1, 4, figsize=(17, 3.4))
    panels = [
        ("gamma_hist", axes[0], "γ_t", "count", "linear"),
        ("entropy", axes[1], "log t", "H_t", "entropy"),
        ("solve_kernel", axes[2], "lag l", "kernel / α[τ+l, τ]", "loglog"),
        ("attention_diagonal", axes[2], "lag l", "kernel / α[τ+l, τ]", "loglog"),
        ("accumulated_decay", axes[3], "lag l", "exp(A Σ Δ)", "semilog"),
    ]
    for measure, ax, xlabel, ylabel, kind in panels:
        part = df[df["measure"] == measure] if len(df) else df
        for (exp, variant, layer), g in part.groupby(["experiment", "variant", "layer"], sort=False):
            mean = g.groupby("x")["value"].mean()
            x, y = mean.index.to_numpy(dtype=float), mean.to_numpy(dtype=float)
            label = f"{exp} {variant} L{layer}" + (" α_fwd" if measure == "attention_diagonal" else "")
            ls = "--" if exp == "e2" else "-"
            if kind == "entropy":
                ok = x >= 1
                ax.plot([math.log(v) for v in x[ok]], y[ok], ls=ls, lw=1, color=COLORS.get(variant), label=label)
            elif kind == "loglog":
                ok = x >= 1
                ax.loglog(x[ok], y[ok], ls=ls, lw=1, label=label)
            elif kind == "semilog":
                ax.semilogy(x, y, ls=ls, lw=1, label=label)
            else:
                ax.plot(x, y, ls=ls, lw=1, label=label)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
    xs = [0.0, math.log(max(2.0, float(df[df["measure"] == "entropy"]["x"].max() or 2)))] if len(df) else [0, 1]
    axes[1].plot(xs, xs, color="k", lw=0.6, ls=":", label="uniform: H = log t")
    titles = ["Sessa γ_t histogram", "Sessa feedback entropy", "solve kernel (Sessa), α_fwd (attention)"]
    for ax, t in zip(axes, [*titles, "Mamba2 accumulated decay"]):
        ax.set_title(t, fontsize=9)
    fig.suptitle(f"D7: realised routing of the trained models ({scale}); dashed: E2", fontsize=9)
    fig.tight_layout()
    for ax in axes:  # each panel its own series
        if ax.get_legend_handles_labels()[1]:
            legend_outside(ax, below=True, fontsize=5)
    save(fig, stem)
