"""One protocol for every (task, mixer) cell of the matrix: pick the learning rate on validation, report
the test score at that rate with a bootstrap interval, and rank the mixers of a task by those intervals.

**Learning rate.** For each lr tried, the mean of the validation metric (``select``) over the seeds where it
is finite; the chosen lr has the best mean (direction ``higher_is_better``), ties going to the smaller lr.
The test score never takes part. When no lr has a validation value, the choice is made without any trained
result: the scores entry's ``default_lr``, else the lr of the variant's own config (``resolved`` train.lr),
else the lower median of the lrs tried; when that lr was not tried, the tried lr nearest to it in log
space (ties -> smaller). ``chosen_on`` says which rule chose.

**Interval** (``bootstrap_interval``). B replicates; each draws S seeds with replacement from the S seeds
at the chosen lr and averages their scores. When the task names its test-set size n (``test_size_key``)
and every seed's score lies in [0, 1] (an accuracy), each drawn seed's score p is also redrawn as
Binomial(n, p) / n, so the interval carries the finite test set as well as the seed-to-seed spread. The
interval is the central ``confidence`` percentile interval of the B means. One seed without a test size
gives a zero-width interval (nothing to resample).

**Rank** (``rank_task``), within one task, over the mixers with a score: mixer j is *strictly better* than
i when their intervals do not overlap and j's is on the better side (higher is better: lo_j > hi_i; lower
is better: hi_j < lo_i). rank_i = 1 + #{j strictly better than i} (so overlapping mixers tie), and the
rank range is [rank_i, n - #{j strictly worse than i}]: the best and worst place i could take under any
ordering consistent with the intervals.
"""

from __future__ import annotations

import math
import zlib

import numpy as np
import pandas as pd

from .inputs import cell_rows, protocol, score_setting

# per (experiment, mixer) at the chosen lr, in order (see tables.scores for the display)
SCORE_COLUMNS = [
    "experiment",
    "label",
    "mixer",
    "mixer_name",
    "metric",
    "higher_is_better",
    "lrs",
    "lr",
    "chosen_on",
    "edge",
    "n_seeds",
    "score",
    "lo",
    "hi",
    "n_test",
    "n_params",
    "param_gap",
]


def rng_for(seed: int, *names: str) -> np.random.Generator:
    """A generator fixed by the protocol's seed and the names (not by the order cells are visited in)."""
    return np.random.default_rng([seed, *(zlib.crc32(n.encode()) for n in names)])


def _fallback_lr(tried: list[float], default: float | None) -> float:
    if default is None or not default > 0:
        return sorted(tried)[(len(tried) - 1) // 2]
    return min(sorted(tried), key=lambda lr: abs(math.log(lr) - math.log(default)) if lr > 0 else math.inf)


def choose_lr(rows: pd.DataFrame, setting: dict, config_lr: float | None = None) -> tuple[float, str]:
    """(chosen lr, chosen_on) for one (task, mixer)'s leaves (columns lr, select_value); see the module doc."""
    tried = sorted(rows["lr"].unique().tolist())
    val = rows.groupby("lr", dropna=False)["select_value"].mean()  # mean skips NaN seeds
    val = val[np.isfinite(val.to_numpy(dtype=float))]
    if len(val):
        sign = -1.0 if setting["higher_is_better"] else 1.0
        best = min(val.index, key=lambda lr: (sign * val[lr], lr))
        return float(best), f"validation {setting['select']}"
    if setting.get("default_lr") is not None:
        return _fallback_lr(tried, setting["default_lr"]), f"default_lr (no {setting['select']})"
    if config_lr is not None:
        return _fallback_lr(tried, config_lr), f"config train.lr (no {setting['select']})"
    return _fallback_lr(tried, None), f"median lr tried (no {setting['select']})"


def is_proportion(scores: np.ndarray, n_test: float) -> bool:
    """Whether the binomial redraw applies: a positive test size and every score in [0, 1]."""
    return bool(np.isfinite(n_test) and n_test >= 1 and scores.size and np.all((scores >= 0) & (scores <= 1)))


def bootstrap_means(scores, n_test: float, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """The B bootstrap means of the module doc (seeds resampled; binomial redraw for a proportion)."""
    x = np.asarray(scores, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return np.full(resamples, np.nan)
    draws = x[rng.integers(0, x.size, size=(resamples, x.size))]
    if is_proportion(x, n_test):
        n = int(round(n_test))
        draws = rng.binomial(n, draws) / n
    return draws.mean(axis=1)


def bootstrap_interval(
    scores, n_test: float, resamples: int, confidence: float, rng: np.random.Generator
) -> tuple[float, float]:
    """The central ``confidence`` percentile interval of ``bootstrap_means`` ((nan, nan) without scores)."""
    means = bootstrap_means(scores, n_test, resamples, rng)
    if not np.isfinite(means).any():
        return math.nan, math.nan
    a = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(means, [a, 1.0 - a])
    return float(lo), float(hi)


def _edge(lr: float, tried: list[float]) -> str:
    if len(tried) < 2:
        return ""
    return "lowest tried" if lr == min(tried) else "highest tried" if lr == max(tried) else ""


def _config_lr(resolved: dict, experiment: str, mixer: str) -> float | None:
    lr = (((resolved or {}).get(experiment) or {}).get(mixer) or {}).get("train", {}).get("lr")
    return float(lr) if isinstance(lr, (int, float)) else None


def cell_scores(cells: pd.DataFrame, proto: dict, resolved: dict | None = None) -> pd.DataFrame:
    """One row per (experiment, mixer) (``SCORE_COLUMNS``) from ``inputs.cell_rows``: the lrs tried, the
    chosen lr, the mean test score over its seeds and its bootstrap interval, n_params (mean over the
    cell's leaves) and param_gap = n_params / (the task's median over mixers) - 1."""
    out = []
    for (exp, mixer), rows in cells.groupby(["experiment", "mixer"], sort=False):
        setting = score_setting(proto, exp)
        lr, chosen_on = choose_lr(rows, setting, _config_lr(resolved, exp, mixer))
        at = rows[np.isclose(rows["lr"].to_numpy(dtype=float), lr, rtol=1e-12, atol=0.0)]
        scores = at["score"].to_numpy(dtype=float)
        n_test = float(at["n_test"].iloc[0])
        rng = rng_for(proto["seed"], exp, mixer)
        lo, hi = bootstrap_interval(scores, n_test, proto["bootstrap"], proto["confidence"], rng)
        tried = sorted(rows["lr"].unique().tolist())
        finite = scores[np.isfinite(scores)]
        out.append(
            {
                "experiment": exp,
                "label": setting["label"],
                "mixer": mixer,
                "mixer_name": rows["mixer_name"].iloc[0],
                "metric": setting["metric"],
                "higher_is_better": setting["higher_is_better"],
                "lrs": tried,
                "lr": lr,
                "chosen_on": chosen_on,
                "edge": _edge(lr, tried),
                "n_seeds": int(finite.size),
                "score": float(finite.mean()) if finite.size else math.nan,
                "lo": lo,
                "hi": hi,
                "n_test": n_test,
                "n_params": float(rows["n_params"].mean()),
            }
        )
    df = pd.DataFrame(out, columns=[c for c in SCORE_COLUMNS if c != "param_gap"])
    median = df.groupby("experiment", sort=False)["n_params"].transform("median")
    df["param_gap"] = df["n_params"] / median - 1.0
    return df[SCORE_COLUMNS]


def rank_task(scores: pd.DataFrame) -> pd.DataFrame:
    """``scores`` of one task plus rank, rank_best (= rank), rank_worst and n_ranked (see the module doc);
    a mixer without a score gets NaN ranks."""
    df = scores.copy()
    ok = np.isfinite(df["score"].to_numpy(dtype=float))
    lo, hi = df["lo"].to_numpy(dtype=float)[ok], df["hi"].to_numpy(dtype=float)[ok]
    if df["higher_is_better"].iloc[0]:
        better = lo[None, :] > hi[:, None]  # better[i, j]: j strictly better than i
    else:
        better = hi[None, :] < lo[:, None]
    n = int(ok.sum())
    best = 1 + better.sum(axis=1)
    worst = n - better.sum(axis=0)  # column sums: how many i that j (here: each mixer) beats
    for col, v in (("rank", best), ("rank_best", best), ("rank_worst", worst)):
        df[col] = math.nan
        df.loc[ok, col] = v
    df["n_ranked"] = n
    return df


def ranks(scores: pd.DataFrame) -> pd.DataFrame:
    """``rank_task`` over every task of ``cell_scores``."""
    parts = [rank_task(g) for _, g in scores.groupby("experiment", sort=False)]
    return pd.concat(parts, ignore_index=True)


def at_chosen(cells: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """The leaves (rows of ``cells``) at each (experiment, mixer)'s chosen lr."""
    pick = scores[["experiment", "mixer", "lr"]].rename(columns={"lr": "chosen_lr"})
    df = cells.merge(pick, on=["experiment", "mixer"], how="inner")
    keep = np.isclose(df["lr"].to_numpy(dtype=float), df["chosen_lr"].to_numpy(dtype=float), rtol=1e-12, atol=0.0)
    return df[keep].drop(columns="chosen_lr").reset_index(drop=True)


def scored(spec: dict) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """(the leaves' rows, ``cell_scores`` of them, the protocol) of an artefact's spec."""
    proto = protocol(spec)
    cells = cell_rows(spec)
    return cells, cell_scores(cells, proto, spec.get("resolved")), proto
