"""Heads paper ("How Many Heads Make an SSM?", Ghodsi 2025): which tables and figures, how to render them.

Artefacts (``python -m seqmix artefact --name <name>``):
- ``theory``: closed forms of spec §4 (interaction rank, Eckart-Young optimum MSE*(H), singular values)
  at the spec's n = 32 and at the run's n -> theory/summary.csv
- ``table1``: the paper's Table 1, stored as data in the config -> table1.{md,tex,csv}
- ``figure3_left``: Exp. I test MSE vs H, median and min-max band over seeds, MSE*(H) overlaid
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..report.tables import write_csv, write_static_table


def theory(run: dict, out: Path) -> None:
    from ..tasks.rotation_teacher import lag_operators
    from ..theory.heads import interaction_rank, optimal_mse, singular_values

    exp = run["resolved"]["exp1"]
    ns = sorted({32} | {v["task"]["n"] for v in exp.values()})
    ks = sorted({v["task"]["k"] for v in exp.values()})
    hs = range(0, 10)
    rows = []
    for n in ns:
        for k in ks:
            W = lag_operators(k, n)
            rows.append({"quantity": "interaction_rank", "k": k, "n": n, "H": "", "value": interaction_rank(W)})
            rows.append({"quantity": "total_variance", "k": k, "n": n, "H": 0, "value": optimal_mse(W, 0)})
            for h in hs:
                rows.append({"quantity": "mse_opt", "k": k, "n": n, "H": h, "value": optimal_mse(W, h)})
            for i, s in enumerate(singular_values(W)[:k + 2], 1):
                rows.append({"quantity": "singular_value", "k": k, "n": n, "H": i, "value": s})
    write_csv(out / "summary.csv", rows)


def table1(run: dict, out: Path) -> None:
    write_static_table(run["config"]["tables"]["table1"], out / "table1")


# k = 8 is blue in the paper; orange and green for k = 4, 2 are the spec's choice (U-I-11)
K_COLORS = {2: "tab:green", 4: "tab:orange", 8: "tab:blue"}


def figure3_left(run: dict, out: Path) -> None:
    from ..report.figures import plt, save

    results = Path(run["results"]) / run["paper"]
    df = pd.read_csv(results / "exp1" / "summary.csv")
    theory_df = pd.read_csv(results / "theory" / "summary.csv")
    df["k"] = df["variant"].str.slice(1).astype(int)
    df["H"] = df["sweep_value"].astype(int)
    n = int(next(iter(run["resolved"]["exp1"].values()))["task"]["n"])
    fig, ax = plt.subplots(figsize=(5.2, 3.8))
    rows = []
    for k, g in sorted(df.groupby("k")):
        stats = g.groupby("H")["test_mse"].agg(["median", "min", "max", "count"]).reset_index()
        color = K_COLORS.get(k)
        ax.plot(stats["H"], stats["median"], "o-", color=color, label=f"k = {k}", ms=4)
        ax.fill_between(stats["H"], stats["min"], stats["max"], color=color, alpha=0.2, lw=0)
        opt = theory_df[(theory_df.quantity == "mse_opt") & (theory_df.k == k) & (theory_df.n == n)]
        opt = opt[opt["H"].astype(int).between(1, k - 1)]
        ax.plot(opt["H"].astype(int), opt["value"], "--", color=color, lw=1, alpha=0.8)
        ax.axvline(k, color=color, ls=":", lw=0.8)
        for _, r in stats.iterrows():
            rows.append({"k": k, "H": int(r["H"]), "median": r["median"], "min": r["min"], "max": r["max"],
                         "seeds": int(r["count"])})
    ax.plot([], [], "k--", lw=1, label="Eckart–Young optimum (H < k)")
    ax.set_yscale("log")
    ax.set_xticks(range(1, int(df["H"].max()) + 1))
    ax.set_xlabel("number of heads H")
    ax.set_ylabel("test MSE")
    ax.set_title(f"Exp. I: rank-k teacher, H-head student (n = {n}, {df['seed'].nunique()} seeds)", fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both", lw=0.4)
    save(fig, out / "figure3_left")
    write_csv(out / "figure3_left.csv", rows)


ARTEFACTS = {"theory": theory, "table1": table1, "figure3_left": figure3_left}
