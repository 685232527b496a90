"""Runs the five papers' tiny DAG in a prepared workflow copy and records how it ended (``status``, JSON:
returncode, the log's tail, seconds). Started in the background by ``tests/papers/conftest.py`` as soon as a
test session has collected a DAG test, so the unit tests run beside it instead of after it.

Usage: python tests/papers/dag_runner.py WORKDIR STATUS_JSON TIMEOUT_S
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from filelock import FileLock

from tests.conftest import copy_workflow, snakemake_local

DAG_TIMEOUT = 2400  # the whole five-paper DAG: about 8 min on an idle 2-core box
_started: dict[int, subprocess.Popen] = {}  # the runner this process started (polled, so never a zombie)


def shared_dir(tmp_path_factory) -> Path:
    """A directory every xdist worker of this run sees (the parent of the workers' base temps), or this
    session's base temp when there are no workers (its parent is shared by every session of the user)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def files(shared: Path) -> tuple[Path, Path, Path, Path]:
    return shared / "tiny-dag", shared / "tiny-dag.lock", shared / "tiny-dag.status.json", shared / "tiny-dag.pid"


def start_tiny_dag(shared: Path) -> None:
    """Start the tiny DAG in the background unless this session (any worker) already did."""
    work, lock, status, pid = files(shared)
    with FileLock(lock):
        if status.exists() or pid.exists():
            return
        if work.exists():
            shutil.rmtree(work)
        work.mkdir()
        copy_workflow(work)
        log = open(shared / "tiny-dag.runner.log", "w")
        runner = Path(__file__).with_name("dag_runner.py")
        # its own session: the worker that starts it may finish its tests before the DAG does
        proc = subprocess.Popen(
            [sys.executable, str(runner), str(work), str(status), str(DAG_TIMEOUT)],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        pid.write_text(str(proc.pid))
        _started[proc.pid] = proc


def stop_tiny_dag(shared: Path) -> None:
    """End a run still going when the session ends (an interrupted or failed session)."""
    _, _, status, pid = files(shared)
    if pid.exists() and not status.exists():
        with contextlib.suppress(ProcessLookupError, ValueError, PermissionError):
            os.killpg(int(pid.read_text()), signal.SIGTERM)


def alive(pid: int) -> bool:
    if pid in _started:
        return _started[pid].poll() is None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def main(work: Path, status: Path, timeout: int) -> None:
    start = time.monotonic()
    try:
        r = snakemake_local(work, "--config", "scale=tiny", timeout=timeout)
        rc, log = r.returncode, r.stdout[-3000:] + r.stderr[-5000:]
    except subprocess.TimeoutExpired as e:
        rc, log = -1, f"the tiny DAG ran past {timeout} s: {str(e.stderr or '')[-5000:]}"
    tmp = status.with_name(status.name + ".tmp")
    tmp.write_text(json.dumps({"returncode": rc, "log": log, "seconds": time.monotonic() - start}))
    os.replace(tmp, status)  # readers poll for the file: it appears whole


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]))
