"""One parent run per experiment (tracking.buffer.experiment_key): train runs name it, the claims step writes it
with the experiment's summary, and the store nests the train runs under it whichever is written first."""

from __future__ import annotations

import sqlite3

from seqmix.tracking import buffer as tracking_buffer
from seqmix.tracking import runs as tracking


def test_train_runs_are_nested_under_their_experiments_parent(tmp_path):
    results = tmp_path / "results"
    uri = f"sqlite:///{results / 'mlflow.db'}"
    assert tracking.init_store(uri, ["toy"], results) is not None
    paper_dir = results / "tiny" / "toy"
    t = tracking_buffer.now_ms()
    for exp in ("e1", "e2"):
        rec = tracking_buffer.buffer_record(
            key=f"{exp}hash.train",
            experiment="toy",
            run_name=f"{exp}/leaf",
            tags={"stage": "train"},
            params={"lr": 0.1},
            metrics={"train_loss": [(1, 0.5)]},
            start_ms=t,
            end_ms=t + 10,
            parent_key=tracking_buffer.experiment_key("toy", "tiny", exp),
        )
        tracking_buffer.write_buffer(paper_dir / exp / "leaf" / "tracking-train.jsonl", [rec])
    summary = paper_dir / "e1" / "summary.csv"
    summary.write_text("a\n1\n")
    spec = {"paper": "toy", "scale": "tiny", "results": str(results), "paper_dir": str(paper_dir)}
    spec |= {"tracking": {"uri": uri}, "inputs": {"summaries": {"e1": str(summary), "e2": str(paper_dir / "none")}}}
    tracking.log_paper_artefacts(spec, [], {"rule": "claims"}, t)
    con = sqlite3.connect(results / "mlflow.db")
    tag = lambda key, name: dict(
        con.execute(
            "select r.name, t.value from runs r join tags t on t.run_uuid = r.run_uuid "
            "where t.key = ? and r.lifecycle_stage = 'active'",
            (key,),
        ).fetchall()
    ).get(name)
    ids = dict(con.execute("select name, run_uuid from runs where lifecycle_stage = 'active'").fetchall())
    assert {"e1@tiny", "e2@tiny", "e1/leaf", "e2/leaf", "artefacts@tiny"} <= set(ids)
    for exp in ("e1", "e2"):
        assert tag("mlflow.parentRunId", f"{exp}/leaf") == ids[f"{exp}@tiny"]
        assert tag("seqmix.kind", f"{exp}@tiny") == "experiment"


def test_an_experiments_parent_spans_its_runs(tmp_path):
    """Guards: every parent run showed the claims step's replay time (about 1 s) as its duration."""
    results = tmp_path / "results"
    uri = f"sqlite:///{results / 'mlflow.db'}"
    assert tracking.init_store(uri, ["toy"], results) is not None
    paper_dir = results / "tiny" / "toy"
    parent = tracking_buffer.experiment_key("toy", "tiny", "e1")
    for i, (start, end) in enumerate([(1_000_000, 1_005_000), (1_002_000, 1_090_000)]):
        rec = tracking_buffer.buffer_record(
            key=f"h{i}.train",
            experiment="toy",
            run_name=f"e1/leaf{i}",
            tags={"stage": "train"},
            params={},
            metrics={},
            start_ms=start,
            end_ms=end,
            parent_key=parent,
        )
        tracking_buffer.write_buffer(paper_dir / "e1" / f"leaf{i}" / "tracking-train.jsonl", [rec])
    spec = {"paper": "toy", "scale": "tiny", "results": str(results), "paper_dir": str(paper_dir)}
    spec |= {"tracking": {"uri": uri}, "inputs": {"summaries": {"e1": str(paper_dir / "none")}}}
    tracking.log_paper_artefacts(spec, [], {"rule": "claims"}, tracking_buffer.now_ms())
    con = sqlite3.connect(results / "mlflow.db")
    span = con.execute("select start_time, end_time from runs where name = 'e1@tiny'").fetchone()
    assert span == (1_000_000, 1_090_000)
