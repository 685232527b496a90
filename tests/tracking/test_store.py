"""Replaying buffers into an embedded (SQLite) MLflow store: kills during ingest, duplicates, parent links,
bad lines, the runs' own times, relative artifacts, the experiment kind, the git commit and outages."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time

import pytest

from seqmix.tracking import buffer as tb
from seqmix.tracking import runs as tracking
from seqmix.tracking import store as tracking_store

pytestmark = pytest.mark.timeout(300)


def _write(results, name: str, *records) -> object:
    path = results / "heads" / name
    tb.write_buffer(path, list(records))
    return path


def _rec(key: str, parent: str | None = None, **kw) -> dict:
    base = dict(
        key=key,
        experiment="heads",
        run_name=f"exp1/{key}@tiny",
        tags={"rule": key.split(".")[-1]},
        params={"train.lr": 0.01, "seed": 0},
        metrics={"train_loss": [(10, 1.0, 1_700_000_001_000), (20, 0.5, 1_700_000_002_000)]},
        start_ms=1_700_000_000_000,
        end_ms=1_700_000_003_000,
        parent_key=parent,
    )
    base.update(kw)
    return tb.buffer_record(**base)


def _runs(uri: str, view=None):
    mlf = tracking_store.client(uri)
    exp = mlf.get_experiment_by_name("heads")
    kw = {"run_view_type": view} if view else {}
    return mlf, exp, mlf.search_runs([exp.experiment_id], **kw)


def test_a_kill_during_ingest_leaves_nothing_a_reingest_does_not_repair(store, monkeypatch):
    """Guards: the fingerprint tag was written at create_run, before params and metrics, so a kill after
    the run was created left an empty RUNNING run that every later replay skipped as complete."""
    uri, results = store
    buf = _write(results, "tracking-train.jsonl", _rec("a.train"))

    def killed(*a, **k):
        raise KeyboardInterrupt("killed during ingest")

    monkeypatch.setattr(tracking_store, "log_points", killed)
    with pytest.raises(KeyboardInterrupt):
        tracking.ingest([buf], uri, results)
    mlf, _, runs = _runs(uri)
    assert len(runs) == 1 and runs[0].info.status == "RUNNING"
    assert tracking_store.FINGERPRINT_TAG not in runs[0].data.tags  # provisional: a replay must replace it
    monkeypatch.undo()
    counts = tracking.ingest([buf], uri, results)
    assert counts == {"created": 1, "skipped": 0, "replaced": 1, "superseded": 0, "bad_lines": 0}
    mlf, _, runs = _runs(uri)
    assert len(runs) == 1 and runs[0].info.status == "FINISHED"
    assert [m.value for m in mlf.get_metric_history(runs[0].info.run_id, "train_loss")] == [1.0, 0.5]
    assert tracking.ingest([buf], uri, results)["skipped"] == 1


def test_a_truncated_duplicate_of_a_key_is_removed(store):
    """Guards: a live run killed and resumed left a second, truncated run of the same leaf beside the
    complete one; ingest skipped the key because one run had the fingerprint, keeping both."""
    uri, results = store
    rec = _rec("a.train")
    tracking_store.init_experiments(uri, ["heads"], results)
    mlf, exp, _ = _runs(uri)
    stale = mlf.create_run(exp.experiment_id, run_name=rec["run_name"], tags={tracking_store.KEY_TAG: "a.train"})
    tracking_store.log_points(mlf, stale.info.run_id, {"train_loss": [[10, 1.0, 1]]}, None)
    buf = _write(results, "tracking-train.jsonl", rec)
    assert tracking.ingest([buf], uri, results)["created"] == 1
    mlf, _, runs = _runs(uri)
    assert [r.info.status for r in runs] == ["FINISHED"]
    assert [m.step for m in mlf.get_metric_history(runs[0].info.run_id, "train_loss")] == [10, 20]


def test_replay_links_children_whatever_the_order(store):
    """Guards: replay (sorted buffer paths: diagnose, evaluate, train) created children before parents and
    dropped their mlflow.parentRunId; a parent ingested later or rewritten never adopted them."""
    uri, results = store
    child = _write(results, "a/tracking-evaluate.jsonl", _rec("a.evaluate", parent="a.train"))
    parent = _write(results, "a/tracking-train.jsonl", _rec("a.train"))
    tracking.ingest([child, parent], uri, results)  # one replay, children listed first
    late = _write(results, "b/tracking-evaluate.jsonl", _rec("b.evaluate", parent="b.train"))
    tracking.ingest([late], uri, results)  # a child alone, its parent not yet in MLflow
    tracking.ingest([_write(results, "b/tracking-train.jsonl", _rec("b.train"))], uri, results)
    _, _, runs = _runs(uri)
    by_key = {r.data.tags[tracking_store.KEY_TAG]: r for r in runs}
    for leaf in "ab":
        assert (
            by_key[f"{leaf}.evaluate"].data.tags[tracking_store.PARENT_RUN_TAG] == by_key[f"{leaf}.train"].info.run_id
        )


def test_a_bad_line_is_skipped_reported_and_the_rest_replays(store, caplog):
    """Guards: one garbled buffer line made ingest raise and nothing of any buffer was synced."""
    uri, results = store
    good = _write(results, "a/tracking-train.jsonl", _rec("a.train"))
    bad = results / "heads" / "b" / "tracking-train.jsonl"
    bad.parent.mkdir(parents=True)
    bad.write_text(json.dumps(_rec("b.train"))[:-20] + "\n" + json.dumps(_rec("c.train")) + "\n")
    counts = tracking.ingest([bad, good], uri, results)
    assert counts == {"created": 2, "skipped": 0, "replaced": 0, "superseded": 0, "bad_lines": 1}
    assert f"{bad}:1: not JSON" in caplog.text


def test_runs_read_like_the_training_they_record(store):
    """Guards: run start/end were the ingest's (60-484 ms runs), every metric point had the ingest's
    timestamp, the experiment opened as a GenAI app, and evaluation runs had no params."""
    uri, results = store
    rec = _rec("a.train")
    tracking.ingest([_write(results, "tracking-train.jsonl", rec)], uri, results)
    mlf, exp, (run,) = _runs(uri)
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"
    assert (run.info.start_time, run.info.end_time) == (rec["start_ms"], rec["end_ms"])
    hist = mlf.get_metric_history(run.info.run_id, "train_loss")
    assert [(m.step, m.timestamp) for m in hist] == [(s, t) for s, _, t in rec["metrics"]["train_loss"]]
    assert run.data.params == {"train.lr": "0.01", "seed": "0"}
    assert run.info.run_name == rec["run_name"]


def test_artifacts_are_stored_without_absolute_paths(store, tmp_path):
    """Guards: experiments and buffers held absolute paths, so moving results/ broke the UI and replays."""
    uri, results = store
    (results / "heads" / "claims.md").parent.mkdir(parents=True, exist_ok=True)
    (results / "heads" / "claims.md").write_text("# claims\n")
    rec = _rec("heads.tiny.artefacts", artifacts=tb.relative_artifacts([results / "heads" / "claims.md"], results))
    buf = _write(results, "tracking-artefacts.jsonl", rec)
    moved = tmp_path / "moved"
    shutil.move(results, moved)  # the buffer and the store move together; the replay still finds the file
    counts = tracking.ingest([moved / "heads" / "tracking-artefacts.jsonl"], f"sqlite:///{moved / 'mlflow.db'}", moved)
    assert counts["created"] == 1 and buf.name == "tracking-artefacts.jsonl"
    _, exp, (run,) = _runs(f"sqlite:///{moved / 'mlflow.db'}")
    assert exp.artifact_location == "mlflow-artifacts:/heads"
    assert run.info.artifact_uri.startswith("mlflow-artifacts:/heads/")
    local = tracking_store.artifact_root(moved) / run.info.artifact_uri[len("mlflow-artifacts:/") :] / "claims.md"
    assert local.read_text() == "# claims\n"


def test_the_git_commit_is_mlflows_own_tag_and_absent_outside_a_checkout(tmp_path):
    """Guards: the commit was a custom 'git_sha' tag (never in mlflow.source.git.commit), 'unknown' outside git."""
    head = subprocess.run(
        ["git", "-C", str(tracking_store.__file__.rsplit("/", 1)[0]), "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    tags = tracking.run_tags(rule="train")
    assert tags.get("mlflow.source.git.commit") == (head or None)
    assert tracking.git_commit(tmp_path) is None


def test_unique_run_names():
    """Guards: run names like 'train/k2/-/seed0' repeated across experiments and scales of a paper."""
    names = {
        tracking.run_name(e, "k2/-/seed0", st, sc)
        for e in ("exp1", "exp2")
        for st in ("train", "evaluate")
        for sc in ("tiny", "cpu")
    }
    assert len(names) == 8


def test_mlflow_init_with_the_server_down_finishes_fast_and_does_not_fail(tmp_path):
    """Guards: with the tracking server down, mlflow-init hung ~4 minutes in MLflow's retries and failed,
    failing the whole DAG."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    out = tmp_path / "init.json"
    t0 = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "seqmix",
            "mlflow-init",
            "--uri",
            f"http://127.0.0.1:{port}",
            "--results",
            str(tmp_path),
            "--papers",
            "heads",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert time.monotonic() - t0 < 60
    assert json.loads(out.read_text())["reachable"] is False
    assert "unreachable" in proc.stderr


def test_a_config_key_mlflow_refuses_is_kept_whole_and_the_run_ingests(store):
    """Guards: b2s6 E2/E6 name parameter groups by glob (``train.param_hints: {"*.mixer.*.A": {lr: ...}}``);
    flattened, ``train.param_hints.*.mixer.*.A.lr`` is a key MLflow refuses, so the whole paper's ingest failed
    (its runs never reached MLflow). The glob dict now stays one JSON param under its parent's key."""
    uri, results = store
    cfg = {"train": {"lr": 0.01, "param_hints": {"*.mixer.*.A": {"lr": 0.001}}, "empty": {}}, "bad[key]": 1}
    params = tb.flatten(cfg)
    assert params == {"train.lr": 0.01, "train.param_hints": {"*.mixer.*.A": {"lr": 0.001}}, "bad_key_": 1}
    rec = _rec("a.train", params=params)
    tracking.ingest([_write(results, "tracking-train.jsonl", rec)], uri, results)
    _, _, (run,) = _runs(uri)
    assert json.loads(run.data.params["train.param_hints"]) == {"*.mixer.*.A": {"lr": 0.001}}
