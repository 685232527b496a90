"""The matrix paper's tables (``report.tables.write_table``: <name>.md, .tex, .csv). Numbers are shown with
four significant digits, a missing one as ``n/a``; the protocol behind them is selection.py's docstring.

- ``scores``: per (task, mixer), the lr chosen on validation and the test score there with its interval;
- ``ranking``: per task, the mixers ranked by those intervals; then one ``overall`` row per mixer;
- ``memory``: per (task, mixer) at the chosen lr, the fitted influence decay (exponential rate, power-law
  exponent, which fits better, effective memory);
- ``excluded``: the (task, mixer) pairs the config declares but does not run, and why.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from ...report.tables import write_table
from .inputs import INTERVAL_SCALARS, excluded_pairs
from .selection import at_chosen, ranks, scored

NA = "n/a"


def num(x) -> str:
    """``x`` with four significant digits, ``n/a`` when missing or not finite."""
    try:
        x = float(x)
    except (TypeError, ValueError):
        return NA
    return f"{x:.4g}" if math.isfinite(x) else NA


def interval(lo, hi) -> str:
    """``[lo, hi]``, or ``n/a`` when either end is missing."""
    return f"[{num(lo)}, {num(hi)}]" if NA not in (num(lo), num(hi)) else NA


def _lrs(tried: list[float], chosen: float) -> str:
    return ", ".join(f"{lr:g}" + ("*" if lr == chosen else "") for lr in tried)


def _count(x) -> str:
    return f"{int(round(x)):,}" if np.isfinite(x) else NA


def _gap(x) -> str:
    return f"{100 * x:+.1f}%" if np.isfinite(x) else NA


def scores(spec: dict, out: Path) -> None:
    """scores.{md,tex,csv}, one row per (task, mixer). Columns: task (experiment), mixer (variant), metric
    (the test metric), lrs (tried; the chosen one starred), lr (chosen), chosen_on (the rule that chose:
    validation, or a training-free default), edge (``lowest/highest tried`` when the chosen lr is at the end
    of the grid), seeds (at the chosen lr), score (mean over those seeds), interval (bootstrap, confidence
    ``protocol.confidence``), n_test (test-set size, when known), n_params (mean over the cell's leaves),
    param_gap (n_params relative to the task's median over mixers)."""
    _, sc, proto = scored(spec)
    df = pd.DataFrame(
        {
            "task": sc["experiment"],
            "mixer": sc["mixer"],
            "metric": sc["metric"],
            "lrs": [_lrs(t, c) for t, c in zip(sc["lrs"], sc["lr"])],
            "lr": [f"{x:g}" for x in sc["lr"]],
            "chosen_on": sc["chosen_on"],
            "edge": sc["edge"],
            "seeds": sc["n_seeds"],
            "score": sc["score"].map(num),
            "interval": [interval(a, b) for a, b in zip(sc["lo"], sc["hi"])],
            "n_test": sc["n_test"].map(_count),
            "n_params": sc["n_params"].map(_count),
            "param_gap": sc["param_gap"].map(_gap),
        }
    )
    caption = (
        f"Test score at the learning rate chosen on validation (mean over seeds), with a "
        f"{100 * proto['confidence']:g}% bootstrap interval ({proto['bootstrap']} resamples of the seeds; "
        "accuracies with a known test size are also redrawn binomially)."
    )
    write_table(df, Path(out) / "scores", caption)


def _overall(rk: pd.DataFrame) -> list[dict]:
    """One row per mixer over the tasks where it has a rank among at least two mixers (a task with one mixer
    ranks nothing: it would lift that mixer's mean), best mean rank first."""
    ok = rk[np.isfinite(rk["rank"].to_numpy(dtype=float)) & (rk["n_ranked"] >= 2)]
    g = ok.groupby("mixer", sort=False).agg(
        mean_rank=("rank", "mean"), best=("rank_best", "mean"), worst=("rank_worst", "mean"), n=("experiment", "size")
    )
    g = g.sort_values("mean_rank", kind="stable")
    return [
        {
            "task": "overall",
            "mixer": m,
            "score": "",
            "interval": "",
            "rank": f"{r.mean_rank:.2f}",
            "rank_range": f"{r.best:.2f}–{r.worst:.2f}",
            "mixers": "",
            "tasks": int(r.n),
        }
        for m, r in zip(g.index, g.itertuples())
    ]


def ranking(spec: dict, out: Path) -> None:
    """ranking.{md,tex,csv}. Per task (best rank first): task, mixer, score, interval, rank = 1 + the
    number of mixers whose interval lies strictly on the better side of this one's (overlapping intervals
    tie), rank_range = the best and worst rank consistent with the intervals, mixers = how many were ranked
    on the task. Then per mixer (task ``overall``): rank = its mean rank over the tasks it ran beside at least
    one other mixer, rank_range
    = [mean of its best ranks, mean of its worst ranks] over those tasks, tasks = how many. A mixer without
    a score on a task is shown with rank ``n/a`` and left out of the means. Mean ranks compare mixers run
    on the same tasks; a mixer that ran fewer or smaller tasks has fewer rivals, see ``tasks``."""
    _, sc, proto = scored(spec)
    rk = ranks(sc)
    rows = []
    for _, g in rk.groupby("experiment", sort=False):
        g = g.assign(_r=g["rank"].fillna(math.inf)).sort_values("_r", kind="stable")
        for r in g.itertuples():
            ranked = np.isfinite(r.rank)
            rows.append(
                {
                    "task": r.experiment,
                    "mixer": r.mixer,
                    "score": num(r.score),
                    "interval": interval(r.lo, r.hi),
                    "rank": f"{int(r.rank)}" if ranked else NA,
                    "rank_range": f"{int(r.rank_best)}–{int(r.rank_worst)}" if ranked else NA,
                    "mixers": int(r.n_ranked),
                    "tasks": "",
                }
            )
    rows += _overall(rk)
    caption = (
        f"Mixers ranked per task by their {100 * proto['confidence']:g}% intervals: rank = 1 + the number of "
        "mixers strictly better (intervals disjoint), so overlapping mixers tie; overall = mean rank over the "
        "tasks a mixer ran beside at least one other, with the mean best-worst rank range."
    )
    write_table(pd.DataFrame(rows), Path(out) / "ranking", caption)


def _best_fit(v: pd.Series) -> str:
    """Majority over seeds of best_fit_power: power / exponential / tie (k of n seeds)."""
    v = v[np.isfinite(v.to_numpy(dtype=float))]
    if v.empty:
        return NA
    k, n = int((v > 0.5).sum()), len(v)
    word = "power" if 2 * k > n else "exponential" if 2 * k < n else "tie"
    return f"{word} ({max(k, n - k)}/{n})"


def memory_frame(spec: dict) -> pd.DataFrame:
    """Per (task, mixer) at the chosen lr: seeds, and for each fitted quantity q of ``INTERVAL_SCALARS`` its
    mean over seeds (q) and the envelope of the seeds' intervals (q_lo = min lo, q_hi = max hi); best_fit."""
    cells, sc, _ = scored(spec)
    chosen = at_chosen(cells, sc)
    out = []
    for r in sc.itertuples():
        g = chosen[(chosen["experiment"] == r.experiment) & (chosen["mixer"] == r.mixer)]
        row = {"experiment": r.experiment, "mixer": r.mixer, "mixer_name": r.mixer_name, "lr": r.lr, "seeds": len(g)}
        for q in INTERVAL_SCALARS:
            row[q] = g[q].mean()
            row[f"{q}_lo"], row[f"{q}_hi"] = g[f"{q}_lo"].min(), g[f"{q}_hi"].max()
        row["best_fit"] = _best_fit(g["best_fit_power"])
        out.append(row)
    return pd.DataFrame(out)


def memory(spec: dict, out: Path) -> None:
    """memory.{md,tex,csv}, one row per (task, mixer) at its chosen lr. Columns: task, mixer, lr, seeds;
    exp_rate (r of log I = a - r lag; mean over seeds) and its interval (the envelope of the seeds'
    bootstrap intervals: lowest lo, highest hi); power (p of log I = b - p log lag) and its interval;
    best_fit (which law fits the profile better in log space, majority over seeds, k of n); effective_memory
    (lag where influence falls below the diagnose stage's fraction of its scale) and its interval."""
    m = memory_frame(spec)
    df = pd.DataFrame(
        {
            "task": m["experiment"],
            "mixer": m["mixer"],
            "lr": [f"{x:g}" for x in m["lr"]],
            "seeds": m["seeds"],
            "exp_rate": m["exp_rate"].map(num),
            "exp_rate_interval": [interval(a, b) for a, b in zip(m["exp_rate_lo"], m["exp_rate_hi"])],
            "power": m["power"].map(num),
            "power_interval": [interval(a, b) for a, b in zip(m["power_lo"], m["power_hi"])],
            "best_fit": m["best_fit"],
            "effective_memory": m["effective_memory"].map(num),
            "memory_interval": [interval(a, b) for a, b in zip(m["effective_memory_lo"], m["effective_memory_hi"])],
        }
    )
    caption = (
        "Influence decay at the chosen learning rate: exponential rate r, power-law exponent p, the better fit "
        "(majority over seeds) and the effective memory; intervals span the seeds' bootstrap intervals."
    )
    write_table(df, Path(out) / "memory", caption)


def excluded(spec: dict, out: Path) -> None:
    """excluded.{md,tex,csv}: task (experiment), mixer (variant), reason, for each pair of
    the spec's ``excluded`` (dropped by the config loader); no pair -> one row saying so."""
    pairs = excluded_pairs(spec)
    rows = [{"task": p["experiment"], "mixer": p["variant"], "reason": p["reason"]} for p in pairs]
    if not rows:
        rows = [{"task": "none", "mixer": "—", "reason": "every declared (task, mixer) pair ran"}]
    caption = "The (task, mixer) pairs the matrix declares but does not run, by a declared capability."
    write_table(pd.DataFrame(rows, columns=["task", "mixer", "reason"]), Path(out) / "excluded", caption)
