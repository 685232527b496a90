"""Snakemake's scheduler without its runaway re-evaluation rounds (local runs and runs that keep a limit).

Snakemake 9 (seen on 9.27.1) limits job submissions to ``--max-jobs-per-timespan`` (default ``100/1s``). With
the limit set, every scheduling round that leaves jobs waiting arms a ``threading.Timer`` of one timespan whose
firing runs another round (``JobScheduler._schedule_reevalutation``), and that round arms another. Nothing
stops a chain while jobs wait, and every finished job starts a new one: after N finished jobs the scheduler
runs about N rounds a second, each of which re-evaluates the params and resources of every waiting job and
runs the job selection. On the five-paper tiny DAG (473 jobs, 2 cores) that was 56,913 timer threads in the
first 7 minutes and the Snakemake process busy about a third of a core (benchmarks/RESULTS.md, 2026-11-28).
Public reports of the same symptom: snakemake/snakemake#2354 (CPU grows over a long run with
``--max-jobs-per-second``), #3804 (thread exhaustion on large DAGs).

The Snakefile's ``onstart`` (after the scheduler is built, before its first round) calls :func:`tame_rounds`:

- local executor, Snakemake's default limit: the limit goes (:func:`drop_local_rate_limit`). The local executor
  submits nothing anywhere, so it protects nothing there; the scheduler then runs a round when a job finishes,
  as it does for a dry run;
- any other case with a limit (a cluster executor, or a limit the user chose): the limit stays and the timers
  are rationed to one pending timer per delay (:func:`one_pending_timer`), which still wakes the scheduler once
  a timespan so that jobs the limit held back are submitted, but no longer lets the chains multiply.
"""

from __future__ import annotations

import threading
import time
from typing import Any

DEFAULT_LIMIT = (100, 1)  # Snakemake's --max-jobs-per-timespan default, 100/1s: (jobs, seconds)


def drop_local_rate_limit(workflow: Any) -> bool:
    """Remove the scheduler's default submission limit for a local run; True when it was removed.

    ``workflow``: Snakemake's ``Workflow`` (the Snakefile's ``workflow``), whose ``scheduler`` exists by
    ``onstart``. A Snakemake without the attributes this reads is left as it is (False)."""
    scheduler = getattr(workflow, "scheduler", None)
    limiter = getattr(scheduler, "job_rate_limiter", None)
    if limiter is None or not getattr(workflow, "local_exec", False):
        return False
    if (getattr(limiter, "max_jobs", None), getattr(limiter, "timespan", None)) != DEFAULT_LIMIT:
        return False  # the user asked for a limit of their own
    scheduler.job_rate_limiter = None
    return True


def one_pending_timer(workflow: Any) -> bool:
    """Let the scheduler arm a re-evaluation timer of a given delay only when none of that delay is pending; True
    when the scheduler was changed. A timer of delay d armed at t fires at t + d, so a request before then is one
    that the pending timer already answers. Leaves a Snakemake without ``_schedule_reevalutation`` as it is."""
    scheduler = getattr(workflow, "scheduler", None)
    arm = getattr(scheduler, "_schedule_reevalutation", None)
    if arm is None or getattr(scheduler, "job_rate_limiter", None) is None:
        return False
    armed_at: dict[float, float] = {}
    lock = threading.Lock()

    def arm_once(delay):
        with lock:
            now = time.monotonic()
            if now - armed_at.get(delay, -float("inf")) < delay:
                return
            armed_at[delay] = now
        arm(delay)

    scheduler._schedule_reevalutation = arm_once
    return True


def tame_rounds(workflow: Any) -> str | None:
    """What the Snakefile's ``onstart`` calls: "dropped" (local run, default limit), "rationed" (a limit kept, one
    pending timer per delay) or None (nothing to change)."""
    if drop_local_rate_limit(workflow):
        return "dropped"
    if one_pending_timer(workflow):
        return "rationed"
    return None
