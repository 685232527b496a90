"""Which probe the diagnose stage runs for a task: the diagnostics layer measures a task's models, so the
table lives here (tasks never import diagnostics)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from ..tasks.lag_sensitivity import LagSensitivity
from .lag_sensitivity import diagnose as lag_sensitivity

# task class -> probe(task, model, seed) -> {"rows": [...], "metrics": {name: [(step, value)]}}
PROBES: dict[type, Callable[..., dict]] = {LagSensitivity: lag_sensitivity}


def diagnose(task, model: torch.nn.Module, seed: int) -> dict:
    """The diagnose stage's measurement of ``model`` for ``task`` (the probe registered for its class)."""
    for cls, probe in PROBES.items():
        if isinstance(task, cls):
            return probe(task, model, seed)
    known = ", ".join(c.__name__ for c in PROBES)
    raise TypeError(f"no diagnose probe for task {type(task).__name__}; tasks with one: {known}")
