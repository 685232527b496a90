"""Reading our value for a claim (seqmix.claims.engine) from ``results/<paper>/<table>/summary.csv``: the rows a
selection names, the members and seeds it needs, their aggregate, a series over a column, a ratio.

Everything that would let a check pass on broken data is refused here: a listed member (a value in a list
of ``where``) without rows or a missing seed raises MissingResults ('not run'); a NaN/Inf in a row read, a
geomean of values <= 0 or a zero denominator raises InvalidInput ('invalid'), the rows named.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..results import verify_summary
from .checks import NO_SEEDS, InvalidInput, MissingResults

SEED = "seed"


def load_table(results_dir: Path, table: str) -> pd.DataFrame:
    path = Path(results_dir) / table / "summary.csv"
    if not path.exists():
        raise MissingResults(f"{path} does not exist")
    verify_summary(path)  # a truncated or garbled summary stops the claims step, naming it (results.CorruptResult)
    return pd.read_csv(path)


def _fmt_value(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def row_labels(df: pd.DataFrame, keys: list[str]) -> list[str]:
    """One 'col=value, ...' name per row, from the key columns the table has (what tells rows apart)."""
    cols = [k for k in dict.fromkeys(keys) if k in df.columns]
    if not cols:
        return [f"row {i}" for i in df.index]
    return [", ".join(f"{c}={_fmt_value(r[c])}" for c in cols) for _, r in df[cols].iterrows()]


def _aggregate(values: np.ndarray, how: str, labels: list[str] | None = None) -> float:
    if values.size == 0:
        raise MissingResults("no rows")
    if how == "mean":
        return float(np.mean(values))
    if how == "median":
        return float(np.median(values))
    if how == "geomean":
        if (values <= 0).any():
            labels = labels or [f"row {i}" for i in range(values.size)]
            bad = [f"{lab} ({v:.6g})" for lab, v in zip(labels, values) if v <= 0]
            raise InvalidInput(f"geomean of non-positive values at {'; '.join(bad)}")
        return float(np.exp(np.mean(np.log(values))))
    if how == "min":
        return float(np.min(values))
    if how == "max":
        return float(np.max(values))
    raise ValueError(f"unknown aggregate {how!r}")


def _filter(df: pd.DataFrame, where: dict) -> pd.DataFrame:
    for col, want in (where or {}).items():
        if col not in df.columns:
            raise MissingResults(f"column {col!r} not in results")
        df = df[df[col].isin(want)] if isinstance(want, list) else df[df[col] == want]
    return df


def _missing_members(df: pd.DataFrame, where: dict, over: str | None) -> list[str]:
    """'col=value' for every value a list in ``where`` names that has no rows; along a series, a member of
    another list must be present at every point ('variant=b at T=2')."""
    out = []
    for col, want in (where or {}).items():
        if not isinstance(want, list):
            continue
        if not over or col == over:
            out += [f"{col}={_fmt_value(w)}" for w in want if not (df[col] == w).any()]
            continue
        for x, g in df.groupby(over, sort=True):
            out += [f"{col}={_fmt_value(w)} at {over}={_fmt_value(x)}" for w in want if not (g[col] == w).any()]
    return out


def _seeds_needed(table: pd.DataFrame, where: dict, declared: Any) -> tuple[set | None, int | None]:
    """(the seed values needed, or None; the count needed) for a claim's ``seeds``: a list names the seeds
    (only they are read), an int is a minimum count, and by default every seed the table has (within a seed
    ``where`` pins) is needed. A table without a seed column needs none, unless the claim declares some."""
    if SEED not in table.columns:
        if declared is not None:
            raise MissingResults(f"the claim declares seeds: {declared}, but the table has no seed column")
        return None, None
    if isinstance(declared, list):
        return set(declared), len(declared)
    if isinstance(declared, int):
        return None, declared
    pinned = {SEED: where[SEED]} if where and SEED in where else {}
    seeds = set(_filter(table, pinned)[SEED].dropna().tolist())
    return seeds, len(seeds)


def _seed_shortfall(groups: list[tuple[Any, pd.DataFrame]], needed: set | None, n: int | None, over: str | None):
    """(the 'had/needed' cell of the worst point, its shortfall message or '')."""
    if n is None:
        return NO_SEEDS, ""
    worst = None
    for x, g in groups:
        have = set(g[SEED].dropna().tolist())
        if not have:
            continue  # seedless rows (e.g. a teacher beside its students): nothing to count
        k = len(have & needed) if needed is not None else len(have)
        if worst is None or k < worst[0]:
            worst = (k, x, sorted(needed - have) if needed is not None else [])
    if worst is None:
        return NO_SEEDS, ""
    k, x, lacking = worst
    cell = f"{k}/{n}"
    if k >= n:
        return cell, ""
    at = f" at {over}={_fmt_value(x)}" if over else ""
    missing = f" (missing seed {', '.join(_fmt_value(s) for s in lacking)})" if lacking else ""
    return cell, f"{k} of {n} seeds{at}{missing}"


def _rows(results_dir: Path, sel: dict, where: dict, metric: str, declared: Any):
    """(the selected rows, the seeds cell): filtered, members and seeds present, the metric finite."""
    table = load_table(results_dir, sel["table"])
    if metric not in table.columns:
        raise MissingResults(f"metric {metric!r} not in {sel['table']}/summary.csv")
    df = _filter(table, where)
    needed, n = _seeds_needed(table, where, declared)
    if needed is not None and declared is not None:
        df = df[df[SEED].isin(list(needed))]
    if df.empty:
        raise MissingResults("no rows")
    over = sel.get("over")
    missing = _missing_members(df, where, over)
    if missing:
        raise MissingResults(f"missing {', '.join(missing)}")
    groups = list(df.groupby(over, sort=True)) if over else [(None, df)]
    cell, short = _seed_shortfall(groups, needed, n, over)
    if short:
        raise MissingResults(short, seeds=cell)
    values = df[metric].to_numpy(dtype=float)
    if not np.isfinite(values).all():
        keys = [over] + list(where or {}) + [SEED, "draw"]
        bad = [f"{lab} ({v})" for lab, v in zip(row_labels(df, keys), values) if not np.isfinite(v)]
        raise InvalidInput(f"non-finite {metric} at {'; '.join(bad)}")
    return df, cell


def _series(df: pd.DataFrame, sel: dict, where: dict, metric: str, how: str) -> list[tuple[Any, float]]:
    over = sel["over"]
    keys = list(where or {}) + [SEED, "draw"]
    return [
        (x, _aggregate(g[metric].to_numpy(dtype=float), how, row_labels(g, [over] + keys)))
        for x, g in df.groupby(over, sort=True)
    ]


def read_selection(sel: dict, results_dir: Path, seeds: Any = None) -> tuple[float | list, str]:
    """(our value, the 'had/needed' seeds cell): a scalar, or with ``over`` a series [(x, value), ...]
    sorted by x; ``seeds`` is the claim's declaration (None: every seed of the table)."""
    metric, how, where = sel["metric"], sel.get("aggregate", "median"), sel.get("where") or {}
    df, cell = _rows(results_dir, sel, where, metric, seeds)
    den_where = sel.get("ratio_to")
    den = _rows(results_dir, sel, den_where, metric, seeds)[0] if den_where is not None else None
    if not sel.get("over"):
        value = _aggregate(df[metric].to_numpy(dtype=float), how, row_labels(df, list(where) + [SEED, "draw"]))
        if den is not None:
            d = _aggregate(den[metric].to_numpy(dtype=float), how, row_labels(den, list(den_where) + [SEED]))
            if d == 0:
                names = ", ".join(f"{k}={_fmt_value(v)}" for k, v in den_where.items())
                raise InvalidInput(f"division by zero: the ratio_to rows ({names}) aggregate to 0")
            value = value / d
        return value, cell
    series, col = _series(df, sel, where, metric, how), sel["over"]
    if den is not None:
        by_x = dict(_series(den, sel, den_where, metric, how))
        missing = [x for x, _ in series if x not in by_x]
        if missing:
            raise MissingResults(f"ratio_to: no results for {col} = {missing}")
        zero = [f"{col}={_fmt_value(x)}" for x, _ in series if by_x[x] == 0]
        if zero:
            raise InvalidInput(f"division by zero at {', '.join(zero)}")
        series = [(x, v / by_x[x]) for x, v in series]
    if sel.get("reduce"):
        values = np.array([v for _, v in series], dtype=float)
        return float(values.min() if sel["reduce"] == "min" else values.max()), cell
    return series, cell


def read_ours(sel: dict, results_dir: Path, seeds: Any = None) -> float | list[tuple[Any, float]]:
    """Our value alone (read_selection without the seeds cell)."""
    return read_selection(sel, results_dir, seeds)[0]


def read_reference(sel: dict, ref: dict, results_dir: Path, seeds: Any = None) -> float:
    """A slope check's ``relative_to``: the aggregate of ``ref['metric']`` over the selection's rows."""
    where = sel.get("where") or {}
    df, _ = _rows(results_dir, sel, where, ref["metric"], seeds)
    labels = row_labels(df, [sel.get("over")] + list(where) + [SEED])
    return _aggregate(df[ref["metric"]].to_numpy(dtype=float), ref.get("aggregate", "mean"), labels)
