"""The rotations paper's theory checks T1-T13 and the stylized simulations E6 (rotations spec §4, E6).

- ``theory_checks(spec, out)`` -> ``out/summary.csv``: one row per measured quantity (``check, quantity, case,
  value, predicted, relation, tolerance``; see ``_rows``), for every check T1-T13 and for E6's far-mass table.
  Settings: the ``theory_checks`` slice of the paper's ``analysis:`` block, over ``settings.TINY``.
- ``figure_e6(spec, out)`` -> ``out/figure_e6.{png,pdf,csv}``: (a) the first-harmonic decay and its mixing
  window, (b) far mass vs context length for the four transports with Prop 3's lower bound and the ALiBi
  contrast, (c) the same-path value-side transport beside its bound R_same and identity coherence rho_D.
  Settings: the ``figure_e6`` slice, over ``settings.FIGURE_TINY``.

Both need nothing trained; every draw is seeded (``seed``), so a re-run writes the same numbers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...report.tables import write_csv
from . import _checks_mixing as cm
from . import _checks_scores as cs
from . import _checks_values as cv
from ._rows import rng_for, row
from .settings import FIGURE_TINY, TINY, merged
from .theory import mixing as tm
from .theory import scores as ts
from .theory import stylized as st
from .theory import values as tv

CHECKS = {
    "t1": cm.check_t1, "t2": cm.check_t2, "t3": cs.check_t3, "t4": cs.check_t4, "t5": cs.check_t5,
    "t6": cs.check_t6, "t7": cv.check_t7, "t8": cv.check_t8, "t9": cv.check_t9, "t10": cv.check_t10,
    "t11": cv.check_t11, "t12": cs.check_t12, "t13": cm.check_t13,
}  # fmt: skip


def _settings(spec: dict, key: str, defaults: dict) -> dict:
    return merged(defaults, (spec.get("analysis") or {}).get(key), f"analysis.{key}")


def e6_rows(s: dict, seed: int) -> list[dict]:
    """E6's table (spec E6): rho_D and max_b |t_b| per transport, lam and L, Prop 3's bound beside rho_D, and the
    ALiBi contrast (rho_D with a -m k bias grows by at most e^{-m L0} / (1 - e^{-m}) beyond the first L0)."""
    rows = []
    table = st.far_mass_table(s["lams"], s["lengths"], s["blocks"], s["window"], s["draws"], seed)
    for r in table:
        p = dict(transport=r["transport"], lam=r["lam"], L=r["L"])
        rows.append(row("E6", "rho_D", r["rho_D"], r["lower_bound"], ">=", "Prop 3 with K = w near keys", **p))
        rows.append(row("E6", "max_t", r["max_t"], r["rho_D"], "<=", "|t_b| <= rho_D always", **p))
    m, w = s["alibi_slope"], s["window"]
    # keys beyond L0 add at most sum_{k >= L0} e^{lam - m k} / e^{lam} of mass (the query's own logit is lam)
    contrast = st.alibi_contrast(s["lams"], s["lengths"], m, s["blocks"], w, seed)
    for lam in s["lams"]:
        res = [r for r in contrast if r["lam"] == lam]
        l0, rho0 = res[0]["L"], res[0]["rho_D"]
        cap = float(np.exp(-m * l0) / (1 - np.exp(-m)))
        for r in res:
            rows.append(row("E6", "alibi_rho_D", r["rho_D"], relation="", lam=lam, L=r["L"], slope=m))
            if r["L"] > l0:
                rows.append(row("E6", "alibi_rho_D_growth", r["rho_D"] - rho0, cap, "<=", f"tail beyond L = {l0}",
                                lam=lam, L=r["L"], slope=m))  # fmt: skip
    return rows


def theory_checks(spec: dict, out: Path) -> None:
    s = _settings(spec, "theory_checks", TINY)
    rows = []
    for key, check in CHECKS.items():
        rows += check(s[key], s["seed"])
    rows += e6_rows(s["e6"], s["seed"])
    write_csv(Path(out) / "summary.csv", rows, checksum=True)  # the claims verify it


def _panel_harmonic(ax, s: dict) -> list[dict]:
    data, n = [], np.arange(1, s["harmonic_n_max"] + 1)
    for i, a in enumerate(s["harmonic_a"]):
        emp = tm.harmonic_mc(a, [1], n.size, s["harmonic_samples"], rng_for(s["seed"], 200, i))[0]
        closed = tm.sinc_beta(a) ** n
        w = float(tm.mixing_window(tm.sinc_beta(a), s["eps"]))
        (line,) = ax.semilogy(n, closed, lw=1.2, label=f"a = {a:g}: (sin a / a)^n, w = {w:g}")
        ax.semilogy(n, np.maximum(emp, 1e-6), ".", ms=3, color=line.get_color())
        if w <= n[-1]:
            ax.axvline(w, color=line.get_color(), ls=":", lw=0.8)
        data += [{"panel": "a", "series": f"closed a={a:g}", "x": int(k), "y": float(c)} for k, c in zip(n, closed)]
        data += [{"panel": "a", "series": f"monte_carlo a={a:g}", "x": int(k), "y": float(e)} for k, e in zip(n, emp)]
    ax.axhline(s["eps"], color="grey", lw=0.8)
    ax.axhline(1 / np.sqrt(s["harmonic_samples"]), color="grey", lw=0.8, ls=":")  # the Monte Carlo floor
    ax.set_ylim(0.3 / np.sqrt(s["harmonic_samples"]), 1.5)
    ax.set(xlabel="route length n", ylabel="|E exp(i Theta_n)|", title=f"(a) mixing window (eps = {s['eps']:g})")
    return data


def _panel_far_mass(ax, s: dict) -> list[dict]:
    L = s["lengths"]
    table = st.far_mass_table([s["lam"]], L, s["blocks"], s["window"], s["draws"], s["seed"])
    data = []
    for tr in st.TRANSPORTS:
        ys = [r["rho_D"] for r in table if r["transport"] == tr]
        ax.loglog(L, np.maximum(ys, 1e-12), "o-", ms=3, label=tr)
        data += [{"panel": "b", "series": tr, "x": x, "y": y} for x, y in zip(L, ys)]
    bound = [ts.far_mass_lower_bound(x - s["window"], s["window"], s["lam"]) for x in L]
    alibi = [
        r["rho_D"] for r in st.alibi_contrast([s["lam"]], L, s["alibi_slope"], s["blocks"], s["window"], s["seed"])
    ]
    ax.loglog(L, bound, "k--", lw=1, label="Prop 3 lower bound (K = w)")
    ax.loglog(
        L, np.maximum(alibi, 1e-12), "s:", ms=3, color="grey", label=f"random_pi + ALiBi m = {s['alibi_slope']:g}"
    )
    data += [{"panel": "b", "series": "lower_bound", "x": x, "y": y} for x, y in zip(L, bound)]
    data += [{"panel": "b", "series": "alibi", "x": x, "y": y} for x, y in zip(L, alibi)]
    ax.set(
        xlabel="context length L", ylabel="far mass rho_D", title=f"(b) far mass, lam = {s['lam']:g}, w = {s['window']}"
    )
    return data


def _panel_value_side(ax, s: dict) -> list[dict]:
    sp, L = s["same_path"], s["lengths"]
    half, B, rng = tv.half_width_for_beta(sp["beta"]), s["blocks"], rng_for(s["seed"], 201)
    series: dict[str, list[float]] = {"t_max": [], "R_same": [], "rho_D": []}
    for x in L:
        trials = [tv.same_path_trial(B, x, sp["window"], half, s["lam"], rng) for _ in range(sp["trials"])]
        series["t_max"].append(float(np.mean([t["t_max"] for t in trials])))
        series["rho_D"].append(float(np.mean([t["rho"] for t in trials])))
        bounds = [tv.rsame(sp["beta"], sp["window"], t["rho"], t["a"], s["lam"], B, sp["eta"]) for t in trials]
        series["R_same"].append(float(np.mean(bounds)))
    labels = {"t_max": "max_b |t_b| (same path)", "R_same": "bound R_same (eq. 29)", "rho_D": "identity: rho_D"}
    data = []
    for k, ys in series.items():
        ax.loglog(L, ys, "o-" if k == "t_max" else "--", ms=3, label=labels[k])
        data += [{"panel": "c", "series": k, "x": x, "y": y} for x, y in zip(L, ys)]
    ax.set(xlabel="context length L", ylabel="far value transport",
           title=f"(c) value side, beta = {sp['beta']:g}, w = {sp['window']}")  # fmt: skip
    return data


def figure_e6(spec: dict, out: Path) -> None:
    import matplotlib.pyplot as plt

    from ...report.plots import legend_outside, save_figure

    s = _settings(spec, "figure_e6", FIGURE_TINY)
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    data = _panel_harmonic(axes[0], s) + _panel_far_mass(axes[1], s) + _panel_value_side(axes[2], s)
    fig.tight_layout()
    for ax in axes:
        legend_outside(ax, below=True, fontsize=6)
    save_figure(fig, Path(out) / "figure_e6", data)
