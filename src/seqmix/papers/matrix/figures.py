"""The matrix paper's figures, each written beside the CSV it is drawn from (``report.plots.save_figure``).

- ``heatmap``: mixers x tasks, each cell coloured by its score normalised within the task (the best mixer
  of the task 1, the worst 0, whichever way the metric points; a task where every mixer scores the same,
  or with one mixer, is 1) and annotated with the score and its interval; a pair excluded by
  ``analysis.excluded`` or not run is hatched grey and labelled ``n/a``.
- ``influence_curves``: one log-log panel per task, the influence profile of every mixer at its chosen lr
  (mean over seeds; lags >= 1 with a positive value, since log axes cannot show lag 0), with the closed
  forms of families.py overlaid: rho^lag with the fitted rate for state-space mixers (dotted, the mixer's
  colour), 1/lag for attention (dash-dot, black, one per panel), lag^-p with the fitted exponent for Sessa
  (dashed, its colour). Each overlay starts at the mixer's (or, for 1/lag, the attention mixers' geometric
  mean) first plotted point.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from .families import ATTENTION, SESSA, SSM, family_of
from .inputs import excluded_pairs, influence_rows, score_setting
from .selection import at_chosen, scored
from .tables import NA, num


def _order(values) -> list:
    return list(dict.fromkeys(values))


def normalise(scores: pd.Series, higher_is_better: bool) -> pd.Series:
    """Scores of one task mapped to [0, 1]: 1 the best mixer, 0 the worst; NaN stays NaN; all equal -> 1."""
    s = scores.astype(float)
    ok = s[np.isfinite(s)]
    if ok.empty:
        return s
    best, worst = (ok.max(), ok.min()) if higher_is_better else (ok.min(), ok.max())
    if best == worst:
        return s.where(~np.isfinite(s), 1.0)
    return (s - worst) / (best - worst)


def heatmap_frame(spec: dict) -> pd.DataFrame:
    """Every (task, mixer) of the grid (tasks and mixers in the order first read, then the excluded ones):
    experiment, label, mixer, status (ok / no score / excluded / not run), score, lo, hi, normalised,
    reason (of an exclusion)."""
    _, sc, proto = scored(spec)
    excl = {(p["experiment"], p["variant"]): p["reason"] for p in excluded_pairs(spec)}
    tasks = _order([*sc["experiment"], *(e for e, _ in excl)])
    mixers = _order([*sc["mixer"], *(m for _, m in excl)])
    sc = sc.copy()
    sc["normalised"] = np.nan
    for _, g in sc.groupby("experiment", sort=False):
        sc.loc[g.index, "normalised"] = normalise(g["score"], bool(g["higher_is_better"].iloc[0]))
    have = {(r.experiment, r.mixer): r for r in sc.itertuples()}
    rows = []
    for e in tasks:
        label = score_setting(proto, e)["label"] if e in proto["scores"] else e
        for m in mixers:
            r = have.get((e, m))
            row = {"experiment": e, "label": label, "mixer": m, "score": math.nan, "lo": math.nan, "hi": math.nan}
            row |= {"normalised": math.nan, "reason": excl.get((e, m), "")}
            if r is not None:
                row |= {"score": r.score, "lo": r.lo, "hi": r.hi, "normalised": r.normalised}
                row["status"] = "ok" if np.isfinite(r.score) else "no score"
            else:
                row["status"] = "excluded" if (e, m) in excl else "not run"
            rows.append(row)
    return pd.DataFrame(rows)


def heatmap(spec: dict, out: Path) -> None:
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Rectangle

    from ...report.plots import save_figure

    df = heatmap_frame(spec)
    tasks, mixers = _order(df["experiment"]), _order(df["mixer"])
    labels = _order(df["label"]) if len(_order(df["label"])) == len(tasks) else tasks
    grid = df.pivot(index="mixer", columns="experiment", values="normalised").loc[mixers, tasks].to_numpy(float)
    fig, ax = plt.subplots(figsize=(2.0 + 1.25 * len(tasks), 1.2 + 0.55 * len(mixers)))
    cmap = plt.get_cmap("viridis").with_extremes(bad="lightgrey")
    im = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto")
    cells = {(r.experiment, r.mixer): r for r in df.itertuples()}
    for i, m in enumerate(mixers):
        for j, e in enumerate(tasks):
            r = cells[(e, m)]
            if r.status != "ok":
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor="lightgrey", hatch="///", edgecolor="grey"))
                ax.text(j, i, NA, ha="center", va="center", fontsize=7, color="black")
                continue
            color = "white" if r.normalised < 0.5 else "black"
            text = f"{num(r.score)}\n[{num(r.lo)}, {num(r.hi)}]"
            ax.text(j, i, text, ha="center", va="center", fontsize=6, color=color)
    ax.set_xticks(range(len(tasks)), labels, rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(len(mixers)), mixers, fontsize=8)
    ax.tick_params(length=0)
    fig.colorbar(im, ax=ax, fraction=0.05, pad=0.03).set_label("score within task (0 worst, 1 best)", fontsize=8)
    fig.tight_layout()
    na = Patch(facecolor="lightgrey", hatch="///", edgecolor="grey", label="n/a: excluded or not run")
    fig.legend(handles=[na], loc="upper center", bbox_to_anchor=(0.5, 0.0), fontsize=7, frameon=False)
    save_figure(fig, Path(out) / "heatmap", df)


def _anchor(curve: pd.DataFrame) -> tuple[float, float] | None:
    return (float(curve["lag"].iloc[0]), float(curve["value"].iloc[0])) if len(curve) else None


def _overlay(base: dict, curve: str, param: float, lags, values) -> list[dict]:
    return [base | {"curve": curve, "param": param, "lag": x, "value": y} for x, y in zip(lags, values)]


def curves_frame(spec: dict) -> tuple[pd.DataFrame, dict[str, str]]:
    """(the drawn curves, {experiment: label} of every task read). The curves are long: experiment, label,
    mixer, mixer_name, family, curve (measured, exponential, power, 1/lag), param (r or p of an overlay),
    seeds (averaged into a measured curve), lag, value."""
    cells, sc, proto = scored(spec)
    chosen = at_chosen(cells, sc)
    fits = chosen.groupby(["experiment", "mixer"], sort=False)[["exp_rate", "power"]].mean()
    infl = influence_rows(spec, sc[["experiment", "mixer", "lr"]])
    infl = infl[(infl["lag"] >= 1) & (infl["value"] > 0)]
    rows = []
    for e, g in sc.groupby("experiment", sort=False):
        label = score_setting(proto, e)["label"]
        att = []
        for r in g.itertuples():
            fam = family_of(r.mixer_name)
            d = infl[(infl["experiment"] == e) & (infl["mixer"] == r.mixer)]
            curve = d.groupby("lag", as_index=False).agg(value=("value", "mean"), seeds=("seed", "nunique"))
            base = {"experiment": e, "label": label, "mixer": r.mixer, "mixer_name": r.mixer_name, "family": fam}
            rows += [base | {"curve": "measured", "param": math.nan} | c for c in curve.to_dict("records")]
            a = _anchor(curve)
            if a is None:
                continue
            lags = curve["lag"].to_numpy(float)
            rate, power = fits.loc[(e, r.mixer)] if (e, r.mixer) in fits.index else (math.nan, math.nan)
            if fam == SSM and np.isfinite(rate):
                ref = a[1] * np.exp(-rate * (lags - a[0]))
                rows += _overlay(base, "exponential", rate, lags, ref)
            if fam == SESSA and np.isfinite(power):
                ref = a[1] * (lags / a[0]) ** (-power)
                rows += _overlay(base, "power", power, lags, ref)
            if fam == ATTENTION:
                att.append((a, lags))
        if att:
            l0 = min(a[0] for a, _ in att)
            scale = math.exp(np.mean([math.log(a[1] * a[0] / l0) for a, _ in att]))
            lags = np.unique(np.concatenate([x for _, x in att]))
            base = {"experiment": e, "label": label, "mixer": "", "mixer_name": "", "family": ATTENTION}
            rows += [base | {"curve": "1/lag", "param": math.nan, "lag": x, "value": scale * l0 / x} for x in lags]
    cols = ["experiment", "label", "mixer", "mixer_name", "family", "curve", "param", "seeds", "lag", "value"]
    labels = {e: score_setting(proto, e)["label"] for e in _order(sc["experiment"])}
    df = pd.DataFrame(rows, columns=cols)
    df["seeds"] = df["seeds"].astype("Int64")  # empty for the overlays
    return df, labels


STYLE = {"measured": "-", "exponential": ":", "power": "--", "1/lag": "-."}


def influence_curves(spec: dict, out: Path) -> None:
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.ticker import LogLocator, NullFormatter

    from ...report.plots import save_figure

    df, labels = curves_frame(spec)
    tasks = list(labels)
    mixers = [m for m in _order(df["mixer"]) if m]
    palette = plt.get_cmap("tab10" if len(mixers) <= 10 else "tab20")
    color = {m: palette(i % palette.N) for i, m in enumerate(mixers)}
    ncols = min(3, max(len(tasks), 1))
    nrows = max(math.ceil(len(tasks) / ncols), 1)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.6 * ncols, 3.0 * nrows), squeeze=False)
    for k, ax in enumerate(axes.flat):
        if k >= len(tasks):
            ax.set_visible(False)
            continue
        d = df[df["experiment"] == tasks[k]]
        for (m, curve), c in d.groupby(["mixer", "curve"], sort=False):
            lw = 1.4 if curve == "measured" else 1.0
            ax.plot(c["lag"], c["value"], STYLE[curve], color=color.get(m, "black"), lw=lw)
        meas = d[d["curve"] == "measured"]["value"]
        if len(meas):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_ylim(meas.min() / 3, meas.max() * 3)  # the overlays may fall far below the data
            for axis, n in ((ax.xaxis, 4), (ax.yaxis, 4)):
                axis.set_major_locator(LogLocator(base=10, numticks=n))
                axis.set_minor_formatter(NullFormatter())
        else:
            ax.text(0.5, 0.5, "no influence profile", ha="center", va="center", transform=ax.transAxes, fontsize=8)
        ax.set_title(labels[tasks[k]], fontsize=9)
        ax.tick_params(labelsize=7)
        ax.set_xlabel("lag", fontsize=8)
        if k % ncols == 0:
            ax.set_ylabel("influence", fontsize=8)
    handles = [Line2D([], [], color=color[m], lw=1.4, label=m) for m in mixers]
    handles += [
        Line2D([], [], color="grey", ls=STYLE["exponential"], label=r"$\rho^{\mathrm{lag}}$, fitted rate (SSM)"),
        Line2D([], [], color="black", ls=STYLE["1/lag"], label=r"$1/\mathrm{lag}$ (attention)"),
        Line2D([], [], color="grey", ls=STYLE["power"], label=r"$\mathrm{lag}^{-p}$, fitted p (Sessa)"),
    ]
    fig.legend(handles=handles, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=7, frameon=False)
    fig.tight_layout()
    save_figure(fig, Path(out) / "influence_curves", df)
