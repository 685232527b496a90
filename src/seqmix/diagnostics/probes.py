"""Which probe the diagnose stage runs for a task: the diagnostics layer measures a task's models, so the
table lives here (tasks never import diagnostics).

A task with a probe of its own (``PROBES``) gets it; every other task with a test set gets the influence
diagnostic (``influence``): ||d h_anchor / d x_{anchor - l}|| against the lag l, the same estimator for every
model, with its exponential and power-law fits and the effective memory length.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from ..tasks.base import Task
from ..tasks.lag_sensitivity import LagSensitivity
from .influence import influence_of
from .lag_sensitivity import diagnose as lag_sensitivity

# task class -> probe(task, model, seed) -> {"rows": [...], "metrics": {name: [(step, value)]}}
PROBES: dict[type, Callable[..., dict]] = {LagSensitivity: lag_sensitivity}

# the influence diagnostic's sample: enough examples for bootstrap intervals, few probes (each is a backward pass)
INFLUENCE_EXAMPLES = 16
INFLUENCE_PROBES = 4
# influence_of's keys -> the quantity names of the diagnose rows (value, and lo/hi where it has an interval)
SCALARS = {
    "exp_rate": "influence_exp_rate",
    "power": "influence_power",
    "effective_memory": "effective_memory",
    "best_fit_power": "influence_best_fit",
    "n_examples": "influence_n_examples",
}


def lacks_probe(task_cls: type) -> str | None:
    """Why no probe can measure ``task_cls``'s models (None when one can)."""
    if any(issubclass(task_cls, c) for c in PROBES):
        return None
    if task_cls.test_set is Task.test_set:
        return "it has no probe of its own (PROBES) and no test_set() for the influence diagnostic"
    return None


def diagnose(task, model: torch.nn.Module, seed: int) -> dict:
    """The diagnose stage's measurement of ``model`` for ``task`` (its registered probe, else ``influence``)."""
    for cls, probe in PROBES.items():
        if isinstance(task, cls):
            return probe(task, model, seed)
    return influence(task, model, seed)


def influence(task, model: torch.nn.Module, seed: int) -> dict:
    """Rows ``quantity, lag, value, lo, hi``: quantity ``influence`` per lag (the mean profile), then one row per
    scalar of ``SCALARS`` (lag empty; lo/hi its 95% bootstrap interval where it has one). Metrics: the scalars."""
    anchors = task.influence_anchors(INFLUENCE_EXAMPLES)
    out = influence_of(task, model, n_examples=INFLUENCE_EXAMPLES, probes=INFLUENCE_PROBES, seed=seed, anchor=anchors)
    nan = math.nan
    rows = [
        {"quantity": "influence", "lag": int(l), "value": float(v), "lo": nan, "hi": nan}
        for l, v in zip(out["profile"]["lags"], out["profile"]["influence"])
    ]
    for quantity, key in SCALARS.items():
        rows.append(
            {
                "quantity": quantity,
                "lag": nan,
                "value": out[key],
                "lo": out.get(f"{key}_lo", nan),
                "hi": out.get(f"{key}_hi", nan),
            }
        )
    metrics = {f"influence/{q}": [(0, float(out[k]))] for q, k in SCALARS.items() if math.isfinite(out[k])}
    return {"rows": rows, "metrics": metrics}
