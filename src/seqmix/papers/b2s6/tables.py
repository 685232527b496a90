"""The B2S6 paper's tables of our measurements (the paper prints no numbers for Figures 3 and 6).

- ``e1_width`` (E1, spec E1 pipeline output): final-epoch test error against the width d per unit, mean ±
  std over seeds, and the slope of log(error) on log d (the spec's acceptance reading: ~0 for S6, < 0 for S4D
  and B2S6)
- ``e5_stability`` (E5): per model and input scale c, the spike count, the largest loss jump, the final RMS
  loss and the largest Delta-gradient norms, mean over seeds (from the ``stability`` analysis)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...report.stats import mean_std
from ...report.tables import write_table
from .theory.closed_forms import loglog_slope

UNITS = {"s4d": "S4D", "s6": "S6", "b2s6": "B2S6 (block only)"}


def e1_width(spec: dict, out: Path) -> None:
    df = pd.read_csv(spec["inputs"]["summaries"]["e1"])
    widths = sorted(df["sweep_value"].unique())
    rows = []
    for unit, label in UNITS.items():
        sub = df[df["variant"] == unit]
        row = {"unit": label}
        for d in widths:
            row[f"d = {d}"] = mean_std(sub[sub["sweep_value"] == d]["test_l2"], 3)
        means = sub.groupby("sweep_value")["test_l2"].mean()
        row["slope of log error on log d"] = (
            f"{loglog_slope(means.index.to_numpy(float), means.to_numpy())[0]:.3f}" if len(means) > 1 else "—"
        )
        rows.append(row)
    caption = "E1 (Figure 3): final-epoch test mean ||g_pred - g||_2 against the width d (mean ± std over seeds)"
    write_table(pd.DataFrame(rows), out / "e1_width", caption)


def e5_stability(spec: dict, out: Path) -> None:
    df = pd.read_csv(spec["inputs"]["artefacts"]["stability"][0])
    cols = ["spikes", "max_jump", "final_rms", "max_grad_norm_w", "max_grad_norm_b"]
    g = df.groupby(["variant", "c"])[cols].mean().reset_index()
    g[cols] = g[cols].map(lambda v: "—" if not np.isfinite(v) else f"{v:.3g}")
    caption = (
        "E5 (Figure 6): loss spikes (loss > spike_factor x the running minimum), largest jump, final RMS loss and "
        "Delta-gradient norms (mean over seeds)"
    )
    write_table(g, out / "e5_stability", caption)
