"""The task contract (seqmix.tasks.base.Task), on every registered task built from its own ``example_options``
with a tiny model from its ``example_model``: batches follow the d_in/d_out/seq_len conventions, the loss is a
finite scalar, ``evaluate`` and the in-training probe give floats and leave the model's mode as they found it.
Also the shared evaluation loop (``Task.in_batches``/``Task.predict``) itself."""

from __future__ import annotations

import dataclasses
import inspect
import math

import numpy as np
import pytest
import torch

from seqmix import registry
from seqmix.config import memory
from seqmix.models import build_model
from seqmix.options import defaults
from seqmix.tasks.base import Task
from seqmix.training.work import StageWork

NAMES = registry.names("task")


def _build(name: str) -> Task:
    return registry.get_task(name)(**registry.get_task(name).example_options)


@pytest.mark.parametrize("name", NAMES)
def test_example_options_are_declared_and_valid(name):
    cls = registry.get_task(name)
    assert "example_options" in vars(cls) and "example_model" in vars(cls), f"{name}: declare both on the class"
    accepted = inspect.signature(cls).parameters
    assert set(cls.example_options) <= set(accepted), f"{name}: example_options names an unknown option"
    assert cls.example_model.get("name") in registry.names("model")


@pytest.mark.parametrize("name", NAMES)
def test_batch_loss_evaluate_on_a_tiny_model(name):
    torch.set_num_threads(1)
    cls = registry.get_task(name)
    task = _build(name)
    torch.manual_seed(0)
    model = build_model(cls.example_model, task)
    inputs = task.model_inputs()
    if StageWork.lacks(cls, "train") is None:
        x, y = task.batch(0, 0, 0, 3)
        first = x[0] if isinstance(x, tuple) else x
        assert len(first) == 3
        if isinstance(x, torch.Tensor):
            if "vocab_size" in inputs:  # token ids (B, [documents,] T), right- or left-padded up to seq_len
                assert x.dtype == torch.int64 and 0 <= int(x.min()) and int(x.max()) < inputs["vocab_size"]
                assert x.shape[-1] <= task.seq_len
            else:  # values (B, seq_len, d_in)
                assert x.is_floating_point() and x.shape[1:] == (task.seq_len, inputs["d_in"])
        x2, _ = task.batch(0, 0, 0, 3)  # a pure function of (seed, step, rank, size)
        assert all(
            torch.equal(a, b)
            for a, b in zip(x if isinstance(x, tuple) else (x,), x2 if isinstance(x2, tuple) else (x2,))
        )
        loss = task.loss(model(x), y)
        assert loss.ndim == 0 and math.isfinite(float(loss.detach()))
    for mode in (True, False):
        model.train(mode)
        if StageWork.lacks(cls, "evaluate") is None:
            out = task.evaluate(model)
            assert out and all(isinstance(k, str) and isinstance(v, float) for k, v in out.items()), out
        if task.probes_in_training():
            probe = task.diagnostics(model)
            assert probe and all(isinstance(v, float) for v in probe.values()), probe
        assert model.training is mode


class _Recorder(torch.nn.Module):
    """y = 2 x in float64; records each call's rows, mode and whether gradients were on."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor(2.0, dtype=torch.float64))
        self.calls: list[tuple[int, bool, bool]] = []

    def forward(self, x):
        self.calls.append((len(x), self.training, torch.is_grad_enabled()))
        return self.w * x


def test_predict_batches_in_order_in_eval_mode_without_gradients():
    model = _Recorder()
    x = torch.arange(7, dtype=torch.float64)[:, None] / 3
    out = Task.predict(model, x, 3)
    assert model.calls == [(3, False, False), (3, False, False), (1, False, False)]
    assert model.training and out.dtype == torch.float32 and not out.requires_grad
    assert torch.equal(out, (2 * x).float())
    model.calls.clear()
    kept = Task.predict(model, x, dtype=None)  # one call; the model's own dtype
    assert model.calls == [(7, False, False)] and kept.dtype == torch.float64 and torch.equal(kept, 2 * x)


def test_in_batches_restores_the_mode_when_a_step_fails():
    model = _Recorder().eval()
    assert Task.in_batches(model, 5, 2, lambda lo, hi: (lo, hi)) == [(0, 2), (2, 4), (4, 5)]

    def boom(lo, hi):
        raise RuntimeError("step failed")

    model.train()
    with pytest.raises(RuntimeError, match="step failed"):
        Task.in_batches(model, 5, 2, boom)
    assert model.training


def test_only_an_overridden_probe_counts():
    class Plain(Task):
        pass

    class Probed(Task):
        def diagnostics(self, model):
            return {"x": 1.0}

    assert not Plain.probes_in_training() and Plain().diagnostics(None) == {}
    assert Probed.probes_in_training()


def _tensor_bytes(obj, found: dict, depth: int = 0) -> None:
    """Every tensor and array reachable from ``obj`` through dicts, sequences, dataclasses and (at the top)
    the object's attributes, as {storage: bytes}: views of one storage count once."""
    if depth > 5:
        return
    if isinstance(obj, torch.Tensor):
        found[("torch", obj.untyped_storage().data_ptr())] = obj.untyped_storage().nbytes()
    elif isinstance(obj, np.ndarray):
        base = obj if obj.base is None else obj.base
        found[("numpy", id(base))] = getattr(base, "nbytes", obj.nbytes)
    elif isinstance(obj, dict):
        for v in obj.values():
            _tensor_bytes(v, found, depth + 1)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _tensor_bytes(v, found, depth + 1)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            _tensor_bytes(getattr(obj, f.name), found, depth + 1)
    elif depth == 0 and hasattr(obj, "__dict__"):
        _tensor_bytes(vars(obj), found, depth + 1)


@pytest.mark.parametrize("name", NAMES)
def test_memory_terms_cover_the_tensors_a_built_task_holds(name):
    """``Task.memory`` (what the config check sums before any job) is at least the bytes of the tensors the
    task holds and hands out, built from its example options: its data sets, every split as the model reads
    it, the test set and a batch of 3. A task that states no term would never be checked."""
    torch.set_num_threads(1)
    cls = registry.get_task(name)
    assert cls.memory, f"{name}: state the task's largest tensors in its class attribute `memory`"
    task = _build(name)
    found: dict = {}
    _tensor_bytes(task, found)
    if StageWork.lacks(cls, "train") is None:
        _tensor_bytes(task.batch(0, 0, 0, 3), found)
    if type(task).test_set is not Task.test_set:
        _tensor_bytes(task.test_set(), found)
    for split in ("train", "val", "test") if hasattr(task, "split_set") else ():
        _tensor_bytes(task.split_set(split), found)
    for lazy in ("data", "streams", "corpus"):  # data sets built on first use
        if isinstance(getattr(type(task), lazy, None), property):
            _tensor_bytes(getattr(task, lazy), found)
    held = sum(found.values())
    options = {**defaults(cls), **cls.example_options}
    stated = memory.total(cls.memory, options, {"task": dict(cls.example_options), "train": {"batch": 3}})
    assert held > 0 or name == "lag_sensitivity"  # its inputs are drawn by the diagnose probe, per length
    assert stated >= held, f"{name}: memory states {stated} bytes, the built task holds {held}"


def test_a_memory_term_naming_no_option_fails_at_class_definition():
    with pytest.raises(TypeError, match=r"'m' is neither an option of the task"):

        class Misspelt(Task):
            memory = {"rows": "n * m * 8"}

            def __init__(self, *, n: int = 2):
                pass

    with pytest.raises(TypeError, match=r"'data.rows' is neither"):

        class OtherRoot(Task):
            memory = {"rows": "n * data.rows"}

            def __init__(self, *, n: int = 2):
                pass
