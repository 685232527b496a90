"""Reading our value for a claim (seqmix.claims.engine) from ``results/<paper>/<table>/summary.csv``: the rows a
selection names, the members and seeds it needs, their aggregate, a series over a column, a ratio, and with a
noise model (seqmix.claims.noise) the estimate of each value.

Everything that would let a check pass on broken data is refused here. 'not run' (MissingResults): a listed
member (a value in a list of ``where``) without rows, a series whose ``over`` column has no list in ``where``
(the points found are named: a point cannot be dropped or added unseen), fewer seeds than needed for any
member, a row without a seed, a column an experiment's summary lacks. 'invalid' (InvalidInput): an empty
(0-byte) summary, a non-numeric or NaN/Inf cell in a row read, two rows for one (member, seed), a geomean of
values <= 0, a zero denominator, a ``where`` value that cannot be of its column's type, a column an analysis
artefact's table lacks (the table and its columns named); the rows are named.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..results import verify_summary
from . import noise as N
from .checks import NO_SEEDS, InvalidInput, MissingResults

SEED = "seed"
# columns that differ between two runs of one leaf (a stale row beside a fresh one) and so name no member
_RUN_COLUMNS = ("hash",)


def load_table(results_dir: Path, table: str) -> pd.DataFrame:
    path = Path(results_dir) / table / "summary.csv"
    if not path.exists():
        raise MissingResults(f"{path} does not exist")
    if path.stat().st_size == 0:  # named as such, with or without a checksum (the DAG remakes it)
        raise InvalidInput(f"{path} is empty (0 bytes): no header, no rows")
    # a truncated, garbled or unchecksummed summary stops the claims step, naming it (results.CorruptResult)
    verify_summary(path)
    try:
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise InvalidInput(f"{path} is empty: no header, no rows") from None


def _fmt_value(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def row_labels(df: pd.DataFrame, keys: list) -> list[str]:
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


def _typed(col: pd.Series, name: str, want: Any) -> Any:
    """``want`` as a value of the column's type: YAML and family substitution can give "2" for an int column
    (or 2 for a column of labels); a value that can be of no row's type is an error, not 'no rows'."""
    if want is None or isinstance(want, bool):
        return want
    if pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col):
        if isinstance(want, str):
            try:
                return float(want)
            except ValueError:
                raise InvalidInput(f"where {name}={want!r} can match no row: column {name!r} holds numbers") from None
        return want
    if isinstance(want, (int, float)) and not col.dropna().map(lambda v: isinstance(v, (int, float))).any():
        return _fmt_value(want)
    return want


def _filter(df: pd.DataFrame, where: dict) -> pd.DataFrame:
    for col, want in (where or {}).items():
        if col not in df.columns:
            raise MissingResults(f"column {col!r} not in results")
        if want is None:  # `seed: null`: the rows that have no seed (a deterministic member, e.g. a teacher)
            df = df[df[col].isna()]
        elif isinstance(want, list):
            df = df[df[col].isin([_typed(df[col], col, w) for w in want])]
        else:
            df = df[df[col] == _typed(df[col], col, want)]
    return df


def _missing_members(df: pd.DataFrame, where: dict, over: str | None) -> list[str]:
    """'col=value' for every value a list in ``where`` names that has no rows; along a series, a member of
    another list must be present at every point ('variant=b at T=2')."""
    out = []
    for col, want in (where or {}).items():
        if not isinstance(want, list):
            continue
        want = [_typed(df[col], col, w) for w in want]
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
    if where and SEED in where and where[SEED] is None:
        return None, None  # the seedless rows of a deterministic member
    pinned = {SEED: where[SEED]} if where and SEED in where else {}
    seeds = set(_filter(table, pinned)[SEED].dropna().tolist())
    return seeds, len(seeds)


def _seed_shortfall(groups: list[tuple[Any, pd.DataFrame]], needed: set | None, n: int | None, where_at: str):
    """(the 'had/needed' cell of the worst member, its shortfall message or ''); ``groups`` are the members
    (one per point of a series and per value of each list in ``where``), each needing its seeds."""
    if n is None or not groups:
        return NO_SEEDS, ""
    worst = None
    for x, g in groups:
        have = set(g[SEED].dropna().tolist())
        k = len(have & needed) if needed is not None else len(have)
        if worst is None or k < worst[0]:
            worst = (k, x, sorted(needed - have) if needed is not None else [])
    k, x, lacking = worst
    cell = f"{k}/{n}"
    if k >= n:
        return cell, ""
    at = f" at {where_at.format(*x)}" if where_at else ""
    missing = f" (missing seed {', '.join(_fmt_value(s) for s in lacking)})" if lacking else ""
    return cell, f"{k} of {n} seeds{at}{missing}"


def _member_columns(where: dict, over: str | None) -> list[str]:
    return ([over] if over else []) + [c for c, w in (where or {}).items() if isinstance(w, list) and c != over]


def _duplicates(df: pd.DataFrame, metric: str) -> list[str]:
    """Rows of a seeded table that agree on every column naming a member (labels, integer-valued numbers;
    not the metric, not the run's hash): one (member, seed) read twice, e.g. a stale row beside a fresh one.
    Rows told apart by another key (a layer, a draw, a length) are pooled as the claim says, not duplicates."""
    keys = [
        c
        for c in df.columns
        if c != metric
        and c not in _RUN_COLUMNS
        and (not pd.api.types.is_float_dtype(df[c]) or np.all(np.mod(df[c].dropna(), 1) == 0))
    ]
    dup = df[df.duplicated(subset=keys, keep=False)] if keys else df.iloc[0:0]
    return sorted(set(row_labels(dup, keys)))


def _numeric(df: pd.DataFrame, metric: str, keys: list) -> np.ndarray:
    """The metric column as floats: a text cell ('nan' aside) is invalid, named, never a crash."""
    raw = df[metric]
    values = pd.to_numeric(raw, errors="coerce")
    bad = values.isna() & raw.notna()
    if bad.any():
        cells = [f"{lab} ({v!r})" for lab, v in zip(row_labels(df[bad], keys), raw[bad])]
        raise InvalidInput(f"non-numeric {metric} at {'; '.join(cells)}")
    return values.to_numpy(dtype=float)


def _check_columns(table: pd.DataFrame, name: str, columns: list) -> None:
    """An analysis artefact's table names its own columns (nothing declares them before it runs, as
    ``Task.summary_columns`` does a stage's): one the claim names and the table lacks can never be read, so the
    claim is invalid, the table and the column named, however often it is run."""
    missing = [c for c in dict.fromkeys(columns) if c is not None and c not in table.columns]
    if missing:
        raise InvalidInput(
            f"{name}/summary.csv (an analysis table) has no column {', '.join(map(repr, missing))}; its columns: "
            f"{', '.join(map(str, table.columns))}"
        )


def _rows(results_dir: Path, sel: dict, where: dict, metric: str, declared: Any, listed: bool = True,
          analysis: bool = False):  # fmt: skip
    """(the selected rows with the metric as floats, the seeds cell): filtered, members and seeds present,
    one row per (member, seed), the metric numeric and finite. ``listed``: a series' points must be listed
    in ``where`` (a ratio_to's rows are matched to the numerator's points instead). ``analysis``: the table is
    an analysis artefact's, whose missing columns make the claim invalid, not 'not run'."""
    table = load_table(results_dir, sel["table"])
    if analysis:
        _check_columns(table, sel["table"], [metric, *(where or {}), sel.get("over")])
    if metric not in table.columns:
        raise MissingResults(f"metric {metric!r} not in {sel['table']}/summary.csv")
    df = _filter(table, where)
    over = sel.get("over")
    if listed and over and not isinstance(where.get(over), list):
        found = ", ".join(_fmt_value(x) for x in sorted(df[over].dropna().unique().tolist())) if over in df else "-"
        raise MissingResults(f"the series over {over} has no list of its points in where (found {over} = {found})")
    needed, n = _seeds_needed(table, where, declared)
    if needed is not None and declared is not None:
        df = df[df[SEED].isin(list(needed))]
    if df.empty:
        raise MissingResults("no rows")
    missing = _missing_members(df, where, over)
    if missing:
        raise MissingResults(f"missing {', '.join(missing)}")
    keys = [over] + list(where or {}) + [SEED, "draw"]
    if SEED in df.columns and where.get(SEED, "") is not None and df[SEED].isna().any():
        raise MissingResults(f"rows without a seed at {'; '.join(row_labels(df[df[SEED].isna()], keys))}")
    members = _member_columns(where, over)
    groups = list(df.groupby(members, sort=True)) if members else [((), df)]
    groups = [(x if isinstance(x, tuple) else (x,), g) for x, g in groups]
    where_at = ", ".join(f"{c}={{}}" for c in members)
    cell, short = _seed_shortfall(
        [(tuple(_fmt_value(v) for v in x), g) for x, g in groups] if SEED in df.columns else [], needed, n, where_at
    )
    if short:
        raise MissingResults(short, seeds=cell)
    dup = _duplicates(df, metric) if SEED in df.columns else []
    if dup:
        raise InvalidInput(f"two or more rows for one member and seed: {'; '.join(dup)}")
    df = df.assign(**{metric: _numeric(df, metric, keys)})
    values = df[metric].to_numpy(dtype=float)
    if not np.isfinite(values).all():
        bad = [f"{lab} ({v})" for lab, v in zip(row_labels(df, keys), values) if not np.isfinite(v)]
        raise InvalidInput(f"non-finite {metric} at {'; '.join(bad)}")
    return df, cell


@dataclass
class Reading:
    """What a selection gives: our value (a number or a series [(x, value), ...]), the 'had/needed' seeds
    cell, the seeds read, the noise model and, with one, the estimate(s) beside the value(s)."""

    ours: Any
    seeds: str
    seeds_used: str
    noise: N.Noise
    estimate: Any = None


def resolve_noise(declared: Any, consistency: bool, sel: dict, table: pd.DataFrame, scale: str) -> N.Noise:
    """The claim's noise model; by default ``seeds`` for a mean over the seeds of a seeded table, else
    ``none`` (consistency claims, seedless tables, one pinned seed, median/min/max/geomean aggregates)."""
    if declared is not None:
        return N.parse_noise(declared, scale)
    where = sel.get("where") or {}
    pinned = SEED in where and not isinstance(where[SEED], list)
    if consistency or SEED not in table.columns or pinned or sel.get("aggregate", "median") != "mean":
        return N.Noise()
    return N.Noise(N.SEEDS)


def _point(g: pd.DataFrame, metric: str, how: str, keys: list, noise: N.Noise):
    value = _aggregate(g[metric].to_numpy(dtype=float), how, row_labels(g, keys))
    if not noise.active:
        return value, None
    if how != "mean":
        raise ValueError(f"noise {noise.kind!r} is of a mean over seeds: the selection's aggregate is {how!r}")
    if SEED not in g.columns and noise.kind != N.BINOMIAL:
        raise MissingResults(f"noise {noise.kind!r} needs a seed column")
    per_seed = g.groupby(SEED)[metric].mean().to_numpy(dtype=float) if SEED in g.columns else np.array([value])
    return value, N.from_seeds(per_seed, value, noise)


def _read(sel: dict, where: dict, df: pd.DataFrame, metric: str, how: str, noise: N.Noise, series: bool):
    keys = [sel.get("over")] + list(where) + [SEED, "draw"]
    if not series:
        return _point(df, metric, how, keys, noise)
    points = [(x, _point(g, metric, how, keys, noise)) for x, g in df.groupby(sel["over"], sort=True)]
    return [(x, v) for x, (v, _) in points], [(x, e) for x, (_, e) in points] if noise.active else None


def read_claim(sel: dict, results_dir: Path, declared: Any = None, noise: Any = None, consistency: bool = False,
               scale: str = "", analysis: bool = False) -> Reading:  # fmt: skip
    """Our value for a claim's selection with its noise model (``noise`` the claim's declaration or None);
    ``analysis``: the selection's table is an analysis artefact's (``_rows``)."""
    metric, how, where = sel["metric"], sel.get("aggregate", "median"), sel.get("where") or {}
    df, cell = _rows(results_dir, sel, where, metric, declared, analysis=analysis)
    model = resolve_noise(noise, consistency, sel, load_table(results_dir, sel["table"]), scale)
    used = ", ".join(_fmt_value(s) for s in sorted(set(df[SEED].dropna()))) if SEED in df.columns else NO_SEEDS
    over, den_where = sel.get("over"), sel.get("ratio_to")
    value, est = _read(sel, where, df, metric, how, model, bool(over))
    if den_where is not None:
        den = _rows(results_dir, sel, den_where, metric, declared, listed=False, analysis=analysis)[0]
        d_value, d_est = _read(sel, den_where, den, metric, how, model, bool(over))
        value, est = _divide(sel, den_where, value, est, d_value, d_est)
    if sel.get("reduce"):
        values = np.array([v for _, v in value], dtype=float)
        value = float(values.min() if sel["reduce"] == "min" else values.max())
        est = N.reduce([e for _, e in est], sel["reduce"]) if est is not None else None
    return Reading(value, cell, used, model, est)


def _divide(sel: dict, den_where: dict, value, est, d_value, d_est):
    if not sel.get("over"):
        if d_value == 0:
            names = ", ".join(f"{k}={_fmt_value(v)}" for k, v in den_where.items())
            raise InvalidInput(f"division by zero: the ratio_to rows ({names}) aggregate to 0")
        return value / d_value, N.ratio(est, d_est) if est is not None else None
    col, by_x, by_e = sel["over"], dict(d_value), dict(d_est or [])
    missing = [x for x, _ in value if x not in by_x]
    if missing:
        raise MissingResults(f"ratio_to: no results for {col} = {missing}")
    zero = [f"{col}={_fmt_value(x)}" for x, _ in value if by_x[x] == 0]
    if zero:
        raise InvalidInput(f"division by zero at {', '.join(zero)}")
    ratios = [(x, v / by_x[x]) for x, v in value]
    return ratios, [(x, N.ratio(e, by_e[x])) for x, e in est] if est is not None else None


def read_selection(sel: dict, results_dir: Path, seeds: Any = None) -> tuple[float | list, str]:
    """(our value, the 'had/needed' seeds cell), judged without noise: a scalar, or with ``over`` a series
    [(x, value), ...] sorted by x; ``seeds`` is the claim's declaration (None: every seed of the table)."""
    r = read_claim(sel, results_dir, seeds, noise="none")
    return r.ours, r.seeds


def read_ours(sel: dict, results_dir: Path, seeds: Any = None) -> float | list[tuple[Any, float]]:
    """Our value alone (read_selection without the seeds cell)."""
    return read_selection(sel, results_dir, seeds)[0]


def read_reference(sel: dict, ref: dict, results_dir: Path, seeds: Any = None, analysis: bool = False) -> float:
    """A slope check's ``relative_to``: the aggregate of ``ref['metric']`` over the selection's rows."""
    where = sel.get("where") or {}
    df, _ = _rows(results_dir, sel, where, ref["metric"], seeds, analysis=analysis)
    labels = row_labels(df, [sel.get("over")] + list(where) + [SEED])
    return _aggregate(df[ref["metric"]].to_numpy(dtype=float), ref.get("aggregate", "mean"), labels)
