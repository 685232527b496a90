"""The row format of theory_checks/summary.csv (seqmix.papers.sessa.theory_checks) and the slope the spec's
reference tables use."""

from __future__ import annotations

import math

import numpy as np

PARAMS = ("gamma", "beta", "tau", "k", "delta", "lag")
COLUMNS = ("check", "quantity", *PARAMS, "value", "predicted")


def row(check: str, quantity: str, value: float, predicted: float | str = "", **params) -> dict:
    """One measured number of a theory check; ``predicted``: the law's value, or '' where it gives none."""
    unknown = set(params) - set(PARAMS)
    if unknown:
        raise TypeError(f"row({check}, {quantity}): unknown parameters {sorted(unknown)}")
    # 12 significant digits: the law's value without float noise (gamma - 1 = -0.30000000000000004)
    pred = "" if predicted == "" else float(f"{float(predicted):.12g}")
    return {
        "check": check,
        "quantity": quantity,
        **{p: params.get(p, "") for p in PARAMS},
        "value": float(value),
        "predicted": pred,
    }


def slope(y: np.ndarray, l0: int, l1: int) -> float:
    """The log-log slope of |y[l]| between lags l0 and l1 (two points, as the spec's tables measure it)."""
    return math.log(abs(y[l1]) / abs(y[l0])) / math.log(l1 / l0)


def semilog_slope(y: np.ndarray, l0: int, l1: int) -> float:
    """The slope of ln|y[l]| against l between l0 and l1."""
    return math.log(abs(y[l1]) / abs(y[l0])) / (l1 - l0)
