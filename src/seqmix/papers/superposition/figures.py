"""Figures of the superposition paper drawn from training runs: Figures 1-3, E4 (S_n diagonalisation) and E8
(Möbius A_c during training). One artefact per figure; each writes <name>.png, .pdf and the .csv it is drawn
from into ``out``. Curves are the mean ± std over seeds of the per-evaluation diagnostics in each leaf's
history.json."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...report.plots import band, plt, save_figure
from .inputs import MODE_COLOR, MODE_LABEL, MODES, histories, summary, task


def _depth_and_np(spec: dict) -> tuple[int, float]:
    """E1's cascade depth L and mean out-degree np = n p (resolved config of the L_sup variant)."""
    t = task(spec, "e1", "sup")
    return int(t["L"]), float(t["n"]) * float(t["p"])


def _curves(g, **keys) -> list[dict]:
    """Rows of a drawn band curve (step, mean, std) tagged with ``keys``."""
    return [{**keys, "step": int(s), "mean": a, "std": b} for s, a, b in zip(g["step"], g["mean"], g["std"])]


def figure2(spec: dict, out: Path) -> None:
    """Figure 2: r(c) = cos_obs / cos_theory (Lemma 18 at the trained α_eff) against step, per slot and loss;
    the shaded band r >= 1 - 1/(2 k_{L-1}) with k_{L-1} = np^(L-1)."""
    h1 = histories(spec, "e1")
    L, np_ = _depth_and_np(spec)
    lower = 1 - 1 / (2 * np_ ** (L - 1))
    fig, axes = plt.subplots(1, L, figsize=(11, 3.3), sharey=True)
    rows = []
    for c in range(1, L + 1):
        ax = axes[c - 1]
        ax.axhspan(lower, 1.2, color="tab:green", alpha=0.08, lw=0)
        ax.axhline(1.0, color="k", lw=0.8, ls=":")
        for m in MODES:
            df = h1[h1.variant == m] if len(h1) else h1
            if df.empty:
                continue
            g = band(ax, df, f"r_z{c}", MODE_COLOR[m], MODE_LABEL[m])
            rows += [
                {"slot": c, "mode": m, "step": r["step"], "r_mean": r["mean"], "r_std": r["std"]} for r in _curves(g)
            ]
        ax.set_title(f"c = {c}", fontsize=9)
        ax.set_xlabel("step")
    axes[0].set_ylabel("r(c) = cos_obs / cos_theory (Lemma 18 at trained α_eff)")
    axes[0].legend(fontsize=6)
    fig.suptitle(
        f"Figure 2: cascade attractor trajectory (scale {spec['scale']}; band r ≥ 1 − 1/(2k_{L - 1}) = {lower:.3f})",
        fontsize=9,
    )
    save_figure(fig, Path(out) / "figure2", rows)


def figure3(spec: dict, out: Path) -> None:
    """Figure 3: (a) final cos(z_c, z_c*) per slot and loss with the single-step bound as ticks; (b) r_c."""
    e1 = summary(spec, "e1")
    L, _ = _depth_and_np(spec)
    slots = range(1, L + 1)
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.4))
    w = 0.8 / len(MODES)
    rows = []
    for i, m in enumerate(MODES):
        df = e1[e1.variant == m]
        if df.empty:
            continue
        xs = np.arange(1, L + 1) + (i - len(MODES) / 2 + 0.5) * w
        cos = [df[f"cos_z{c}"].mean() for c in slots]
        err = [df[f"cos_z{c}"].std() for c in slots]
        bnd = [df[f"cos_theory_l{c - 1}"].mean() for c in slots]
        r = [df[f"r_z{c}"].mean() for c in slots]
        a.bar(xs, cos, w, yerr=err, color=MODE_COLOR[m], label=MODE_LABEL[m])
        a.scatter(xs, bnd, marker="_", color="k", s=80, zorder=3)
        b.bar(xs, r, w, color=MODE_COLOR[m])
        rows += [
            {"mode": m, "slot": c, "cos_mean": cos[c - 1], "cos_std": err[c - 1], "bound": bnd[c - 1], "r": r[c - 1]}
            for c in slots
        ]
    for ax in (a, b):
        ax.set_xticks(list(slots))
        ax.set_xlabel("slot c")
    a.set_ylabel("cos(z_c, z_c*)  (ticks: single-step bound)")
    b.set_ylabel("r_c = cos_obs / cos_theory")
    b.axhline(1, color="k", lw=0.8, ls=":")
    a.legend(fontsize=6)
    fig.suptitle(f"Figure 3: inner-product fingerprint (scale {spec['scale']})", fontsize=9)
    save_figure(fig, Path(out) / "figure3", rows)


def figure1(spec: dict, out: Path) -> None:
    """Figure 1 from data: W^emb off-manifold norm, |A_c| and cos(z_c) against step for E1's L_sup run (E4's
    4-layer default run dashed): diagonalisation -> Möbius collapse -> cascade."""
    h1, h4 = histories(spec, "e1"), histories(spec, "e4")
    L, _ = _depth_and_np(spec)
    fig, axes = plt.subplots(3, 1, figsize=(6, 7.5), sharex=True)
    rows = []
    sup = h1[h1.variant == "sup"]
    for c in range(L):
        col = plt.cm.viridis(c / L)
        g1 = band(axes[0], sup, f"qk_offmanifold_l{c}", col, f"layer {c}: ||M_⊥||/||M|| (E1 sup)")
        g2 = band(axes[1], sup.assign(**{f"absA_l{c}": sup[f"A_l{c}"].abs()}), f"absA_l{c}", col, f"layer {c}")
        g3 = band(axes[2], sup, f"cos_z{c + 1}", col, f"z_{c + 1}")
        rows += [
            {"step": int(s), "layer": c, "qk_offmanifold": x, "absA": y, "cos": zz}
            for s, x, y, zz in zip(g1["step"], g1["mean"], g2["mean"], g3["mean"])
        ]
    d4 = h4[h4.variant == "default"] if len(h4) else h4
    if not d4.empty:
        band(axes[0], d4, "qk_offmanifold_l0", "tab:gray", "E4 default run, layer 0", ls="--")
    axes[0].set_ylabel("W^emb off-manifold")
    axes[1].set_ylabel("|A_c| (Möbius)")
    axes[2].set_ylabel("cos(z_c, z_c*)")
    axes[2].set_xlabel("step")
    for ax in axes:
        ax.legend(fontsize=6)
    fig.suptitle("Figure 1 (from data): diagonalisation → Möbius collapse → cascade", fontsize=9)
    save_figure(fig, Path(out) / "figure1", rows)


def figure_e8_mobius_A(spec: dict, out: Path) -> None:
    """E8: the Möbius A_c (slope of the post- on the pre-MLP node amplitude) during training, every loss."""
    h1 = histories(spec, "e1")
    L, _ = _depth_and_np(spec)
    fig, axes = plt.subplots(1, L, figsize=(11, 3.2), sharey=True)
    rows = []
    for c in range(L):
        for m in MODES:
            df = h1[h1.variant == m] if len(h1) else h1
            if df.empty:
                continue
            g = band(axes[c], df, f"A_l{c}", MODE_COLOR[m], MODE_LABEL[m])
            rows += [
                {"layer": c, "mode": m, "step": r["step"], "A_mean": r["mean"], "A_std": r["std"]} for r in _curves(g)
            ]
        axes[c].axhline(0, color="k", lw=0.8, ls=":")
        axes[c].set_title(f"layer {c}", fontsize=9)
        axes[c].set_xlabel("step")
    axes[0].set_ylabel("A_c (slope of post- vs pre-MLP amplitude)")
    axes[0].legend(fontsize=6)
    save_figure(fig, Path(out) / "figure_e8_mobius_A", rows)


def figure_e4_diagonalisation(spec: dict, out: Path) -> None:
    """E4: S_n diagonalisation of U^T W_QK U against step (L_sup, default and small-QK init); dotted lines at
    the diagonal limits n - 1 (ratios) and -1/n (μ/γ) with n of E4's config."""
    h4 = histories(spec, "e4")
    t4 = task(spec, "e4", "default")
    n = int(t4["n"])
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.2))
    rows = []
    for v, ls, color in (("default", "-", "tab:blue"), ("small_qk", "--", "tab:red")):
        df = h4[h4.variant == v] if len(h4) else h4
        if df.empty:
            continue
        for i, key in enumerate(("qk_r_signed_mean", "qk_r_abs_mean", "qk_mu_over_gamma_mean")):
            g = band(axes[i], df, key, color, v, ls=ls)
            rows += _curves(g, variant=v, metric=key)
    for ax, level in zip(axes, (n - 1, n - 1, -1 / n)):
        ax.axhline(level, color="k", ls=":", lw=0.8)
    for ax, t in zip(axes, ("signed ratio |mean diag|/|mean off|", "entrywise ratio mean|diag|/mean|off|", "μ/γ")):
        ax.set_title(t, fontsize=8)
        ax.set_xlabel("step")
        ax.legend(fontsize=6)
    fig.suptitle(
        f"E4: S_n diagonalisation of U^T W_QK U (L = {t4['L']}, L_sup; dotted: n − 1 = {n - 1}, −1/n)", fontsize=9
    )
    save_figure(fig, Path(out) / "figure_e4_diagonalisation", rows)
