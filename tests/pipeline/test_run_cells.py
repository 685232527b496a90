"""scripts/run_cells.py: the stages of written cells outside Snakemake (a lent GPU box). The run configs are
never edited (a device copy is what the stages read), finished cells are skipped, and a plan whose first
cells all fail stops starting more."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

from tests.conftest import ROOT

SCRIPT = ROOT / "scripts" / "run_cells.py"


def _module():
    spec = importlib.util.spec_from_file_location("run_cells", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_device_copy_leaves_the_run_config_alone(tmp_path):
    run = tmp_path / "results" / "cpu" / "heads" / "run" / "exp1.a-0.json"
    run.parent.mkdir(parents=True)
    original = {"cell": "a-0", "runtime": {"device": "cpu", "amp": False}, "leaves": []}
    run.write_text(json.dumps(original))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    copy = _module()._device_copy(str(run), "cuda", scratch)
    assert json.loads(run.read_text()) == original
    assert json.loads(open(copy).read())["runtime"] == {"device": "cuda", "amp": False}
    assert copy.endswith("heads.exp1.a-0.json")  # one name per paper, experiment and cell
    assert _module()._device_copy(str(run), None, scratch) == str(run)


def _cell(tmp_path, name, done=False):
    marker = tmp_path / "cells" / f"{name}.train.json"
    if done:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text("{}")
    return {
        "key": "p:e",
        "run": str(tmp_path / "run" / f"{name}.json"),  # missing: the stage fails at once
        "stages": ["train"],
        "markers": [str(marker)],
        "logs": [str(tmp_path / "logs" / f"{name}.log")],
    }


def test_failures_are_reported_done_cells_skipped_and_a_failing_plan_stops(tmp_path):
    cells = [_cell(tmp_path, "done", done=True)] + [_cell(tmp_path, f"c{i}") for i in range(5)]
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(cells))
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "run", "--plan", str(plan), "--workers", "1", "--give-up-after", "2"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert "5 of 6 cells to run" in out
    reports = [line for line in out.splitlines() if line.startswith("[")]
    assert len(reports) == 2 and all("train failed" in line for line in reports) and "starting no more" in out
    assert "3 not started" in out
    assert (tmp_path / "logs" / "c0.log").read_text()  # the stage's stderr is kept where Snakemake puts it
