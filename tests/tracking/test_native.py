"""MLflow as a native project: experiments described by their paper, MLflow's own source and user tags on
every run, and one current run per leaf (a rerun with another config supersedes the older run)."""

from __future__ import annotations

import getpass
import json
from pathlib import Path

import pytest

from seqmix.tracking import buffer as tb
from seqmix.tracking import runs as tracking
from seqmix.tracking import store as tracking_store
from tests.conftest import ROOT

from .test_store import _rec, _runs, _write

pytestmark = pytest.mark.timeout(300)


def test_experiments_are_described_by_their_paper_and_stay_model_training(store, tmp_path):
    """Guards: experiments had no description (the UI's experiment page was empty)."""
    uri, results = store
    note = tracking.paper_description(ROOT / "config" / "papers" / "heads.yaml")
    assert note and "How Many Heads Make an SSM?" in note and "arXiv 2512.15115" in note
    assert tracking.init_store(uri, ["heads"], results, {"heads": note})
    _, exp, _ = _runs(uri)
    assert exp.tags[tracking_store.NOTE_TAG] == note
    assert exp.tags[tracking_store.EXPERIMENT_KIND_TAG] == tracking_store.EXPERIMENT_KIND
    # an existing experiment takes a new description (a store made before descriptions existed, a new title)
    tracking.ingest([_write(results, "tracking-train.jsonl", _rec("a.train"))], uri, results, {"heads": "new"})
    _, exp, _ = _runs(uri)
    assert exp.tags[tracking_store.NOTE_TAG] == "new"
    paper = tmp_path / "untitled.yaml"
    paper.write_text("experiments: {}\n")
    assert tracking.paper_description(paper) is None
    assert tracking.paper_description(tmp_path / "missing.yaml") is None


def test_every_run_names_its_source_user_and_commit(store, monkeypatch):
    """Guards: runs showed 'Created by -' and 'Source -' (no mlflow.source.name, no mlflow.user)."""
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    tags = tracking.run_tags(rule="train", seed=0)
    assert tags["mlflow.source.name"] == "seqmix train"
    assert tags["mlflow.source.type"] == "LOCAL"
    assert tags["mlflow.user"] == getpass.getuser()
    assert tags.get("mlflow.source.git.commit") == tracking.git_commit()
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    assert tracking.run_tags(rule="evaluate")["mlflow.source.type"] == "JOB"
    assert tracking.run_tags(rule="evaluate")["mlflow.source.name"] == "seqmix evaluate"
    uri, results = store
    tracking.ingest([_write(results, "tracking-train.jsonl", _rec("a.train", tags=tags))], uri, results)
    _, _, (run,) = _runs(uri)
    for key in ("mlflow.source.name", "mlflow.source.type", "mlflow.user"):
        assert run.data.tags[key] == tags[key]


def test_a_rerun_with_another_config_supersedes_the_leafs_older_runs(store):
    """Guards: after one hyperparameter edit a leaf had several active runs of the same name (one per config
    hash) with nothing marking the current one."""
    uri, results = store
    name = "exp1/k2/-/seed0/train@tiny"
    old, new = _rec("old.train", run_name=name), _rec("new.train", run_name=name)
    old_eval = _rec("old.evaluate", parent="old.train", run_name="exp1/k2/-/seed0/evaluate@tiny")
    other = _rec("x.train", run_name="exp1/k4/-/seed0/train@tiny")  # another leaf: untouched
    tracking.ingest([_write(results, "a/tracking-train.jsonl", old, other)], uri, results)
    tracking.ingest([_write(results, "a/tracking-evaluate.jsonl", old_eval)], uri, results)
    counts = tracking.ingest([_write(results, "a/tracking-train.jsonl", new)], uri, results)
    assert counts["created"] == 1 and counts["superseded"] == 2  # the older train run and its evaluation
    mlf, exp, runs = _runs(uri)
    by_key = {r.data.tags[tracking_store.KEY_TAG]: r for r in runs}
    assert sorted(by_key) == ["new.train", "x.train"]  # the default (active) view: one current run per leaf
    assert tracking_store.SUPERSEDED_TAG not in by_key["new.train"].data.tags
    from mlflow.entities import ViewType

    deleted = {r.data.tags[tracking_store.KEY_TAG]: r for r in _runs(uri, ViewType.DELETED_ONLY)[2]}
    assert sorted(deleted) == ["old.evaluate", "old.train"]
    for r in deleted.values():
        assert r.data.tags[tracking_store.SUPERSEDED_TAG] == "true"
        assert r.data.tags[tracking_store.SUPERSEDED_BY_TAG] == by_key["new.train"].info.run_id
        assert r.info.status == "FINISHED"  # kept whole, restorable
    # a replay of the current buffer supersedes nothing more and keeps the current run
    assert tracking.ingest([results / "heads" / "a" / "tracking-train.jsonl"], uri, results)["superseded"] == 0
    assert {r.data.tags[tracking_store.KEY_TAG] for r in _runs(uri)[2]} == {"new.train", "x.train"}


def test_a_live_runs_end_supersedes_the_leafs_older_runs(store):
    """Guards: a run logged live to a server never superseded the leaf's run of the earlier config."""
    uri, results = store
    name = "exp1/k2/-/seed0/train@tiny"
    tracking.ingest([_write(results, "a/tracking-train.jsonl", _rec("old.train", run_name=name))], uri, results)
    mlf, exp, (old,) = _runs(uri)
    current = mlf.create_run(exp.experiment_id, run_name=name, tags={tracking_store.KEY_TAG: "new.train"})
    sid = current.info.run_id
    assert tracking_store.supersede_older(mlf, exp.experiment_id, name, "new.train", sid) == 1
    assert [r.info.run_id for r in _runs(uri)[2]] == [sid]
    assert mlf.get_run(old.info.run_id).data.tags[tracking_store.SUPERSEDED_BY_TAG] == sid


def test_dataset_records_name_the_data_its_origin_and_a_digest():
    task = {"name": "lra_text", "length": 64}
    real, sub = tb.dataset_record(task, 0, "imdb"), tb.dataset_record(task, 0, "procedural-zipf-text (substitute)")
    gen = tb.dataset_record({"name": "rotation_teacher"}, 0, None)
    assert (real["name"], real["source"], real["origin"]) == ("lra_text", "imdb", "real")
    assert sub["origin"] == "substitute" and gen["origin"] == "generated"
    assert "rotation_teacher" in gen["source"]
    assert real["digest"] == sub["digest"] != tb.dataset_record(task, 1, "imdb")["digest"]  # the seed draws the data
    assert real["digest"] != tb.dataset_record(dict(task, length=128), 0, "imdb")["digest"]


def test_a_training_run_logs_its_dataset_and_its_model(tmp_path, template_db):
    """Guards: training runs had no dataset lineage (the UI's 'Datasets None') and no trained model."""
    import shutil

    from seqmix.pipeline import stages

    from .test_server import small_run

    results = tmp_path / "results"
    results.mkdir()
    shutil.copy(template_db, results / "mlflow.db")
    uri = f"sqlite:///{results / 'mlflow.db'}"
    run = small_run(tmp_path, uri, steps=4, log_every=2, checkpoint_every=4)
    run["leaves"] = run["leaves"][:1]
    stages.run_stage("train", run)
    buf = Path(run["leaves"][0]["out_dir"]) / "tracking-train.jsonl"
    (rec,) = tb.read_buffer(buf)
    cfg = run["leaves"][0]["config"]
    assert rec["dataset"]["name"] == cfg["task"]["name"] == "rotation_teacher"
    assert rec["dataset"]["digest"] == tb.dataset_record(cfg["task"], cfg["seed"], None)["digest"]
    tracking.ingest([buf], uri, results)
    _, _, (mlrun,) = _runs(uri)
    note = mlrun.data.tags[tracking_store.NOTE_TAG]  # the run page's description (it read "No description")
    assert note.startswith("train of heads / exp1") and "Task rotation_teacher" in note and "4 training steps" in note
    (inp,) = mlrun.inputs.dataset_inputs
    assert (inp.dataset.name, inp.dataset.digest) == (rec["dataset"]["name"], rec["dataset"]["digest"])
    assert json.loads(inp.dataset.source)["tags"]["origin"] == rec["dataset"]["origin"]
    assert {t.key: t.value for t in inp.tags} == {"mlflow.data.context": "training"}
    model = Path(run["leaves"][0]["out_dir"]) / "model.pt"
    assert results / rec["model"] == model
    logged = tracking_store.artifact_root(results) / mlrun.info.artifact_uri[len("mlflow-artifacts:/") :] / "model"
    assert (logged / "model.pt").read_bytes() == model.read_bytes()
    assert (logged / "model.pt").stat().st_ino == model.stat().st_ino  # linked, not copied


def test_a_rerun_of_a_finished_leaf_keeps_the_trainings_duration(tmp_path):
    """Guards: a leaf re-run after it had finished (e.g. its run config rewritten) found its final checkpoint
    and trained nothing, yet its run ended at the rerun: a 3-step training showed a duration of 5.4 h."""
    import time

    from seqmix.pipeline import stages
    from seqmix.results import leaf_marker

    from .test_server import small_run

    run = small_run(tmp_path, f"sqlite:///{tmp_path / 'unused.db'}", steps=4, log_every=2, checkpoint_every=4)
    run["leaves"] = run["leaves"][:1]
    run["tracking"]["system_metrics"] = False
    out = Path(run["leaves"][0]["out_dir"])
    stages.run_stage("train", run)
    (first,) = tb.read_buffer(out / "tracking-train.jsonl")
    time.sleep(1.5)
    leaf_marker(out, "train").unlink()  # the leaf runs again, from its final checkpoint
    stages.run_stage("train", run)
    (again,) = tb.read_buffer(out / "tracking-train.jsonl")
    assert again["start_ms"] == first["start_ms"]
    # the last logged step of the attempt that trained (the first ended a few ms after it), not the rerun
    assert first["start_ms"] < again["end_ms"] <= first["end_ms"], again["end_ms"] - first["end_ms"]
