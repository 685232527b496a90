"""A damaged ``tracking-clock.json`` (the step times a training leaf keeps across a kill) is named, started
afresh and written again (issue 26, item 8). On main ``StepClock`` read it with a bare ``json.load``: a
truncated or garbled clock failed every rerun of the leaf with a JSONDecodeError naming no file."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from seqmix.tracking import buffer as tb

DAMAGE = {
    "truncated": lambda text: text[: len(text) // 3],
    "empty": lambda text: "",
    "binary": lambda text: "\udcff\x00garbage",
    "not_an_object": lambda text: "[1, 2, 3]",
    "steps_not_numbers": lambda text: json.dumps({"config_hash": "h1", "start_ms": 5, "steps": {"10": "soon"}}),
    "start_missing": lambda text: json.dumps({"config_hash": "h1", "steps": {}}),
    "infinite_time": lambda text: '{"config_hash": "h1", "start_ms": Infinity, "steps": {}}',
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_clock_is_named_started_afresh_and_rewritten(damage, tmp_path, caplog):
    path = tmp_path / "tracking-clock.json"
    first = tb.StepClock(path, "h1", resuming=False)
    first.tick(10)
    path.write_bytes(DAMAGE[damage](path.read_text()).encode("utf-8", "surrogateescape"))
    with caplog.at_level(logging.WARNING, logger="seqmix.tracking.buffer"):
        clock = tb.StepClock(path, "h1", resuming=True)
    assert f"{path}: unreadable" in caplog.text and "starts afresh" in caplog.text
    assert clock.at(10, -1) == -1 and clock.last_ms() is None
    # rewritten at once: a resume that logs no step (the final checkpoint found) would have left it damaged
    assert json.loads(path.read_text()) == {"config_hash": "h1", "start_ms": clock.start_ms, "steps": {}}


def test_another_configs_clock_is_replaced_at_once(tmp_path):
    path = tmp_path / "tracking-clock.json"
    tb.StepClock(path, "old", resuming=False).tick(10)
    clock = tb.StepClock(path, "new", resuming=True)
    assert json.loads(path.read_text())["config_hash"] == "new" and clock.at(10, -1) == -1


def test_the_train_stage_resumes_past_a_truncated_clock(tmp_path, caplog):
    """The documented path: a leaf killed after its final checkpoint but before its marker, its clock cut
    short (a kill mid-write on a filesystem without atomic rename, a bad disk). The rerun of the train stage
    warns naming the clock, finishes the leaf from its checkpoint, and leaves a readable clock."""
    from seqmix.config.leaves import Leaf, cell_run_config
    from seqmix.pipeline import stages
    from seqmix.results import leaf_marker

    cfg = {
        "task": {"name": "rotation_teacher", "k": 4, "n": 8, "rho": 1.0, "test_size": 32, "test_seed": 1},
        "model": {"name": "bare", "mixer": {"name": "factorized_linear_attention", "heads": 2, "r": None}},
        "train": {"optimizer": "adam", "lr": 0.01, "schedule": "cosine", "steps": 20, "batch": 16,
                  "checkpoint_every": 10, "log_every": 5, "dtype": "float32"},
        "eval": {},
        "seed": 0,
    }  # fmt: skip
    leaf = Leaf("heads", "exp1", "k4", "H2", 0, dict(cfg, paper="heads", experiment="exp1", variant="k4", point="H2"))
    settings = {"results": str(tmp_path), "tracking": {"uri": "none"}}
    run = cell_run_config("heads", "exp1", "k4-0", [leaf], "tiny", settings)
    first = stages.run_stage("train", run)
    out = Path(run["leaves"][0]["out_dir"])
    clock = out / "tracking-clock.json"
    assert (out / "checkpoint.pt").exists() and json.loads(clock.read_text())["steps"]
    leaf_marker(out, "train").unlink()  # killed before the marker: the rerun resumes from the checkpoint
    clock.write_text(clock.read_text()[:25])
    with caplog.at_level(logging.WARNING, logger="seqmix.tracking.buffer"):
        again = stages.run_stage("train", run)
    assert f"{clock}: unreadable (JSONDecodeError" in caplog.text
    assert again["leaves"][0]["resumed_from"] == 20, again  # from the final checkpoint: nothing trained twice
    assert again["leaves"][0]["final_train_loss"] == first["leaves"][0]["final_train_loss"]
    assert json.loads(clock.read_text())["config_hash"] == run["leaves"][0]["hash"]
