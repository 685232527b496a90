"""The MLflow UI's view of a run of the pipeline, read the way the UI reads it (its ajax-api REST calls),
from a server started on the embedded store after results/ was moved."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from seqmix.io import read_json
from seqmix.pipeline import stages
from seqmix.tracking import buffer as tracking_buffer
from seqmix.tracking import runs as tracking

from .test_server import mlflow_server, small_run

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def _get(uri: str, route: str, **query) -> dict:
    with urllib.request.urlopen(f"{uri}/{route}?{urllib.parse.urlencode(query)}", timeout=30) as r:
        body = r.read()
    return body if route == "get-artifact" else json.loads(body)


def _post(uri: str, path: str, body: dict) -> dict:
    req = urllib.request.Request(
        f"{uri}/{path}", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def _tags(run: dict) -> dict:
    return {t["key"]: t["value"] for t in run["data"].get("tags", [])}


def test_the_ui_shows_training_runs_as_they_ran(tmp_path):
    """Guards, as the UI sees them: the GenAI experiment kind, repeated run names, durations of the ingest
    (60-484 ms), one timestamp for every metric point, no mlflow.source.git.commit, evaluation runs
    without params or parent, and artifact paths that break once results/ moves."""
    results = tmp_path / "results"
    uri = f"sqlite:///{results / 'mlflow.db'}"
    assert tracking.init_store(uri, ["heads"], results) is not None
    run = small_run(tmp_path, uri, steps=200, log_every=50, checkpoint_every=200)
    stages.run_stage("train", run)
    stages.run_stage("evaluate", run)
    trained_s = {l["hash"]: read_json(Path(l["out_dir"]) / "train.done.json")["seconds"] for l in run["leaves"]}
    claims = results / "tiny" / "heads" / "claims.md"
    claims.write_text("# heads claims\n")
    spec = {"paper": "heads", "scale": "tiny", "results": str(results), "paper_dir": str(results / "tiny" / "heads")}
    spec["tracking"] = {"uri": uri}
    ingest_ms = tracking_buffer.now_ms()
    counts = tracking.log_paper_artefacts(spec, [str(claims)], {"rule": "claims"}, ingest_ms)
    assert counts["created"] == 5
    moved = tmp_path / "moved"
    shutil.move(results, moved)
    with mlflow_server(f"sqlite:///{moved / 'mlflow.db'}", moved / ".mlflow" / "artifacts") as ui:
        exp = _get(ui, "ajax-api/2.0/mlflow/experiments/get-by-name", experiment_name="heads")["experiment"]
        assert {t["key"]: t["value"] for t in exp["tags"]}["mlflow.experimentKind"] == "custom_model_development"
        runs = _post(ui, "ajax-api/2.0/mlflow/runs/search", {"experiment_ids": [exp["experiment_id"]]})["runs"]
        names = [r["info"]["run_name"] for r in runs]
        assert len(runs) == 5 and len(set(names)) == 5, names
        by_key = {_tags(r)["seqmix.key"]: r for r in runs}
        head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent)
        for key, seconds in trained_s.items():
            train, ev = by_key[key + ".train"], by_key[key + ".evaluate"]
            info = train["info"]
            start, end = int(info["start_time"]), int(info["end_time"])
            assert end < ingest_ms and end - start >= 1000 * seconds  # the training's own span
            hist = _get(
                ui, "ajax-api/2.0/mlflow/metrics/get-history", run_uuid=info["run_id"], metric_key="train_loss"
            )["metrics"]
            points = sorted((int(m["step"]), int(m["timestamp"])) for m in hist)
            assert [s for s, _ in points] == [50, 100, 150, 200]
            stamps = [t for _, t in points]
            assert stamps == sorted(stamps) and len(set(stamps)) == 4 and start <= stamps[0] and stamps[-1] <= end
            assert _tags(ev)["mlflow.parentRunId"] == info["run_id"]
            assert ev["data"]["params"] and ev["data"]["params"] == train["data"]["params"]
            for r in (train, ev):
                assert _tags(r).get("mlflow.source.git.commit") == (head.stdout.strip() or None)
        art = by_key["heads.tiny.artefacts"]["info"]["run_id"]
        listed = _get(ui, "ajax-api/2.0/mlflow/artifacts/list", run_uuid=art)
        assert [f["path"] for f in listed["files"]] == ["claims.md"]
        assert _get(ui, "get-artifact", path="claims.md", run_uuid=art) == b"# heads claims\n"
