"""The diagnose stage's default probe (diagnostics.probes.influence) and the evaluate stage's validation
metrics (Task.validate), on tiny tasks."""

from __future__ import annotations

import math

import torch

from seqmix import registry
from seqmix.diagnostics.probes import SCALARS, diagnose, lacks_probe
from seqmix.models import build_model
from seqmix.tasks.base import Task


def _built(name):
    cls = registry.get_task(name)
    task = cls(**cls.example_options)
    torch.manual_seed(0)
    return task, build_model(cls.example_model, task).eval()


def test_every_task_with_a_test_set_gets_the_influence_rows():
    task, model = _built("lra_listops")
    out = diagnose(task, model, seed=0)
    profile = [r for r in out["rows"] if r["quantity"] == "influence"]
    scalars = {r["quantity"]: r for r in out["rows"] if r["quantity"] != "influence"}
    assert [r["lag"] for r in profile] == list(range(len(profile))) and len(profile) > 1
    assert set(scalars) == set(SCALARS) and all(math.isnan(r["lag"]) for r in scalars.values())
    assert scalars["n_examples"]["value"] > 0
    # right-padded ListOps: the anchor is each row's last real token, so no lag reaches past the longest row
    lengths = (task.test_set()[0][: int(scalars["n_examples"]["value"])] != 0).sum(-1)
    assert len(profile) == int(lengths.max())
    assert lacks_probe(type(task)) is None and lacks_probe(Task) is not None


def test_validation_metrics_are_evaluate_on_the_val_split():
    task, model = _built("lra_listops")
    val = task.validate(model)
    assert set(val) == {f"val_{k}" for k in task.evaluate(model)}
    task.eval_split = "val"
    assert val == {f"val_{k}": v for k, v in task.evaluate(model).items()}
