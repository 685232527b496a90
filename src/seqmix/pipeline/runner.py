"""Run one stage of one cell in this process: what ``python -m seqmix <stage>`` does locally and what a
cluster job does inside SLURM (``seqmix.pipeline.dispatch.StageJob``). Both the CLI and dispatch call it, so it sits
below both (the CLI used to own it and dispatch imported the CLI back: a circle)."""

from __future__ import annotations

import logging
import os
import sys
import time

_T_IMPORT = time.time()
_STARTUP: float | None = None  # process age when the work began (interpreter + torch import)


def process_age_s() -> float:
    """Seconds since this process started (Linux /proc), else since this module was imported. A job forked by
    the warm worker counts from its client's start (seqmix.pipeline.warm.T0_ENV), so the start-up a job saved
    shows as saved and no more."""
    client_t0 = os.environ.get("SEQMIX_CLIENT_T0")
    if client_t0:
        return max(0.0, time.time() - float(client_t0))
    try:
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return time.time() - _T_IMPORT


def startup_s() -> float | None:
    """The process age when ``setup`` last ran (None if it never did): the job's start-up cost."""
    return _STARTUP


def setup(threads: int, torch_now: bool = True) -> None:
    """Logging to stderr, torch's thread count, and the start-up time stamp.

    ``torch_now=False`` (tables, figures, claims, MLflow commands) leaves torch unimported: OMP_NUM_THREADS
    still caps the threads of a later import, and a job that needs no torch saves its ~2 s import."""
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s", stream=sys.stderr, force=True
    )
    for noisy in ("alembic", "mlflow", "urllib3", "matplotlib", "PIL"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))
    if torch_now:
        import torch

        torch.set_num_threads(threads)
    elif "torch" in sys.modules:  # forked by the warm worker, which imported torch: the count a cold import reads
        sys.modules["torch"].set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    global _STARTUP
    _STARTUP = process_age_s()


def run_cell_stage(stage: str, run_path: str, out_path: str, threads: int) -> None:
    """Run one stage of one cell in this process (locally, or inside a cluster job)."""
    from .. import registry
    from ..io import read_json, write_json
    from . import stages

    setup(threads)
    registry.load_all()
    run = read_json(run_path)
    work = registry.worker("stages")
    work.init_distributed((run.get("runtime") or {}).get("device", "cpu"))
    startup = process_age_s()
    out = stages.timed(stages.run_stage, startup, stage, run)
    out.update(
        cell=run["cell"],
        experiment=run["experiment"],
        paper=run["paper"],
        stage=stage,
        world_size=work.world_size(),
    )
    if work.rank() == 0:
        write_json(out_path, out, checksum=True)  # collect verifies it (seqmix.results.verify_cell_marker)
