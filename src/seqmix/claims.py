"""The claims engine: the papers' numbers and statements beside ours, with an honest verdict.

A claim (in ``config/papers/<paper>.yaml``) names where our value comes from (``ours``: a summary table
under ``results/<scale>/<paper>/<table>/summary.csv``, a metric, a row filter, an aggregate over seeds) and a
check:

- ``within``: our value lies in [lo, hi], or within rtol/atol of ``target`` (default: the reported value);
- ``ordering``: the series of our values over ``order`` is monotone (``direction``), with a relative slack;
- ``slope``: the least-squares slope of our series (log10 of it with ``logy``, against log10 x with
  ``logx``; natural logs with ``log_base: e``) lies in [lo, hi]; with ``relative_to`` the slope is first
  divided by the aggregate of another metric over the same rows (e.g. a decay rate ln rho(A)), and with
  ``min_r2`` the fit must also reach that coefficient of determination;
- ``threshold``: our value compares to ``value`` by ``op``.

A selection with ``over`` is a series; ``ratio_to`` divides it pointwise by a second selection's series,
and ``reduce: min|max`` turns it into one value for ``within``/``threshold`` (e.g. "attention above the
SSM at every T": the smallest attention/SSM ratio over T exceeds 1).

Verdicts: holds / differs / not expected at this scale / not run. A claim whose results are missing is
"not run"; one whose ``expected_at`` omits the current scale is "not expected at this scale" (our value is
still shown). Closed-form identities are expected at every scale and ``make test`` fails when one differs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

HOLDS, DIFFERS, NOT_EXPECTED, NOT_RUN = "holds", "differs", "not expected at this scale", "not run"
VERDICTS = (HOLDS, DIFFERS, NOT_EXPECTED, NOT_RUN)


class MissingResults(LookupError):
    pass


@dataclass
class ClaimResult:
    id: str
    source: str
    artefact: str
    statement: str
    reported: Any
    ours: Any
    check: str
    verdict: str
    expected_at: list = field(default_factory=list)
    detail: str = ""


def _aggregate(values: np.ndarray, how: str) -> float:
    if values.size == 0:
        raise MissingResults("no rows")
    if how == "mean":
        return float(np.mean(values))
    if how == "median":
        return float(np.median(values))
    if how == "geomean":
        return float(np.exp(np.mean(np.log(np.maximum(values, 1e-300)))))
    if how == "min":
        return float(np.min(values))
    if how == "max":
        return float(np.max(values))
    raise ValueError(f"unknown aggregate {how!r}")


def _filter(df: pd.DataFrame, where: dict) -> pd.DataFrame:
    for col, want in (where or {}).items():
        if col not in df.columns:
            raise MissingResults(f"column {col!r} not in results")
        if isinstance(want, list):
            df = df[df[col].isin(want)]
        else:
            df = df[df[col] == want]
    return df


def load_table(results_dir: Path, table: str) -> pd.DataFrame:
    path = Path(results_dir) / table / "summary.csv"
    if not path.exists():
        raise MissingResults(f"{path} does not exist")
    return pd.read_csv(path)


def read_ours(sel: dict, results_dir: Path) -> float | list[tuple[Any, float]]:
    """A scalar, or with ``over`` a series [(x, value), ...] sorted by x."""
    df = _filter(load_table(results_dir, sel["table"]), sel.get("where"))
    metric, how = sel["metric"], sel.get("aggregate", "median")
    if metric not in df.columns:
        raise MissingResults(f"metric {metric!r} not in {sel['table']}/summary.csv")
    if sel.get("over"):
        col = sel["over"]
        series = [(x, _aggregate(g[metric].to_numpy(dtype=float), how)) for x, g in df.groupby(col, sort=True)]
        if not series:
            raise MissingResults("no rows")
        if sel.get("ratio_to") is not None:
            den_df = _filter(load_table(results_dir, sel["table"]), sel["ratio_to"])
            den = {x: _aggregate(g[metric].to_numpy(dtype=float), how) for x, g in den_df.groupby(col, sort=True)}
            missing = [x for x, _ in series if x not in den]
            if missing:
                raise MissingResults(f"ratio_to: no results for {col} = {missing}")
            series = [(x, (v / den[x]) if den[x] != 0 else math.inf) for x, v in series]
        if sel.get("reduce"):
            values = np.array([v for _, v in series], dtype=float)
            return float(values.min() if sel["reduce"] == "min" else values.max())
        return series
    value = _aggregate(df[metric].to_numpy(dtype=float), how)
    if sel.get("ratio_to") is not None:
        den = _aggregate(
            _filter(load_table(results_dir, sel["table"]), sel["ratio_to"])[metric].to_numpy(dtype=float), how
        )
        value = value / den if den != 0 else math.inf
    return value


def _reported_value(reported: Any) -> float | None:
    if isinstance(reported, (int, float)):
        return float(reported)
    if isinstance(reported, list) and reported and isinstance(reported[0], (int, float)):
        return float(reported[0])  # [mean, std]
    return None


def read_reference(sel: dict, ref: dict, results_dir: Path) -> float:
    """A slope check's ``relative_to``: the aggregate of ``ref['metric']`` over the selection's rows."""
    df = _filter(load_table(results_dir, sel["table"]), sel.get("where"))
    if ref["metric"] not in df.columns:
        raise MissingResults(f"metric {ref['metric']!r} not in {sel['table']}/summary.csv")
    return _aggregate(df[ref["metric"]].to_numpy(dtype=float), ref.get("aggregate", "mean"))


def _log(v: np.ndarray, base: Any) -> np.ndarray:
    v = np.maximum(np.asarray(v, dtype=float), 1e-300)
    return np.log(v) if base == "e" else np.log10(v)


def run_check(check: dict, ours: Any, reported: Any, ref: float | None = None) -> tuple[bool, str]:
    """(holds, detail) for one check kind. ``ref``: the value a slope is divided by (``relative_to``)."""
    kind = check["kind"]
    if kind == "within":
        lo, hi = check.get("lo"), check.get("hi")
        if lo is None and hi is None:
            target = check.get("target", _reported_value(reported))
            if target is None:
                raise ValueError("within needs lo/hi, a target, or a numeric reported value")
            tol = check.get("atol", 0.0) + check.get("rtol", 0.0) * abs(target)
            return abs(ours - target) <= tol, f"|{ours:.6g} - {target:.6g}| <= {tol:.3g}"
        ok = (lo is None or ours >= lo) and (hi is None or ours <= hi)
        return ok, f"{ours:.6g} in [{lo}, {hi}]"
    if kind == "threshold":
        op, value = check["op"], check["value"]
        ok = {"<": ours < value, "<=": ours <= value, ">": ours > value, ">=": ours >= value}[op]
        return bool(ok), f"{ours:.6g} {op} {value}"
    if kind == "ordering":
        lookup = dict(ours)
        missing = [o for o in check["order"] if o not in lookup]
        if missing:
            raise MissingResults(f"ordering: no results for {missing}")
        vals = [lookup[o] for o in check["order"]]
        rtol = check.get("rtol", 0.0)
        sign = -1 if check.get("direction", "decreasing") == "decreasing" else 1
        bad = [
            (a, b)
            for (a, va), (b, vb) in zip(zip(check["order"], vals), zip(check["order"][1:], vals[1:]))
            if sign * (vb - va) < -rtol * max(abs(va), abs(vb))
        ]
        return not bad, ("monotone" if not bad else f"breaks at {bad}") + f" over {[round(v, 6) for v in vals]}"
    if kind == "slope":
        xs = np.array([float(x) for x, _ in ours])
        ys = np.array([v for _, v in ours], dtype=float)
        base = check.get("log_base", 10)
        if check.get("logy"):
            ys = _log(ys, base)
        if check.get("logx"):
            xs = _log(xs, base)
        if len(xs) < 2:
            raise MissingResults("slope needs at least two points")
        slope, intercept = (float(c) for c in np.polyfit(xs, ys, 1))
        lo, hi = check.get("lo", -math.inf), check.get("hi", math.inf)
        value, name = slope, "slope"
        if check.get("relative_to") is not None:
            if ref is None:
                raise MissingResults("slope relative_to: no reference value")
            value, name = (slope / ref if ref != 0 else math.inf), f"slope {slope:.4g} / {ref:.4g} ="
        ok, detail = lo <= value <= hi, f"{name} {value:.4g} in [{lo}, {hi}]"
        if check.get("min_r2") is not None:
            resid = ys - (slope * xs + intercept)
            ss_tot = float(np.sum((ys - ys.mean()) ** 2))
            r2 = 1.0 - float(np.sum(resid**2)) / ss_tot if ss_tot > 0 else (1.0 if not resid.any() else 0.0)
            ok = ok and r2 >= check["min_r2"]
            detail += f", R^2 {r2:.6g} >= {check['min_r2']}"
        return ok, detail
    raise ValueError(f"unknown check kind {kind!r}")


def _fmt(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, list) and v and isinstance(v[0], tuple):
        return ", ".join(f"{x}: {y:.3g}" for x, y in v)
    if isinstance(v, list) and len(v) == 2 and all(isinstance(x, (int, float)) for x in v):
        return f"{v[0]} ± {v[1]}"
    return str(v)


def _check_text(check: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in check.items() if k != "kind").join((f"{check['kind']}(", ")"))


def evaluate_claim(claim: dict, results_dir: Path, scale: str) -> ClaimResult:
    base = dict(
        id=claim["id"],
        source=claim["source"],
        artefact=claim["artefact"],
        statement=claim["statement"],
        reported=claim.get("reported"),
        check=_check_text(claim["check"]),
        expected_at=claim["expected_at"],
    )
    try:
        ours = read_ours(claim["ours"], results_dir)
    except MissingResults as e:
        return ClaimResult(ours=None, verdict=NOT_RUN, detail=str(e), **base)
    try:
        ref = None
        if claim["check"].get("relative_to") is not None:
            ref = read_reference(claim["ours"], claim["check"]["relative_to"], results_dir)
        ok, detail = run_check(claim["check"], ours, claim.get("reported"), ref)
    except MissingResults as e:
        return ClaimResult(ours=ours, verdict=NOT_RUN, detail=str(e), **base)
    if scale not in claim["expected_at"]:
        verdict = NOT_EXPECTED
        detail = f"{detail} (would {'hold' if ok else 'differ'})"
    else:
        verdict = HOLDS if ok else DIFFERS
    return ClaimResult(ours=ours, verdict=verdict, detail=detail, **base)


def evaluate_claims(claims: list[dict], results_dir: Path, scale: str) -> list[ClaimResult]:
    return [evaluate_claim(c, results_dir, scale) for c in claims]


COLUMNS = ("id", "source", "artefact", "statement", "paper_value", "our_value", "check", "scale", "verdict", "detail")


def to_frame(results: list[ClaimResult], scale: str) -> pd.DataFrame:
    # explicit columns: a paper without claims still gets a claims.csv with a header (report/index.py reads it)
    return pd.DataFrame(
        [
            {
                "id": r.id,
                "source": r.source,
                "artefact": r.artefact,
                "statement": r.statement,
                "paper_value": _fmt(r.reported),
                "our_value": _fmt(r.ours),
                "check": r.check,
                "scale": scale,
                "verdict": r.verdict,
                "detail": r.detail,
            }
            for r in results
        ],
        columns=list(COLUMNS),
    )


def write_claims(results: list[ClaimResult], md_path: Path, csv_path: Path, paper: str, scale: str) -> None:
    from .io import write_text

    df = to_frame(results, scale)
    write_text(csv_path, df.to_csv(index=False))
    counts = {v: int((df["verdict"] == v).sum()) for v in VERDICTS}
    lines = [
        f"# Claims of `{paper}` at scale `{scale}`",
        "",
        "Each row: a number or statement (source: the paper itself, a value the spec derived — never the "
        "paper's — or a closed-form identity), our value, the check and its verdict.",
        "",
        "Verdicts: " + ", ".join(f"{k}: {v}" for k, v in counts.items()),
        "",
        "| claim | source | artefact | statement | paper value | our value | check | verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for _, r in df.iterrows():
        cells = [
            r["id"],
            r["source"],
            r["artefact"],
            r["statement"],
            r["paper_value"],
            r["our_value"],
            f"{r['check']}: {r['detail']}",
            f"**{r['verdict']}**",
        ]
        lines.append("| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
    write_text(md_path, "\n".join(lines) + "\n")
