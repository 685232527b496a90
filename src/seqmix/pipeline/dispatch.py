"""Dispatch of heavy steps to SLURM through submitit: the only module that imports submitit.

``dispatch: submitit`` in config/config.yaml makes the stages named in ``submitit.rules`` (train,
evaluate, diagnose) run as cluster jobs. The Snakemake job (``python -m seqmix <stage> ... --dispatch
<file>``) submits the step, streams the job's log into its own, blocks until the job ends, cancels the
job if it is interrupted (SIGINT/SIGTERM), and fails with the job's error and log paths if the job fails,
is cancelled, or leaves the queue without a result.

Preemption and time limits: the step is a ``submitit.helpers.Checkpointable``; submitit requeues it
(up to ``max_requeues`` times) and the training loop resumes from the leaf's last checkpoint, ending with
the same numbers as an uninterrupted run. A job requeued by hand (``scontrol requeue``) re-runs the same
step, which also resumes. A job killed with ``scancel`` fails the rule; re-running the rule resumes.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
from pathlib import Path

import submitit

log = logging.getLogger("seqmix.pipeline.dispatch")


class DispatchError(RuntimeError):
    pass


class StageJob(submitit.helpers.Checkpointable):
    """One cell stage, run inside the cluster job exactly as ``python -m seqmix <stage>`` runs it locally."""

    def __init__(self, stage: str, run_path: str, out_path: str, threads: int):
        self.stage, self.run_path, self.out_path, self.threads = stage, run_path, out_path, threads

    def __call__(self) -> str:
        from .runner import run_cell_stage

        run_cell_stage(self.stage, self.run_path, self.out_path, self.threads)
        return self.out_path


def executor_for(settings: dict, stage: str, job_name: str) -> submitit.Executor:
    res = dict(settings["resources"].get("default", {}), **settings["resources"].get(stage, {}))
    folder = Path(settings["folder"]) / "%j"
    kwargs = {"slurm_max_num_timeout": settings.get("max_requeues", 3)} if settings["cluster"] == "slurm" else {}
    ex = submitit.AutoExecutor(folder=folder, cluster=settings["cluster"], **kwargs)
    params = {
        "timeout_min": res.get("timeout_min", 60),
        "name": job_name,
        "nodes": 1,
        "tasks_per_node": res.get("tasks_per_node", 1),
        "cpus_per_task": res.get("cpus_per_task", 1),
    }
    if res.get("mem_gb"):
        params["mem_gb"] = res["mem_gb"]
    if res.get("gpus_per_node"):
        params["gpus_per_node"] = res["gpus_per_node"]
    if ex.cluster in ("slurm", "local"):  # the job's allocator settings (seqmix.training.allocator)
        from ..registry import worker

        params[f"{ex.cluster}_setup"] = [f"export GLIBC_TUNABLES={worker('allocator_tunables')()}"]
    if ex.cluster == "slurm":
        if res.get("partition"):
            params["slurm_partition"] = res["partition"]
        if res.get("account"):
            params["slurm_account"] = res["account"]
        params["slurm_additional_parameters"] = {"requeue": True}  # preempted / `scontrol requeue`d jobs come back
    ex.update_parameters(**params)
    return ex


class _LogTail:
    """Copies what a job appends to its stdout/stderr files into our stderr (the rule's log)."""

    def __init__(self, *paths: Path):
        self.pos = {Path(p): 0 for p in paths}

    def pump(self) -> None:
        for path, pos in self.pos.items():
            try:
                with open(path, "rb") as f:
                    f.seek(pos)
                    chunk = f.read()
            except FileNotFoundError:
                continue
            if chunk:
                self.pos[path] = pos + len(chunk)
                sys.stderr.write(chunk.decode(errors="replace"))
                sys.stderr.flush()


# How often a waiting step asks the cluster for its job's state. A job that ends with a result is seen at once
# (submitit finds its result file), but one that fails, is cancelled or is lost only through accounting, which
# submitit asks at most every half of the job's age, up to 10 minutes (its SlurmInfoWatcher): a job cancelled after
# 40 s was noticed about 20 s late (2026-12-02), one failing after two hours would be noticed up to 10 minutes late.
STATE_CHECK_S = 20.0


def wait_for(job, poll_s: float, state_check_s: float, pump=lambda: None) -> None:
    """Block until ``job`` (a submitit Job) is done, calling ``pump`` every ``poll_s`` seconds; the cluster is
    asked for the job's state (one accounting call) every ``state_check_s`` seconds, submitit's cheaper check
    (its result file, its cached state) in between."""
    asked = time.monotonic()
    while True:
        force = time.monotonic() - asked >= state_check_s
        if force:
            asked = time.monotonic()
        if job.done(force_check=force):
            return
        pump()
        time.sleep(poll_s)


# SLURM states of a job stopped from outside, which therefore wrote no result file. submitit's ``result()`` waits
# 15 s for that file (a shared file system may show it late) before it reports the job as uncompleted: a cancelled
# job failed its rule 15 s late (2026-12-02). FAILED is not here: a job whose Python code raised writes the error
# as its result, and a slow file system may still be showing it.
KILLED_STATES = ("CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "BOOT_FAIL", "DEADLINE", "PREEMPTED")


def killed_state(job) -> str | None:
    """The SLURM state of a finished ``job`` that was stopped from outside and left no result, else None."""
    if job.paths.result_pickle.exists():
        return None
    state = str(job.state)
    return state if state.split()[0].rstrip("+") in KILLED_STATES else None


def submit_and_wait(stage: str, run_path: str, out_path: str, threads: int, settings: dict) -> str:
    """Submit one cell stage and block until it ends; returns the job id. Raises DispatchError."""
    cell = Path(run_path).stem
    ex = executor_for(settings, stage, f"seqmix-{stage}-{cell}")
    job = ex.submit(StageJob(stage, str(Path(run_path).resolve()), str(Path(out_path).resolve()), threads))
    log.info(
        "submitted %s to %s: job %s (logs: %s, %s)", stage, ex.cluster, job.job_id, job.paths.stdout, job.paths.stderr
    )
    tail = _LogTail(job.paths.stdout, job.paths.stderr)

    def _cancel(signum, frame):  # Snakemake interrupted: do not leave the job running
        log.warning("interrupted (signal %d): cancelling job %s", signum, job.job_id)
        job.cancel(check=False)
        raise KeyboardInterrupt

    old = {s: signal.signal(s, _cancel) for s in (signal.SIGINT, signal.SIGTERM)}
    poll, state_check = float(settings.get("poll_s", 2.0)), float(settings.get("state_check_s", STATE_CHECK_S))
    try:
        wait_for(job, poll, state_check, tail.pump)
        tail.pump()
        failed = f"{ex.cluster} job {job.job_id} ({stage} of {cell}) did not succeed"
        logs = f"logs: {job.paths.stdout} {job.paths.stderr}"
        killed = killed_state(job) if ex.cluster == "slurm" else None
        if killed:
            raise DispatchError(f"{failed}: SLURM says {killed} (the job left no result)\n{logs}")
        try:
            job.result()
        except Exception as e:  # submitit raises FailedJobError / UncompletedJobError
            raise DispatchError(f"{failed}: {type(e).__name__}: {str(e)[-4000:]}\n{logs}") from None
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    if not Path(out_path).exists():
        raise DispatchError(
            f"job {job.job_id} ended without writing {out_path}; logs: {job.paths.stdout} {job.paths.stderr}"
        )
    log.info("job %s done", job.job_id)
    return str(job.job_id)


def wants(settings: dict | None, stage: str) -> bool:
    return bool(settings) and settings.get("mode") == "submitit" and stage in settings.get("rules", [])


def slurm_available() -> bool:
    import shutil
    import subprocess

    if not shutil.which("sinfo"):
        return False
    try:
        return subprocess.run(["sinfo", "-h"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def env_summary() -> str:
    return f"SLURM_JOB_ID={os.environ.get('SLURM_JOB_ID', '-')}"
