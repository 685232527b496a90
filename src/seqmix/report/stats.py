"""Statistics the papers' tables and analyses share: mean ± std over seeds as text, geometric means, linear
and log-linear fits (scipy), and where two sampled curves cross."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

MISSING = "—"


def mean_std(values: Sequence[float], digits: int = 3) -> str:
    """``"m ± s"`` over seeds (sample std, ddof = 1), ``"m (1 seed)"`` for one value, ``"—"`` for none.

    NaNs (a seed without the metric) are dropped before counting."""
    v = np.asarray(values, dtype=float).ravel()
    v = v[~np.isnan(v)]
    if v.size == 0:
        return MISSING
    if v.size == 1:
        return f"{v[0]:.{digits}f} (1 seed)"
    return f"{v.mean():.{digits}f} ± {v.std(ddof=1):.{digits}f}"


def geomean(values: Sequence[float]) -> float:
    """Geometric mean; a non-positive or non-finite value is an error (its log is undefined), not skipped."""
    v = np.asarray(values, dtype=float).ravel()
    if v.size == 0:
        raise ValueError("geometric mean of no values")
    bad = v[~(np.isfinite(v) & (v > 0))]
    if bad.size:
        raise ValueError(f"geometric mean needs positive finite values, got {bad.tolist()[:5]}")
    return float(np.exp(np.log(v).mean()))


class Fit(NamedTuple):
    """y ≈ slope * x + intercept (in the fitted coordinates) and the coefficient of determination."""

    slope: float
    intercept: float
    r2: float


def linear_fit(x: Sequence[float], y: Sequence[float]) -> Fit:
    """Least-squares line through (x, y) with scipy.stats.linregress; needs >= 2 distinct x."""
    x, y = np.asarray(x, dtype=float).ravel(), np.asarray(y, dtype=float).ravel()
    if x.shape != y.shape:
        raise ValueError(f"x and y differ in length: {x.size} vs {y.size}")
    if x.size < 2 or np.ptp(x) == 0:
        raise ValueError(f"a line needs at least two distinct x values, got {np.unique(x).tolist()}")
    from scipy import stats  # here: importing scipy.stats costs ~1.5 s, and most table jobs fit nothing

    r = stats.linregress(x, y)
    return Fit(float(r.slope), float(r.intercept), float(r.rvalue**2))


def loglinear_fit(x: Sequence[float], y: Sequence[float], base: float = 10.0, log_x: bool = False) -> Fit:
    """Line through (x, log_base y), or (log_base x, log_base y) with ``log_x``: y ~ base^(slope x)
    (a power law with ``log_x``). Non-positive y (or x with ``log_x``) is an error."""

    def log(v, name):
        v = np.asarray(v, dtype=float).ravel()
        if np.any(~(v > 0)):
            raise ValueError(f"log-linear fit needs positive {name}, got {v[~(v > 0)].tolist()[:5]}")
        return np.log(v) / np.log(base)

    return linear_fit(log(x, "x") if log_x else x, log(y, "y"))


def crossing(x: Sequence[float], y1: Sequence[float], y2: Sequence[float]) -> float | None:
    """The first x where curve y1 - y2 changes sign (linear interpolation between samples), or None.

    x must be increasing; a sample where the curves touch (difference 0) is itself the crossing."""
    x, d = np.asarray(x, dtype=float), np.asarray(y1, dtype=float) - np.asarray(y2, dtype=float)
    if not (x.shape == d.shape and x.ndim == 1):
        raise ValueError(f"x, y1 and y2 must be 1-d of one length, got {x.shape} and {d.shape}")
    if np.any(np.diff(x) <= 0):
        raise ValueError("x must be strictly increasing")
    for i in range(x.size):
        if d[i] == 0:
            return float(x[i])
        if i + 1 < x.size and d[i] * d[i + 1] < 0:
            return float(x[i] + (x[i + 1] - x[i]) * d[i] / (d[i] - d[i + 1]))
    return None


def geomean_by(df, key: str, metric: str):
    """Per value of ``key``: the geometric mean of ``metric`` over the rows (e.g. seeds x draws), the std of
    its log10 and the row count. Returns a DataFrame with columns key, geomean, log10_std, count.

    Values <= 0 are clipped to 1e-300 first (a Jacobian norm that underflowed), so they pull the mean down
    instead of making it NaN."""
    import pandas as pd

    g = df.assign(_l=np.log10(df[metric].clip(lower=1e-300))).groupby(key)["_l"]
    return pd.DataFrame(
        {
            key: g.mean().index,
            "geomean": 10 ** g.mean().values,
            "log10_std": g.std(ddof=0).values,
            "count": g.count().values,
        }
    )
