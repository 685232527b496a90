"""Shared test fixtures. Tests run from the repo root with the package installed (make test)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Tiny torch models: one thread per process is fastest and keeps results bit-reproducible.
os.environ.setdefault("OMP_NUM_THREADS", "1")


def _tiny_dag_file(nodeid: str) -> bool:
    """Whether a test belongs to a file of the shared tiny DAG (tests/papers/<paper>/test_dag.py)."""
    parts = nodeid.split("::", 1)[0].split("/")
    return len(parts) == 4 and parts[:2] == ["tests", "papers"] and parts[3] == "test_dag.py"


def pytest_collection_modifyitems(config, items):
    """The tiny DAG's files first (stable otherwise): under xdist they are one work unit (below), so one worker
    starts the DAG at once while the other runs everything else, instead of a second worker picking up another
    DAG file later and idling on the DAG's lock."""
    items.sort(key=lambda item: not _tiny_dag_file(item.nodeid))


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: no error where it is not installed
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile`` (make test) with the tiny DAG's files as a single unit; other modes unchanged."""
    if config.getoption("dist", None) != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class TinyDagOneUnit(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "tiny-dag" if _tiny_dag_file(nodeid) else super()._split_scope(nodeid)

    return TinyDagOneUnit(config, log)


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


def copy_workflow(dst: Path, papers: list[str] | None = None) -> Path:
    """A runnable copy of the workflow in ``dst`` (Snakefile, workflow, config, profiles, src, and envs: the
    rules' conda environment file, which Snakemake reads when it records a finished job's metadata), with the
    DAG restricted to ``papers`` when given. Tests run their DAGs there, never in the checkout."""
    import re
    import shutil

    for item in ("Snakefile", "workflow", "config", "profiles", "src", "envs"):
        src = ROOT / item
        (shutil.copytree if src.is_dir() else shutil.copy)(src, dst / item)
    if papers:
        cfg = dst / "config" / "config.yaml"
        text = cfg.read_text()
        assert re.search(r"^papers: \[.*\]", text, flags=re.M), "config/config.yaml has no one-line papers: [...]"
        cfg.write_text(re.sub(r"^papers: \[.*\]", f"papers: [{', '.join(papers)}]", text, flags=re.M))
    return dst


def snakemake_local(workdir: Path, *args: str, timeout: int = 800):
    """`snakemake --workflow-profile profiles/local ARGS` in ``workdir``, with this venv's tools on PATH."""
    import subprocess
    import sys

    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--workflow-profile", "profiles/local", *args],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
