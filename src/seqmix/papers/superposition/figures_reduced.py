"""Figures of the superposition paper's reduced models (no training of the full model), drawn from the
``theory`` artefact's data files: E3 (|A| in the Möbius scalar model), E6 (gradient law), E7 (Conjecture D)
and the E11 selectivity ladder. One artefact per figure; each writes <name>.png, .pdf and .csv into ``out``."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ...report.plots import legend_outside, paper_values, reported_range, save_figure
from .inputs import artefact_file, reported


def figure_e3_mobius(spec: dict, out: Path) -> None:
    """E3: |A| = |1 + ηa| against Adam step in the reduced Möbius model (spec init red, generic inits grey),
    ReLU and linear channels, beside the paper's |A| after its run (claims e3-<form>-spec-init-absA)."""
    tr = pd.read_csv(artefact_file(spec, "theory", "mobius_trace.csv"))
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.3), sharey=True)
    for ax, form in zip(axes, ("relu", "linear")):
        for init, g in tr[tr.form == form].groupby("init"):
            spec_init = init == "spec-init"
            ax.semilogy(
                g["step"],
                g["A"].abs().clip(lower=1e-17),
                color="tab:red" if spec_init else "tab:gray",
                lw=1.6 if spec_init else 0.8,
                label="spec-suggested init (labelled)" if spec_init else None,
            )
        ax.set_title(f"reduced Möbius model, {form} channels", fontsize=9)
        ax.set_xlabel("Adam step")
    for ax, form in zip(axes, ("relu", "linear")):  # after both panels' data: the shared y range is final
        value = reported(spec, f"e3-{form}-spec-init-absA")
        paper_values(ax, band=reported_range(value), label=f"paper: |A| {value} (§4.3)")
    axes[0].set_ylabel("|A| = |1 + ηa|")
    fig.tight_layout()
    legend_outside(fig)
    save_figure(fig, Path(out) / "figure_e3_mobius", tr)


def figure_e6_gradlaw(spec: dict, out: Path) -> None:
    """E6: log10 R_c against (L - 1 - c) log10 np at uniform and ideal attention, with Prop. 7's slope -1/2."""
    gl = pd.read_csv(artefact_file(spec, "theory", "gradlaw.csv"))
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.3), sharey=True)
    for ax, point in zip(axes, ("uniform", "ideal")):
        d = gl[gl.point == point]
        for (npp, L), g in d.groupby(["np", "L"]):
            ax.plot(g["x"], g["log10_R"], "o", ms=3, label=f"np={npp:g}, L={L}")
        xs = np.linspace(0, d["x"].max(), 10)
        ax.plot(xs, -0.5 * xs, "k--", lw=1, label="Prop. 7 slope −1/2")
        ax.set_title(f"{point} attention", fontsize=9)
        ax.set_xlabel("(L − 1 − c) log10(np)")
    axes[0].set_ylabel("log10 R_c = log10 |∂L_e2e/∂β_c| / |∂L_c/∂β_c|")
    fig.tight_layout()
    legend_outside(fig)
    save_figure(fig, Path(out) / "figure_e6_gradlaw", gl)


def figure_e7_conjd(spec: dict, out: Path) -> None:
    """E7: Conjecture D's R(γ) = ||∇_off|| / ||∇_diag|| per layer against γ (log-log); dotted at R = 1."""
    cd = pd.read_csv(artefact_file(spec, "theory", "conjd.csv"))
    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    for c, g in cd.groupby("layer"):
        ax.loglog(g["gamma"], g["R"], ".", ms=3, label=f"layer {c}")
    ax.axhline(1, color="k", ls=":", lw=0.8)
    ax.set_xlabel("γ")
    ax.set_ylabel("R(γ) = ||∇_off|| / ||∇_diag||")
    legend_outside(ax)
    ax.set_title(f"E7 Conjecture D ({cd['point'].nunique()} points)", fontsize=9)
    save_figure(fig, Path(out) / "figure_e7_conjd", cd)


def figure_e11_beta_ladder(spec: dict, out: Path) -> None:
    """E11 (no paper numbers): selectivity S_c and cos(z_{c+1}) against the shared β on the reduced model;
    dotted at S = 0.9 (β*_c, Lemma 20: grows with c)."""
    lad = pd.read_csv(artefact_file(spec, "theory", "ladder.csv"))
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.3))
    for c, g in lad.groupby("c"):
        axes[0].semilogx(g["beta"], g["S"], "-o", ms=2, label=f"layer {c} (k_c ≈ {g['k_c'].iloc[0]:.2f})")
        axes[1].semilogx(g["beta"], g["cos"], "-o", ms=2, label=f"layer {c} (k_c ≈ {g['k_c'].iloc[0]:.2f})")
    axes[0].axhline(0.9, color="k", ls=":", lw=0.8)
    axes[0].set_ylabel(r"selectivity $S_c$ (mass on reached sources)")
    axes[1].set_ylabel(r"$\cos(z_{c+1}, z^*_{c+1})$")
    for ax in axes:
        ax.set_xlabel("β (shared by every layer)")
    fig.tight_layout()
    legend_outside(fig)
    fig.suptitle("E11 selectivity ladder (reduced model, U = I, α_c = α*_c; Lemma 20: β*_c grows with c)", fontsize=9)
    save_figure(fig, Path(out) / "figure_e11_beta_ladder", lad)
