"""`seqmix progress`: the status of every leaf (evaluated / trained / in training / not started) from the
files the stages write, with chosen metrics of the evaluated leaves."""

from __future__ import annotations

import pytest
import torch

from seqmix.cli.main import main
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
    main(["progress", "--results", str(tmp_path / "results"), "--paper", "p", "--metrics", "cos_z1,acc"])
    out = capsys.readouterr().out.splitlines()
    cells = [[c.strip() for c in line.strip().strip("|").split("|")] for line in out]
    assert cells[0] == ["leaf", "status", "cos_z1", "acc"]  # a markdown table (pandas + tabulate)
    rows = {c[0]: c[1:] for c in cells[2:]}
    assert rows["done/-/seed1"] == ["evaluated", "0.9123", "1"]
    assert rows["trained/-/seed1"] == ["trained", "", ""]
    assert rows["running/-/seed1"] == ["training: step 40/100", "", ""]
    assert rows["stale/-/seed1"] == ["stale checkpoint", "", ""]
    assert rows["fresh/-/seed1"] == ["not started", "", ""]
    # a metric no evaluated leaf has is a typo, named (before: a column of dashes)
    with pytest.raises(SystemExit, match=r"unknown metric 'cos_z': the evaluated leaves have acc, cos_z1; did"):
        main(["progress", "--results", str(tmp_path / "results"), "--paper", "p", "--metrics", "cos_z"])


def test_progress_without_run_configs_says_so(tmp_path):
    with pytest.raises(SystemExit, match="unknown paper 'p'"):  # no config, no results: a typo, not a run to come
        main(["progress", "--results", str(tmp_path), "--paper", "p"])
    write_json(tmp_path / "tiny" / "p" / "run" / "e1.a-0.json", {"leaves": []})
    with pytest.raises(SystemExit, match=r"no run configs under .*cpu"):  # another scale's run is not this one
        main(["progress", "--results", str(tmp_path), "--scale", "cpu", "--paper", "p"])


def test_progress_names_a_misspelt_paper_or_experiment(tmp_path, monkeypatch, root):
    """Before: 'no run configs ... (has the DAG written them yet?)' for a typo, as if the run were missing."""
    monkeypatch.chdir(root)
    with pytest.raises(SystemExit, match=r"unknown paper 'haeds' .*did you mean 'heads'\?"):
        main(["progress", "--results", str(tmp_path), "--paper", "haeds"])
    with pytest.raises(SystemExit, match=r"unknown experiment 'epx1' of heads \(experiments: exp1, exp2\); did you"):
        main(["progress", "--results", str(tmp_path), "--paper", "heads", "--experiment", "epx1"])
    with pytest.raises(SystemExit, match="has the DAG written them yet"):  # a real paper, not run yet
        main(["progress", "--results", str(tmp_path), "--paper", "heads"])


def test_where_prints_an_mlflow_command_that_runs_as_printed(tmp_path, capsys):
    import sys
    from pathlib import Path

    (tmp_path / "mlflow.db").write_bytes(b"")
    main(["where", "--results", str(tmp_path)])
    line = next(ln for ln in capsys.readouterr().out.splitlines() if "browse runs:" in ln)
    exe, *rest = line.split("browse runs: ", 1)[1].split()
    assert Path(exe).resolve() == (Path(sys.executable).parent / "mlflow").resolve() and Path(exe).exists()
    assert rest[:3] == ["ui", "--backend-store-uri", f"sqlite:///{tmp_path / 'mlflow.db'}"]
    assert rest[3:] == ["--artifacts-destination", str(tmp_path / ".mlflow" / "artifacts")]


def test_where_without_results_says_so(tmp_path, capsys):
    """Before: a bare 'seqmix: outputs' header, as if the run had made nothing."""
    with pytest.raises(SystemExit, match=r"no results of any scale \(tiny, cpu, paper\) under .*: run the DAG first"):
        main(["where", "--results", str(tmp_path / "results")])
    (tmp_path / "results" / "tiny").mkdir(parents=True)
    with pytest.raises(SystemExit, match=r"no results of scale cpu under "):
        main(["where", "--results", str(tmp_path / "results"), "--scale", "cpu"])
    main(["where", "--results", str(tmp_path / "results")])
    assert "scale tiny:" in capsys.readouterr().out


def test_ui_runs_the_venvs_mlflow_on_the_store(tmp_path, capsys):
    import sys
    from pathlib import Path

    with pytest.raises(SystemExit, match="mlflow.db does not exist: run the DAG first"):
        main(["ui", "--results", str(tmp_path), "--print"])
    (tmp_path / "mlflow.db").write_bytes(b"")
    main(["ui", "--results", str(tmp_path), "--port", "5077", "--print"])
    exe, *rest = capsys.readouterr().out.split()
    assert Path(exe).resolve() == (Path(sys.executable).parent / "mlflow").resolve()
    assert rest == ["ui", "--backend-store-uri", f"sqlite:///{tmp_path / 'mlflow.db'}",
                    "--artifacts-destination", str(tmp_path / ".mlflow" / "artifacts"), "--port", "5077"]  # fmt: skip
