"""Fits and aggregates the heads figures share (moves to report/stats.py at merge)."""
from __future__ import annotations

import numpy as np
import pandas as pd


def geomean_over_seeds(df: pd.DataFrame, metric: str = "fro") -> pd.DataFrame:
    """Per T: the geometric mean over seeds x draws and the std of log10 (spec §3.6 aggregation).

    df: rows with columns T and ``metric``; returns columns T, geomean, log10_std, count (one row per T)."""
    g = df.assign(l=np.log10(df[metric].clip(lower=1e-300))).groupby("T")["l"]
    return pd.DataFrame({"T": g.mean().index, "geomean": 10 ** g.mean().values, "log10_std": g.std(ddof=0).values,
                         "count": g.count().values})


def loglinear_fit(T: np.ndarray, y: np.ndarray, logx: bool = False) -> tuple[float, float, float]:
    """(slope, intercept, R^2) of ln y against T (or ln T)."""
    x = np.log(T) if logx else np.asarray(T, dtype=float)
    ly = np.log(np.asarray(y, dtype=float))
    slope, icpt = np.polyfit(x, ly, 1)
    resid = ly - (slope * x + icpt)
    r2 = 1 - float(np.sum(resid ** 2)) / float(np.sum((ly - ly.mean()) ** 2))
    return float(slope), float(icpt), r2


def crossing_T(T: np.ndarray, a: np.ndarray, b: np.ndarray) -> float | None:
    """The first T where log a - log b changes sign, by linear interpolation in log space."""
    d = np.log(a) - np.log(b)
    for i in range(len(d) - 1):
        if d[i] == 0:
            return float(T[i])
        if d[i] * d[i + 1] < 0:
            return float(T[i] + (T[i + 1] - T[i]) * d[i] / (d[i] - d[i + 1]))
    return None
