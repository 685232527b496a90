"""Live logging to an `mlflow server` (http URI) and the outage path: jobs finish without the server,
and a later sync replays their buffers once."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from seqmix.config.base import load_yaml
from seqmix.config.leaves import cell_run_config, expand_cells
from seqmix.pipeline import stages
from seqmix.tracking import buffer as tracking_buffer
from seqmix.tracking import runs as tracking
from seqmix.tracking import store as tracking_store
from tests.conftest import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def mlflow_server(backend: str, artifacts: Path, *extra: str):
    """An `mlflow server` on a free loopback port serving ``artifacts`` as its proxied artifact store."""
    port = free_port()
    mlflow = Path(sys.executable).parent / "mlflow"
    cmd = [str(mlflow), "server", "--backend-store-uri", backend, "--artifacts-destination", str(artifacts)]
    cmd += ["--host", "127.0.0.1", "--port", str(port), "--workers", "1", *extra]
    # no background job runners (processes importing MLflow, for GenAI jobs seqmix never submits), as `seqmix ui`
    # leaves them off: a start took 16.7 CPU-seconds in 10 processes with them, 5.5 in 2 without (2026-11-27)
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, env=env)
    uri = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
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


@pytest.fixture
def server(tmp_path):
    with mlflow_server(f"sqlite:///{tmp_path / 'srv.db'}", tmp_path / "art") as uri:
        yield uri


def small_run(tmp_path: Path, uri: str, steps: int = 40, log_every: int = 10, checkpoint_every: int = 20) -> dict:
    paper = load_yaml(ROOT / "config" / "papers" / "heads.yaml")
    exp = paper["experiments"]["exp1"]
    exp["variants"] = {"k2": exp["variants"]["k2"]}
    exp["scales"]["tiny"].update(seeds=[0], sweep_values=[1, 2], cell_size=2)
    exp["scales"]["tiny"]["set"]["train"].update(steps=steps, log_every=log_every, checkpoint_every=checkpoint_every)
    (exp_name, cell), leaves = next(iter(expand_cells("heads", paper, "tiny").items()))
    return cell_run_config(
        "heads", exp_name, cell, leaves, "tiny", {"results": str(tmp_path / "results"), "tracking": {"uri": uri}}
    )


def _runs(uri: str, view=None):
    client = tracking_store.client(uri)
    exp = client.get_experiment_by_name("heads")
    kw = {"run_view_type": view} if view else {}
    return client, (client.search_runs([exp.experiment_id], **kw) if exp else [])


def _seqmix(*args: str, timeout: int = 240) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "seqmix", *args], capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_live_logging_then_ingest_is_a_noop(server, tmp_path):
    run = small_run(tmp_path, server)
    stages.run_stage("train", run)
    client, runs = _runs(server)
    assert len(runs) == len(run["leaves"]) == 2
    for r in runs:
        hist = client.get_metric_history(r.info.run_id, "train_loss")
        assert [m.step for m in hist] == [10, 20, 30, 40]
        assert r.data.tags["rule"] == "train" and tracking_store.FINGERPRINT_TAG in r.data.tags
    # the end-of-job replay of the buffers finds the live runs complete and adds nothing
    buffers = [Path(l["out_dir"]) / "tracking-train.jsonl" for l in run["leaves"]]
    counts = tracking.ingest(buffers, server, run["results"])
    assert counts == {"created": 0, "skipped": 2, "replaced": 0, "superseded": 0, "bad_lines": 0}
    assert len(_runs(server)[1]) == 2


def test_server_down_then_sync_once_with_parent_links(server, tmp_path):
    """Guards: a dead server at the DAG's start failed mlflow-init after a ~4 minute hang, and a replay
    (buffers sorted diagnose < evaluate < train) dropped the evaluation runs' parent links."""
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    run = small_run(tmp_path, dead)
    t0 = time.monotonic()
    _seqmix(
        "mlflow-init",
        "--uri",
        dead,
        "--results",
        run["results"],
        "--papers",
        "heads",
        "--out",
        str(tmp_path / "init.json"),
    )
    assert json.loads((tmp_path / "init.json").read_text())["reachable"] is False
    assert len(stages.run_stage("train", run)["leaves"]) == 2  # the test's timeout catches a hang
    assert len(stages.run_stage("evaluate", run)["leaves"]) == 2
    assert time.monotonic() - t0 < 120
    # later, with the server up, one sync replays each buffer exactly once, parents linked
    out = tmp_path / "sync.json"
    _seqmix("mlflow-sync", "--uri", server, "--results", run["results"], "--out", str(out))
    assert json.loads(out.read_text())["created"] == 4
    client, runs = _runs(server)
    by_key = {r.data.tags[tracking_store.KEY_TAG]: r for r in runs}
    assert len(runs) == len(by_key) == 4
    for leaf in run["leaves"]:
        train, ev = by_key[leaf["hash"] + ".train"], by_key[leaf["hash"] + ".evaluate"]
        assert ev.data.tags[tracking_store.PARENT_RUN_TAG] == train.info.run_id
        assert ev.data.params == train.data.params and ev.data.params  # evaluation runs carry the config
    _seqmix("mlflow-sync", "--uri", server, "--results", run["results"], "--out", str(out))
    assert {k: json.loads(out.read_text())[k] for k in ("created", "skipped", "replaced")} == {
        "created": 0,
        "skipped": 4,
        "replaced": 0,
    }


def test_a_killed_live_job_resumed_leaves_one_complete_run(server, tmp_path):
    """Guards: live logging plus a kill left a truncated RUNNING run beside the resumed job's run, and the
    resumed run (logging only from the checkpoint on) was marked complete with a truncated history."""
    run = small_run(tmp_path, server, steps=600, log_every=50, checkpoint_every=100)
    run["leaves"] = run["leaves"][:1]
    leaf = run["leaves"][0]
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run))
    cmd = [sys.executable, "-m", "seqmix", "train", "--run", str(path), "--out", str(tmp_path / "cell.json")]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    ckpt = Path(leaf["out_dir"]) / "checkpoint.pt"
    for _ in range(2400):
        if ckpt.exists() or proc.poll() is not None:
            break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (Path(leaf["out_dir"]) / "train.done.json").exists(), "the job finished before the kill"
    _, runs = _runs(server)
    assert [r.info.status for r in runs] == ["RUNNING"]  # the killed attempt's provisional run
    subprocess.run(cmd, check=True, capture_output=True, timeout=240)  # resumes from the checkpoint
    client, runs = _runs(server)
    assert len(runs) == 1 and runs[0].info.status == "FINISHED"
    rec = tracking_buffer.read_buffer(Path(leaf["out_dir"]) / "tracking-train.jsonl")[0]
    assert runs[0].data.tags[tracking_store.FINGERPRINT_TAG] == rec["fingerprint"]
    hist = client.get_metric_history(runs[0].info.run_id, "train_loss")
    assert sorted(m.step for m in hist) == list(range(50, 601, 50))  # the steps before the resume too
    assert runs[0].info.start_time == rec["start_ms"] < runs[0].info.end_time == rec["end_ms"]
    assert tracking.ingest([Path(leaf["out_dir"]) / "tracking-train.jsonl"], server, run["results"])["skipped"] == 1


# Jobs logging to the server at once. Four, on two cores, keep more writers than cores (the server's one worker
# takes their requests interleaved); eight cost 77 CPU-seconds of a test suite (each job imports torch and MLflow)
# for no other path through the server (2026-12-02).
CONCURRENT_JOBS = 4


def test_concurrent_jobs_all_arrive(server, tmp_path):
    """CONCURRENT_JOBS jobs logging to one server at once: every run, param and metric arrives (counted)."""
    from seqmix.io import config_hash

    procs, runs = [], []
    for i in range(CONCURRENT_JOBS):
        run = small_run(tmp_path / f"job{i}", server)
        run["cell"] = f"k2-{i}"
        for leaf in run["leaves"]:  # distinct leaves: distinct ids, config hashes and MLflow runs
            leaf["config"]["train"]["lr"] = 0.01 * (i + 1)
            leaf["hash"] = config_hash(leaf["config"])
            leaf["id"] = f"{leaf['id']}-job{i}"  # one leaf id with another hash would supersede the first's run
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
    assert len(found) == CONCURRENT_JOBS * 2
    by_key = {r.data.tags[tracking_store.KEY_TAG]: r for r in found}
    for run in runs:
        for leaf in run["leaves"]:
            r = by_key[leaf["hash"] + ".train"]
            rec = tracking_buffer.read_buffer(Path(leaf["out_dir"]) / "tracking-train.jsonl")[0]
            assert r.data.params == rec["params"]
            for name, series in rec["metrics"].items():
                hist = client.get_metric_history(r.info.run_id, name)
                assert sorted((m.step, m.value, m.timestamp) for m in hist) == sorted(tuple(p) for p in series)
