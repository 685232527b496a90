"""Heavy steps through submitit on a real SLURM: same numbers as local, job ids as MLflow tags, failures
and cancellations fail the rule (never hang), scancel + re-run and scontrol requeue both resume."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import torch

from .conftest import copy_workflow, dispatch_settings, leaf_run_config, seqmix_cmd, small_heads_config, write

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(420)]


def snakemake(work: Path, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    return subprocess.run(
        [sys.executable, "-m", "snakemake", *args], cwd=work, env=env, capture_output=True, text=True, timeout=timeout
    )


TARGET = "results/tiny/heads/exp1/summary.csv"
METRICS = ["test_mse", "norm_mse", "mse_opt", "sup_err", "probe_err"]


@pytest.fixture(scope="module")
def local_dag(tmp_path_factory):
    work = copy_workflow(tmp_path_factory.mktemp("local"))
    small_heads_config(work, "local")
    r = snakemake(work, "--workflow-profile", "profiles/local", TARGET)
    assert r.returncode == 0, r.stderr[-3000:]
    return pd.read_csv(work / TARGET).sort_values("id").reset_index(drop=True)


def test_submitit_dag_matches_local_and_tags_job_ids(slurm, local_dag, tmp_path):
    work = copy_workflow(tmp_path)
    small_heads_config(work, "submitit")
    r = snakemake(work, "--workflow-profile", "profiles/local", TARGET)
    assert r.returncode == 0, r.stderr[-3000:]
    got = pd.read_csv(work / TARGET).sort_values("id").reset_index(drop=True)
    pd.testing.assert_frame_equal(got[["id"] + METRICS], local_dag[["id"] + METRICS])
    log = (work / "results/tiny/heads/logs/train/exp1.k2-0.log").read_text()
    job = re.search(r"submitted train to slurm: job (\d+)", log).group(1)
    # with a SQLite store the jobs only buffer their records (the paper's claims step ingests them, and this
    # target stops before it): replay the buffers as the mlflow_sync rule does
    sync = subprocess.run(
        seqmix_cmd("mlflow-sync", "--uri", "sqlite:///results/mlflow.db", "--results", "results", "--out", "sync.json"),
        cwd=work,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert sync.returncode == 0, sync.stderr[-3000:]
    con = sqlite3.connect(work / "results" / "mlflow.db")
    tags = con.execute(
        "select r.run_uuid, t.value from runs r join tags t on t.run_uuid = r.run_uuid "
        "join tags t2 on t2.run_uuid = r.run_uuid where t.key = 'slurm_job_id' and t2.key = 'rule' "
        "and t2.value = 'train'"
    ).fetchall()
    assert len(tags) == 2 and {v for _, v in tags} == {job}, tags


def test_executor_plugin_profile_matches_local(slurm, local_dag, tmp_path):
    work = copy_workflow(tmp_path)
    small_heads_config(work, "local")
    r = snakemake(work, "--workflow-profile", "profiles/slurm-local", TARGET)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    got = pd.read_csv(work / TARGET).sort_values("id").reset_index(drop=True)
    pd.testing.assert_frame_equal(got[["id"] + METRICS], local_dag[["id"] + METRICS])


def _long_run(tmp_path: Path) -> tuple[Path, dict]:
    # long enough (about 5 s of training on a quiet 2-core machine, 2026-12-02) to be interrupted after the first
    # checkpoint (step 500; the wait polls every 50 ms, scancel and requeue act within a second) with 2500 steps,
    # about 4 s, left; 6000 steps before, trained four times over by these tests
    run = leaf_run_config(tmp_path / "results", k=8, heads=(4,), steps=3000, checkpoint_every=500, batch=64, n=32)
    return write(tmp_path / "run.json", run), run


@pytest.fixture(scope="module")
def long_reference(tmp_path_factory) -> dict:
    """The long leaf trained uninterrupted and locally, once for the tests that interrupt it on SLURM."""
    tmp = tmp_path_factory.mktemp("long-reference")
    _, run = _long_run(tmp)
    return _reference(tmp, run)


def _wait_for_checkpoint(out_dir: Path, proc, min_step: int = 500, timeout: float = 180) -> int:
    ckpt = out_dir / "checkpoint.pt"
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if proc.poll() is not None:
            pytest.fail(
                f"the step ended (rc {proc.returncode}) before it could be interrupted:\n{proc.stderr.read()[-3000:]}"
            )
        if ckpt.exists():
            try:
                step = int(torch.load(ckpt, weights_only=True)["step"])
            except Exception:  # being replaced right now
                step = 0
            if step >= min_step:
                return step
        time.sleep(0.05)
    pytest.fail("no checkpoint appeared")


def _job_ids(folder: Path) -> list[str]:
    """The SLURM jobs this test submitted (submitit's folder has one directory per job id)."""
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and p.name.isdigit()) if folder.exists() else []


@pytest.fixture
def submitit_folder(tmp_path):
    folder = tmp_path / "submitit"
    yield folder
    jobs = _job_ids(folder)
    if jobs:  # never leave a test's job in the queue
        subprocess.run(["scancel", *jobs], capture_output=True)


def _reference(tmp_path: Path, run: dict) -> dict:
    """The same leaf trained uninterrupted and locally."""
    ref = json.loads(json.dumps(run))
    ref["results"] = str(tmp_path / "ref")
    for leaf in ref["leaves"]:
        leaf["out_dir"] = str(tmp_path / "ref" / "leaf")
    rp = write(tmp_path / "ref.json", ref)
    for stage in ("train", "evaluate"):
        subprocess.run(
            seqmix_cmd(stage, "--run", str(rp), "--out", str(tmp_path / f"ref.{stage}.json")),
            check=True,
            capture_output=True,
            timeout=300,
        )
    return ref


def _assert_same_as_reference(run: dict, ref: dict) -> None:
    a = torch.load(Path(run["leaves"][0]["out_dir"]) / "model.pt", weights_only=True)
    b = torch.load(Path(ref["leaves"][0]["out_dir"]) / "model.pt", weights_only=True)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    ma = json.loads((Path(run["leaves"][0]["out_dir"]) / "metrics.json").read_text())["metrics"]
    mb = json.loads((Path(ref["leaves"][0]["out_dir"]) / "metrics.json").read_text())["metrics"]
    assert ma == mb


def test_scancel_fails_the_step_then_rerun_resumes(slurm, tmp_path, submitit_folder, long_reference):
    run_path, run = _long_run(tmp_path)
    disp = write(tmp_path / "dispatch.json", dispatch_settings(submitit_folder))
    out = tmp_path / "cell.train.json"
    cmd = seqmix_cmd("train", "--run", str(run_path), "--out", str(out), "--dispatch", str(disp))
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    step = _wait_for_checkpoint(Path(run["leaves"][0]["out_dir"]), proc)
    jobs = _job_ids(submitit_folder)
    assert len(jobs) == 1, jobs
    subprocess.run(["scancel", *jobs], check=True)
    t0 = time.monotonic()
    _, err = proc.communicate(timeout=120)  # a cancelled job fails the step; it never hangs
    assert proc.returncode != 0
    assert time.monotonic() - t0 < 90
    assert "did not succeed" in err and "logs:" in err, err[-2000:]
    assert not out.exists()
    # the rule re-run: a new job resumes from the checkpoint
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert re.search(r"resumed from step (\d+)", r.stderr), r.stderr[-3000:]
    assert int(re.search(r"resumed from step (\d+)", r.stderr).group(1)) >= step
    subprocess.run(
        seqmix_cmd("evaluate", "--run", str(run_path), "--out", str(tmp_path / "cell.eval.json")),
        check=True,
        capture_output=True,
        timeout=300,
    )
    _assert_same_as_reference(run, long_reference)


def test_scontrol_requeue_resumes_by_itself(slurm, tmp_path, submitit_folder, long_reference):
    run_path, run = _long_run(tmp_path)
    disp = write(tmp_path / "dispatch.json", dispatch_settings(submitit_folder))
    out = tmp_path / "cell.train.json"
    proc = subprocess.Popen(
        seqmix_cmd("train", "--run", str(run_path), "--out", str(out), "--dispatch", str(disp)),
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for_checkpoint(Path(run["leaves"][0]["out_dir"]), proc)
    jobs = _job_ids(submitit_folder)
    assert len(jobs) == 1, jobs
    subprocess.run(["scontrol", "requeue", *jobs], check=True)
    # SLURM holds a requeued batch job back for about two minutes; let it start again at once
    for _ in range(100):
        state = subprocess.run(
            ["squeue", "-h", "-j", jobs[0], "-o", "%T"], capture_output=True, text=True
        ).stdout.strip()
        if state == "PENDING":
            subprocess.run(["scontrol", "update", f"JobId={jobs[0]}", "StartTime=now"], capture_output=True)
            break
        time.sleep(0.2)
    _, err = proc.communicate(timeout=360)
    assert proc.returncode == 0, err[-3000:]
    assert re.search(r"resumed from step \d+", err), err[-3000:]
    subprocess.run(
        seqmix_cmd("evaluate", "--run", str(run_path), "--out", str(tmp_path / "cell.eval.json")),
        check=True,
        capture_output=True,
        timeout=300,
    )
    _assert_same_as_reference(run, long_reference)


def test_failing_step_fails_with_error_and_log_path(slurm, tmp_path, submitit_folder):
    run = leaf_run_config(tmp_path / "results", heads=(1,), steps=10)
    run["leaves"][0]["config"]["train"]["optimizer"] = "no-such-optimizer"  # raises inside the job
    run_path = write(tmp_path / "run.json", run)
    disp = write(tmp_path / "dispatch.json", dispatch_settings(submitit_folder))
    r = subprocess.run(
        seqmix_cmd("train", "--run", str(run_path), "--out", str(tmp_path / "o.json"), "--dispatch", str(disp)),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert r.returncode != 0
    assert "unknown optimizer 'no-such-optimizer'" in r.stderr
    assert re.search(r"logs: \S+_log\.out \S+_log\.err", r.stderr), r.stderr[-2000:]
    assert not (tmp_path / "o.json").exists()
