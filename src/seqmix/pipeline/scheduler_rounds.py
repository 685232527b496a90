"""Snakemake's scheduler without its runaway re-evaluation rounds, for local runs.

Snakemake 9 (seen on 9.27.1) limits job submissions to ``--max-jobs-per-timespan`` (default ``100/1s``). With
the limit set, every scheduling round that leaves jobs waiting arms a ``threading.Timer`` of one timespan whose
firing runs another round (``JobScheduler._schedule_reevalutation``), and that round arms another. Nothing
stops a chain while jobs wait, and every finished job starts a new one: after N finished jobs the scheduler
runs about N rounds a second, each of which re-evaluates the params and resources of every waiting job and
runs the job selection. On the five-paper tiny DAG (473 jobs, 2 cores) that was 56,913 timer threads in the
first 7 minutes and the Snakemake process busy about a third of a core (benchmarks/RESULTS.md, 2026-11-28).
Public reports of the same symptom: snakemake/snakemake#2354 (CPU grows over a long run with
``--max-jobs-per-second``), #3804 (thread exhaustion on large DAGs).

The local executor submits nothing anywhere, so the limit protects nothing there: :func:`drop_local_rate_limit`
(the Snakefile's ``onstart``, after the scheduler is built and before its first round) removes it when the
executor is local and the limit is Snakemake's default; an explicit other limit, and every cluster executor,
keep theirs. Without the limit the scheduler runs a round when a job finishes, as it does for a dry run.
"""

from __future__ import annotations

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
