"""Snakemake without its re-evaluation timer chains (seqmix.pipeline.scheduler_rounds): local runs drop the
default submission limit, other runs keep their limit with one pending timer per delay.

Guards: before, every scheduling round of a local run that left jobs waiting armed a one-second
``threading.Timer`` that ran another round, so the rounds multiplied with the finished jobs (56,913 timer
threads in the first 7 minutes of the tiny DAG). The toy workflow below counts the unnamed threads its
Snakemake process created (``Thread-N``: the timers; the executor's pools are named).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from snakemake.scheduling.job_scheduler import JobRateLimiter
from snakemake.settings.types import MaxJobsPerTimespan

from seqmix.pipeline import scheduler_rounds
from seqmix.pipeline.scheduler_rounds import drop_local_rate_limit, one_pending_timer, tame_rounds
from tests.conftest import ROOT


def _workflow(limit: MaxJobsPerTimespan | None, local: bool = True) -> SimpleNamespace:
    limiter = None if limit is None else JobRateLimiter(limit)
    return SimpleNamespace(local_exec=local, scheduler=SimpleNamespace(job_rate_limiter=limiter))


def test_the_default_limit_goes_for_the_local_executor():
    wf = _workflow(MaxJobsPerTimespan.parse_choice("100/1s"))
    assert drop_local_rate_limit(wf) is True
    assert wf.scheduler.job_rate_limiter is None


@pytest.mark.parametrize("limit", ["50/1s", "100/1m"])
def test_a_limit_the_user_chose_stays(limit):
    wf = _workflow(MaxJobsPerTimespan.parse_choice(limit))
    assert drop_local_rate_limit(wf) is False
    assert wf.scheduler.job_rate_limiter is not None


def test_a_cluster_executor_keeps_its_limit():
    wf = _workflow(MaxJobsPerTimespan.parse_choice("100/1s"), local=False)
    assert drop_local_rate_limit(wf) is False
    assert wf.scheduler.job_rate_limiter is not None


def test_no_scheduler_or_no_limit_is_left_alone():
    assert drop_local_rate_limit(SimpleNamespace(local_exec=True)) is False
    assert drop_local_rate_limit(_workflow(None)) is False


TOY = """
import os, sys, threading
sys.path.insert(0, {src!r})
rule all:
    input: expand("out/{{i}}.txt", i=range(30))
rule one:
    output: "out/{{i}}.txt"
    shell: "sleep 0.02; touch {{output}}"
def change(wf):
    from seqmix.pipeline import scheduler_rounds
    if os.environ["MODE"] == "drop":
        scheduler_rounds.drop_local_rate_limit(wf)
    elif os.environ["MODE"] == "ration":
        scheduler_rounds.one_pending_timer(wf)
onstart:
    change(workflow)
onsuccess:
    open("unnamed_threads.txt", "w").write(str(threading._counter() - 1))
"""


def _unnamed_threads(work: Path, mode: str) -> int:
    import os

    work.mkdir()
    (work / "Snakefile").write_text(TOY.format(src=str(ROOT / "src")))
    env = {**os.environ, "MODE": mode}
    cmd = [sys.executable, "-m", "snakemake", "-c", "2", "--scheduler", "greedy", "-q", "all"]
    r = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return int((work / "unnamed_threads.txt").read_text())


def test_a_local_run_arms_no_reevaluation_timers(tmp_path):
    with_default = _unnamed_threads(tmp_path / "default", "default")
    dropped = _unnamed_threads(tmp_path / "dropped", "drop")
    rationed = _unnamed_threads(tmp_path / "rationed", "ration")
    # Snakemake's own behaviour, so that the other counts mean something: about one timer per scheduling round
    # (30 here, one per finished job; rounds that coincide merge, hence the margin)
    assert with_default >= 10, with_default
    assert dropped == 0, dropped
    # one timer per second of the run at most (the run takes a few seconds), and the limit still wakes the scheduler
    assert 1 <= rationed < with_default / 2, (rationed, with_default)


class _Recorder:
    def __init__(self):
        self.job_rate_limiter = JobRateLimiter(MaxJobsPerTimespan.parse_choice("100/1s"))
        self.armed = []

    def _schedule_reevalutation(self, delay):
        self.armed.append(delay)


def test_one_pending_timer_per_delay(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(scheduler_rounds.time, "monotonic", lambda: clock[0])
    rec = _Recorder()
    wf = SimpleNamespace(local_exec=False, scheduler=rec)
    assert one_pending_timer(wf) is True
    for _ in range(5):  # rounds within the pending timer's second
        wf.scheduler._schedule_reevalutation(1)
    wf.scheduler._schedule_reevalutation(10)  # the queue-input wait: another delay, its own timer
    clock[0] += 1.0  # the first timer has fired
    wf.scheduler._schedule_reevalutation(1)
    assert rec.armed == [1, 10, 1]


def test_what_onstart_does_to_each_kind_of_run():
    assert tame_rounds(_workflow(MaxJobsPerTimespan.parse_choice("100/1s"))) == "dropped"
    rec = _Recorder()
    assert tame_rounds(SimpleNamespace(local_exec=False, scheduler=rec)) == "rationed"
    rec = _Recorder()
    rec.job_rate_limiter = JobRateLimiter(MaxJobsPerTimespan.parse_choice("10/1m"))
    assert tame_rounds(SimpleNamespace(local_exec=True, scheduler=rec)) == "rationed"
    assert tame_rounds(SimpleNamespace(local_exec=True)) is None
