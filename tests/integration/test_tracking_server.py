"""Live logging to an `mlflow server` (http URI) and the outage path: jobs finish without the server,
and a later sync replays their buffers once."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import ROOT
from seqmix import stages, tracking
from seqmix.config import cell_run_config, expand_cells, load_yaml

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(tmp_path):
    port = free_port()
    mlflow = Path(sys.executable).parent / "mlflow"
    proc = subprocess.Popen(
        [
            str(mlflow),
            "server",
            "--backend-store-uri",
            f"sqlite:///{tmp_path / 'srv.db'}",
            "--default-artifact-root",
            (tmp_path / "art").as_uri(),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    uri = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if urllib.request.urlopen(f"{uri}/health", timeout=1).status == 200:
                    break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("mlflow server did not start")
        yield uri
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def small_run(tmp_path: Path, uri: str) -> dict:
    paper = load_yaml(ROOT / "config" / "papers" / "heads.yaml")
    exp = paper["experiments"]["exp1"]
    exp["variants"] = {"k2": exp["variants"]["k2"]}
    exp["scales"]["tiny"].update(seeds=[0], sweep_values=[1, 2], cell_size=2)
    exp["scales"]["tiny"]["set"]["train"].update(steps=40, log_every=10, checkpoint_every=20)
    (exp_name, cell), leaves = next(iter(expand_cells("heads", paper, "tiny").items()))
    return cell_run_config(
        "heads", exp_name, cell, leaves, "tiny", {"results": str(tmp_path / "results"), "tracking": {"uri": uri}}
    )


def _runs(uri: str):
    client = tracking._client(uri)
    exp = client.get_experiment_by_name("heads")
    return client, (client.search_runs([exp.experiment_id]) if exp else [])


def test_live_logging_then_ingest_is_a_noop(server, tmp_path):
    run = small_run(tmp_path, server)
    stages.train_cell(run)
    client, runs = _runs(server)
    assert len(runs) == len(run["leaves"]) == 2
    for r in runs:
        hist = client.get_metric_history(r.info.run_id, "train_loss")
        assert [m.step for m in hist] == [10, 20, 30, 40]
        assert r.data.tags["rule"] == "train" and tracking.FINGERPRINT_TAG in r.data.tags
    # the end-of-job replay of the buffers finds the live runs complete and adds nothing
    buffers = [Path(l["out_dir"]) / "tracking-train.jsonl" for l in run["leaves"]]
    counts = tracking.ingest(buffers, server, run["results"])
    assert counts == {"created": 0, "skipped": 2, "replaced": 0}
    assert len(_runs(server)[1]) == 2


def test_server_down_then_sync_once(tmp_path):
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    run = small_run(tmp_path, dead)
    out = stages.train_cell(run)  # must finish although tracking is down (the test's timeout catches a hang)
    assert len(out["leaves"]) == 2
    assert all((Path(l["out_dir"]) / "train.done.json").exists() for l in run["leaves"])
    # later, against a store that is up, the sync replays each buffer exactly once
    uri = tracking.resolve_uri(f"sqlite:///{tmp_path / 'late.db'}")
    buffers = sorted(Path(run["results"]).rglob("tracking*.jsonl"))
    assert tracking.ingest(buffers, uri, run["results"]) == {"created": 2, "skipped": 0, "replaced": 0}
    assert tracking.ingest(buffers, uri, run["results"]) == {"created": 0, "skipped": 2, "replaced": 0}


def test_eight_concurrent_jobs_all_arrive(server, tmp_path):
    """8 jobs logging to one server at once: every run, param and metric arrives (counted)."""
    import json

    procs, runs = [], []
    for i in range(8):
        run = small_run(tmp_path / f"job{i}", server)
        run["cell"] = f"k2-{i}"
        for leaf in run["leaves"]:  # distinct leaves: distinct config hashes and MLflow runs
            leaf["config"]["train"]["lr"] = 0.01 * (i + 1)
            from seqmix.io import config_hash

            leaf["hash"] = config_hash(leaf["config"])
        path = tmp_path / f"run{i}.json"
        path.write_text(json.dumps(run))
        runs.append(run)
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "seqmix", "train", "--run", str(path), "--out", str(tmp_path / f"cell{i}.json")],
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    for p in procs:
        _, err = p.communicate(timeout=240)
        assert p.returncode == 0, err[-2000:]
    client, found = _runs(server)
    assert len(found) == 8 * 2
    by_key = {r.data.tags[tracking.KEY_TAG]: r for r in found}
    for run in runs:
        for leaf in run["leaves"]:
            r = by_key[leaf["hash"] + ".train"]
            rec = tracking.read_buffer(Path(leaf["out_dir"]) / "tracking-train.jsonl")[0]
            assert r.data.params == rec["params"]
            for name, series in rec["metrics"].items():
                hist = client.get_metric_history(r.info.run_id, name)
                assert sorted((m.step, m.value) for m in hist) == sorted((s, v) for s, v in series)
