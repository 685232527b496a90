"""Figure 4 (Exp. II): ||dy_{T-1}/dx_0|| vs T at initialisation, linear SSM vs causal multi-head attention,
in three panels: (a) the paper's figure on its grid, (b) attention's power law on the extended grid,
(c) the A = rho Q ablation against attention, with the crossing T."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from ...report.stats import crossing, geomean_by, loglinear_fit
from ...report.tables import write_csv

EXP2_COLORS = {"ssm": "tab:red", "attn": "tab:blue"}  # the paper's colours
ABLATION_COLORS = ["tab:orange", "tab:brown", "tab:pink"]
WOWV_LABEL = r"$\|W_O W_V\|_F\, /\, T$"


def _band(ax, s: pd.DataFrame, color: str, label: str, ls: str = "-") -> None:
    """The geometric mean over seeds x draws with a +-1 std band in log10."""
    ax.plot(s["T"], s["geomean"], ls, marker="o", ms=3.5, color=color, label=label)
    ax.fill_between(
        s["T"],
        10 ** (np.log10(s["geomean"]) - s["log10_std"]),
        10 ** (np.log10(s["geomean"]) + s["log10_std"]),
        color=color,
        alpha=0.2,
        lw=0,
    )


def _style(ax, title: str, logx: bool = False) -> None:
    if logx:
        ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("sequence length T")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3, which="both", lw=0.4)


def _panel_paper(ax, df: pd.DataFrame, series: dict, grid: list, wowv: pd.Series) -> None:
    """(a) the paper's Figure 4: default grid, semi-log, with the log-linear fit of the SSM against ln rho(A)."""
    ssm, attn = (series[v][series[v]["T"].isin(grid)] for v in ("ssm", "attn"))
    _band(ax, ssm, EXP2_COLORS["ssm"], "linear SSM (PyTorch init)")
    _band(ax, attn, EXP2_COLORS["attn"], "multi-head attention (4 heads)")
    slope, icpt, r2 = loglinear_fit(ssm["T"].to_numpy(), ssm["geomean"].to_numpy(), base=math.e)
    ln_rho = float(np.log(df[df.variant == "ssm"]["rho"]).mean())
    Tg = np.array(grid, dtype=float)
    ax.plot(
        Tg,
        np.exp(icpt + slope * Tg),
        "--",
        color=EXP2_COLORS["ssm"],
        lw=1,
        label=f"fit: slope {slope:.3f}/step (R² {r2:.4f}); " + r"$\ln\rho(A)$" + f" = {ln_rho:.3f}",
    )
    ax.plot(Tg, wowv.reindex(grid).to_numpy(), ":", color=EXP2_COLORS["attn"], lw=1, label=WOWV_LABEL)
    ax.set_ylabel(r"$\|\nabla_{x_0}\, y_{T-1}\|_F$")
    n_seeds = df["seed"].nunique()
    draws = int(df.groupby(["variant", "seed", "T"]).size().max())
    _style(ax, f"Figure 4: at initialisation (d = 64; {n_seeds} seed{'s' * (n_seeds > 1)} × {draws} draws)")


def _panel_power_law(ax, attn: pd.DataFrame, wowv: pd.Series, T_min: float) -> None:
    """(b) extension: attention on the extended grid, log-log, against 1/T."""
    _band(ax, attn, EXP2_COLORS["attn"], "multi-head attention")
    big = attn[attn["T"] >= T_min]
    if len(big) >= 2:
        s2, i2, _ = loglinear_fit(big["T"].to_numpy(), big["geomean"].to_numpy(), base=math.e, log_x=True)
        Tb = big["T"].to_numpy(dtype=float)
        ax.plot(Tb, np.exp(i2) * Tb**s2, "--", color="k", lw=1, label=f"log-log slope {s2:.2f} (T ≥ {T_min:g})")
    ax.plot(wowv.index, wowv.values, ":", color=EXP2_COLORS["attn"], lw=1, label=WOWV_LABEL)
    _style(ax, "extension: attention decays like 1/T (power law)", logx=True)


def _panel_ablation(ax, df: pd.DataFrame, series: dict, grid: list) -> list[dict]:
    """(c) ablation: A = rho Q (stable by construction) against attention; returns the crossing rows."""
    attn = series["attn"][series["attn"]["T"].isin(grid)]
    _band(ax, attn, EXP2_COLORS["attn"], "multi-head attention")
    rows = []
    ablations = sorted(v for v in series if v.startswith("ssm_rho"))
    for i, (color, v) in enumerate(zip(ABLATION_COLORS, ablations)):
        s = series[v][series[v]["T"].isin(grid)]
        sub = df[(df.variant == v) & df["T"].isin(grid)]
        rho = float(sub["rho"].mean())
        _band(ax, s, color, f"SSM, A = {rho:.3g}·Q")
        if i == 0:  # the bound is on the spectral norm: drawn beside ||J||_2 (first ablation only, for clarity)
            spec = geomean_by(sub, "T", "spec")
            ax.plot(spec["T"], spec["geomean"], "--", color=color, lw=1, label=r"$\|J\|_2$" + f" ({rho:.3g})")
            bound = sub.groupby("T")["bound"].mean()
            ax.plot(
                bound.index,
                bound.values,
                ":",
                color=color,
                lw=1.2,
                label=r"Thm 5.1: $\|C\|_2\|B\|_2\|A\|_2^{T-1}$" + f" ({rho:.3g})",
            )
        cross = crossing(
            s["T"].to_numpy(dtype=float), np.log(s["geomean"].to_numpy()), np.log(attn["geomean"].to_numpy())
        )
        if cross is not None:
            ax.axvline(cross, color=color, ls="-.", lw=0.8, label=f"crossing T ≈ {cross:.0f}")
            rows.append(
                {
                    "variant": v,
                    "T": cross,
                    "geomean": np.nan,
                    "log10_std": np.nan,
                    "count": 0,
                    "note": "crossing with attention",
                }
            )
    _style(ax, "ablation: orthogonal A = ρQ (attention larger only past the crossing)")
    return rows


def figure4(spec: dict, out: Path) -> None:
    import matplotlib.pyplot as plt

    from ...report.plots import legend_outside, save

    df = pd.read_csv(spec["inputs"]["summaries"]["exp2"])
    grid = sorted(spec["resolved"]["exp2"]["ssm"]["task"]["T"])
    series = {v: geomean_by(g, "T", "fro") for v, g in df.groupby("variant")}
    wowv = df[df.variant == "attn"].groupby("T")["uniform_approx"].mean()
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    rows = [{"variant": v, **r} for v, s in series.items() for r in s.to_dict("records")]
    _panel_paper(axes[0], df, series, grid, wowv)
    _panel_power_law(axes[1], series["attn"], wowv, spec["analysis"]["figure4"]["power_law_T_min"])
    rows += _panel_ablation(axes[2], df, series, grid)
    fig.tight_layout()
    for ax in axes:  # each panel its own entries, some long: under the panel
        legend_outside(ax, below=True)
    save(fig, out / "figure4")
    write_csv(out / "figure4.csv", rows)
