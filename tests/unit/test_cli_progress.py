"""`seqmix progress`: the status of every leaf (evaluated / trained / in training / not started) from the
files the stages write, with chosen metrics of the evaluated leaves."""

from __future__ import annotations

import pytest
import torch

from seqmix.cli import main
from seqmix.io import write_json


def test_progress_reports_each_leaf_state(tmp_path, capsys):
    root = tmp_path / "results" / "tiny" / "p"  # results/<scale>/<paper> (seqmix.results); --scale defaults to tiny
    leaves = []
    for name in ("done", "trained", "running", "stale", "fresh"):
        out = root / "e1" / name
        out.mkdir(parents=True)
        leaves.append(
            {"id": f"{name}/-/seed1", "hash": f"h-{name}", "out_dir": str(out), "config": {"train": {"steps": 100}}}
        )
    write_json(root / "run" / "e1.a-0.json", {"leaves": leaves})
    write_json(root / "e1" / "done" / "metrics.json", {"hash": "h-done", "metrics": {"cos_z1": 0.91234, "acc": 1}})
    write_json(root / "e1" / "trained" / "train.done.json", {"hash": "h-trained"})
    torch.save({"step": 40, "config_hash": "h-running"}, root / "e1" / "running" / "checkpoint.pt")
    torch.save({"step": 40, "config_hash": "another"}, root / "e1" / "stale" / "checkpoint.pt")
    main(["progress", "--results", str(tmp_path / "results"), "--paper", "p", "--metrics", "cos_z1,missing"])
    lines = {l.split(" | ")[0].strip("| "): l for l in capsys.readouterr().out.splitlines()[2:]}
    assert "evaluated" in lines["done/-/seed1"] and "0.9123 | —" in lines["done/-/seed1"]
    assert "| trained |" in lines["trained/-/seed1"]
    assert "training: step 40/100" in lines["running/-/seed1"]
    assert "stale checkpoint" in lines["stale/-/seed1"]
    assert "not started" in lines["fresh/-/seed1"]


def test_progress_without_run_configs_says_so(tmp_path):
    with pytest.raises(SystemExit, match="no run configs"):
        main(["progress", "--results", str(tmp_path), "--paper", "p"])
    write_json(tmp_path / "tiny" / "p" / "run" / "e1.a-0.json", {"leaves": []})
    with pytest.raises(SystemExit, match=r"no run configs under .*cpu"):  # another scale's run is not this one
        main(["progress", "--results", str(tmp_path), "--scale", "cpu", "--paper", "p"])
