"""Figures of the superposition paper drawn from training runs: Figures 1-3, E4 (S_n diagonalisation) and E8
(Möbius A_c during training). One artefact per figure; each writes <name>.png, .pdf and the .csv it is drawn
from into ``out``. Curves are the mean ± std over seeds of the per-evaluation diagnostics in each leaf's
history.json."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from ...report.plots import band, legend_outside, paper_values, reported_range, save_figure
from .inputs import MODE_COLOR, MODE_LABEL, MODES, histories, reported, summary, task


def _depth_and_np(spec: dict) -> tuple[int, float]:
    """E1's cascade depth L and mean out-degree np = n p (resolved config of the L_sup variant)."""
    t = task(spec, "e1", "sup")
    return int(t["L"]), float(t["n"]) * float(t["p"])


def _curves(g, **keys) -> list[dict]:
    """Rows of a drawn band curve (step, mean, std) tagged with ``keys``."""
    return [{**keys, "step": int(s), "mean": a, "std": b} for s, a, b in zip(g["step"], g["mean"], g["std"])]


def _paper(spec: dict, claim_id: str) -> tuple[float | None, float | None] | None:
    """The range a claim's reported value states (``reported_range``), None when the spec lists no such claim
    (a slot the paper does not report)."""
    return reported_range(reported(spec, claim_id)) if claim_id in (spec.get("reported") or {}) else None


def figure2(spec: dict, out: Path) -> None:
    """Figure 2: r(c) = cos_obs / cos_theory (Lemma 18 at the trained α_eff) against step, per slot and loss;
    the paper's band r >= 1 - 1/(2 k_{L-1}) (claims fig2-band-sup-z<c>) and its e2e stall (claims
    fig2-e2e-stall-e2e_cos-z<c>); dotted green: the band's edge at our n p, k_{L-1} = np^(L-1)."""
    h1 = histories(spec, "e1")
    L, np_ = _depth_and_np(spec)
    lower = 1 - 1 / (2 * np_ ** (L - 1))
    fig, axes = plt.subplots(1, L, figsize=(11, 3.3), sharey=True)
    rows = []
    for c in range(1, L + 1):
        ax = axes[c - 1]
        ax.axhline(lower, color="tab:green", lw=1, ls=":", label="ours: 1 − 1/(2k_{L−1}) at our n p")
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
    for c, ax in enumerate(axes, start=1):  # after every panel's data: the band runs to the shared top
        if (band_ := _paper(spec, f"fig2-band-sup-z{c}")) is not None:
            paper_values(ax, band=band_, label=f"paper: band r ≥ {band_[0]:g} (Figure 2)")
        if (stall := _paper(spec, f"fig2-e2e-stall-e2e_cos-z{c}")) is not None:
            paper_values(ax, level=stall[0], label=f"paper: e2e stalls at r ≈ {stall[0]:g}")
    axes[0].set_ylabel("r(c) = cos_obs / cos_theory\n(Lemma 18 at trained α_eff)")
    fig.suptitle(
        f"Figure 2: cascade attractor trajectory (scale {spec['scale']}; our band edge 1 − 1/(2k_{L - 1}) = "
        f"{lower:.3f})",
        fontsize=9,
    )
    fig.tight_layout()
    legend_outside(fig)
    save_figure(fig, Path(out) / "figure2", rows)


def figure3(spec: dict, out: Path) -> None:
    """Figure 3: (a) final cos(z_c, z_c*) per slot and loss with our single-step bound as grey ticks, the
    paper's Table 2 cosines (claims table2-<mode>-z<c>) and bound row (table2-bound-z<c>); (b) r_c with the
    caption's e2e limit (fig3-e2e-r-<mode>-z<c>)."""
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
        a.scatter(xs, bnd, marker="_", color="0.45", s=80, zorder=3, label="ours: single-step bound")
        b.bar(xs, r, w, color=MODE_COLOR[m])
        printed = [(x, _paper(spec, f"table2-{m}-z{c}")) for x, c in zip(xs, slots)]
        printed = [(x, p[0]) for x, p in printed if p is not None]
        if printed:
            paper_values(a, *zip(*printed), label="paper: Table 2 cosine")
        for x, c in zip(xs, slots):
            if (limit := _paper(spec, f"fig3-e2e-r-{m}-z{c}")) is not None:
                paper_values(b, level=limit[1], span=(x - w / 2, x + w / 2), label=f"paper: e2e r_c ≤ {limit[1]:g}")
        rows += [
            {"mode": m, "slot": c, "cos_mean": cos[c - 1], "cos_std": err[c - 1], "bound": bnd[c - 1], "r": r[c - 1]}
            for c in slots
        ]
    for c in slots:
        if (bound := _paper(spec, f"table2-bound-z{c}")) is not None:
            paper_values(a, level=bound[0], span=(c - 0.45, c + 0.45), label="paper: single-step bound (Table 2)")
    for ax in (a, b):
        ax.set_xticks(list(slots))
        ax.set_xlabel("slot c")
    a.set_ylabel("cos(z_c, z_c*)  (ticks: single-step bound)")
    b.set_ylabel("r_c = cos_obs / cos_theory")
    b.axhline(1, color="k", lw=0.8, ls=":")
    fig.suptitle(f"Figure 3: inner-product fingerprint (scale {spec['scale']})", fontsize=9)
    fig.tight_layout()
    legend_outside(fig)
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
    fig.suptitle("Figure 1 (from data): diagonalisation → Möbius collapse → cascade", fontsize=9)
    fig.tight_layout()
    for ax in axes:  # one column of panels: each legend beside its panel
        legend_outside(ax, fontsize=6)
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
    fig.tight_layout()
    legend_outside(fig)
    save_figure(fig, Path(out) / "figure_e8_mobius_A", rows)


def figure_e4_diagonalisation(spec: dict, out: Path) -> None:
    """E4: S_n diagonalisation of U^T W_QK U against step (L_sup, default and small-QK init); dotted lines at
    the diagonal limits n - 1 (ratios) and -1/n (μ/γ) with n of E4's config; the paper's §4.4 values (claims
    e4-ratio-qk_r_signed_mean, e4-ratio-qk_r_abs_mean, e4-mu-over-gamma)."""
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
    claims = ("e4-ratio-qk_r_signed_mean", "e4-ratio-qk_r_abs_mean", "e4-mu-over-gamma")
    for ax, claim in zip(axes, claims):
        lo, hi = reported_range(reported(spec, claim))
        # a range narrower than a line (49.0 ± 0.02 on an axis from 0) is drawn as its centre
        if hi - lo > 0.02 * abs(float(np.diff(ax.get_ylim())[0])):
            paper_values(ax, band=(lo, hi), label=f"paper: {lo:g} to {hi:g} (§4.4)")
        else:
            paper_values(ax, level=(lo + hi) / 2, label=f"paper: {(lo + hi) / 2:g} ± {(hi - lo) / 2:g} (§4.4)")
    for ax, t in zip(axes, ("signed ratio |mean diag|/|mean off|", "entrywise ratio mean|diag|/mean|off|", "μ/γ")):
        ax.set_title(t, fontsize=8)
        ax.set_xlabel("step")
    fig.suptitle(
        f"E4: S_n diagonalisation of U^T W_QK U (L = {t4['L']}, L_sup; dotted: n − 1 = {n - 1}, −1/n)", fontsize=9
    )
    fig.tight_layout()
    legend_outside(fig)
    save_figure(fig, Path(out) / "figure_e4_diagonalisation", rows)
