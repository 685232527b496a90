"""The five papers' tiny DAG, run once per test session and shared by every paper's ``test_dag.py``.

One Snakemake invocation builds every paper at tiny scale in a copy of the workflow (``copy_workflow``);
each paper's tests assert on their own slice of it. Under pytest-xdist a session fixture runs once per
worker, so the run is guarded by a file lock in a directory the workers share (the parent of each worker's
base temp): the first worker to take the lock runs the DAG and records how it ended, the others wait and
reuse the finished directory (or report the same failure, without running it again).

Tests that only read the results, or run Snakemake where it has nothing to do, use ``tiny_dag`` directly
(their Snakemake calls hold the lock, so no two run in the directory at once). A test that edits the
config or re-runs jobs works on a copy of the finished directory (``tiny_dag.copy``), never on the shared one.

Every figure a paper test draws in process passes the house style check (``figure_style``, autouse): the
paper tests that call figure functions on hand-built inputs are the figure-style tests of those figures.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from filelock import FileLock

from seqmix import results as layout
from seqmix.config import artefacts as A
from seqmix.config.leaves import expand_cells
from seqmix.config.loading import load_paper
from seqmix.report import plots
from seqmix.report.figure_style import figure_style_problems
from tests.conftest import copy_workflow, snakemake_local

SCALE = "tiny"
DAG_TIMEOUT = 2400  # the whole five-paper DAG: about 8 min on an idle 2-core box
# the tests that take the DAG fixture: its first user pays the run (or the wait for another worker's run)
DAG_TEST_TIMEOUT = DAG_TIMEOUT + 600


@dataclass(frozen=True)
class Drawn:
    fig: object  # the matplotlib Figure, closed once saved but still holding its artists
    problems: list[str]


@pytest.fixture(autouse=True)
def figure_style(monkeypatch) -> list[Drawn]:
    """Every figure saved through ``seqmix.report.plots.save`` during the test, with its style problems
    (``figure_style_problems``: a legend over data or labels, tick labels on each other or on a neighbouring
    panel); any problem fails the test that drew the figure. A test can read the list to look at what a
    figure draws (e.g. the artists labelled "paper")."""
    drawn: list[Drawn] = []
    check = figure_style_problems

    def recording(fig):
        problems = check(fig)
        drawn.append(Drawn(fig, problems))
        return problems

    monkeypatch.setattr(plots, "figure_style_problems", recording)
    yield drawn
    bad = [
        f"{d.fig.get_suptitle() or d.fig.axes[0].get_title() if d.fig.axes else '?'}: {p}"
        for d in drawn
        for p in d.problems
    ]
    if bad:
        pytest.fail("figure style problems:\n" + "\n".join(bad))


_NOOP_RUNS: dict[Path, subprocess.CompletedProcess] = {}


@dataclass(frozen=True)
class TinyDag:
    dir: Path  # the finished workflow copy: Snakefile, workflow/, config/, src/, results/, .snakemake/
    lock: Path
    seconds: float  # how long the run took (in whichever worker ran it)

    def results(self, paper: str | None = None) -> Path:
        """The tiny scale's root (``seqmix.results``), or one paper's directory under it."""
        root = layout.scale_root(self.dir / "results", SCALE)
        return layout.paper_dir(root, paper) if paper else root

    def paper_cfg(self, paper: str) -> dict:
        return load_paper(self.dir / "config" / "papers" / f"{paper}.yaml", SCALE)

    def smk(self, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
        """Snakemake in the shared directory, one call at a time across workers. Only for calls that change
        nothing there (a dry run, a run with nothing to do): anything else belongs in ``copy``."""
        with FileLock(self.lock):
            return snakemake_local(self.dir, *args, timeout=timeout)

    def noop_run(self) -> subprocess.CompletedProcess:
        """``smk()`` once per process: the second run of the whole DAG, which every paper's no-op test reads
        (five identical runs of about 3 CPU-seconds each before)."""
        if self.dir not in _NOOP_RUNS:
            _NOOP_RUNS[self.dir] = self.smk()
        return _NOOP_RUNS[self.dir]

    def copy(self, dst: Path) -> Path:
        """A copy of the finished directory (results, Snakemake's metadata, file times kept) to mutate."""
        with FileLock(self.lock):
            shutil.copytree(self.dir, dst, symlinks=True, ignore=shutil.ignore_patterns("locks", "incomplete"))
        return dst


def declared_outputs(dag: TinyDag, paper: str) -> list[Path]:
    """What the paper's YAML says its tiny run writes: every declared artefact's ``writes`` under its layout
    directory, the claims files, and the summary of every experiment that has cells at tiny."""
    cfg = dag.paper_cfg(paper)
    root = dag.results()
    experiments = sorted({e for e, _ in expand_cells(paper, cfg, SCALE)})
    return [
        *A.all_outputs(root, paper, cfg),
        *layout.claims_paths(root, paper),
        *(layout.summary_path(root, paper, e) for e in experiments),
    ]


def assert_declared_outputs_exist(dag: TinyDag, paper: str) -> list[Path]:
    outputs = declared_outputs(dag, paper)
    assert len(outputs) > len(dag.paper_cfg(paper).get("artefacts") or {}), outputs
    missing = [str(p.relative_to(dag.dir)) for p in outputs if not p.exists() or p.stat().st_size == 0]
    assert not missing, f"declared outputs missing or empty: {missing}"
    return outputs


# What a job's log must not carry (issue 26 items 2 and 6): a Python warning raised in our own code (the
# warnings module prints "<file>:<line>: <Category>Warning: ..." with the file of the code that triggered it:
# ours when a library deprecates something we call) and a figure the house style check flagged
# (``seqmix.report.plots`` logs "figure <name>: <problems>" and still writes the file).
WARNING_OF_OURS = re.compile(r"/seqmix/[^\s:]+\.py:\d+: \w*Warning: |seqmix\.report\.plots WARNING figure ")


def warnings_of_ours(paper_dir: Path) -> list[str]:
    """Every line of the paper's job logs (``<paper>/logs/<rule>/*.log``) that ``WARNING_OF_OURS`` matches,
    prefixed by the log's path relative to ``paper_dir``."""
    found = []
    for log in sorted((paper_dir / "logs").rglob("*.log")):
        for line in log.read_text(errors="replace").splitlines():
            if WARNING_OF_OURS.search(line):
                found.append(f"{log.relative_to(paper_dir)}: {line[:300]}")
    return found


def _shared_dir(tmp_path_factory) -> Path:
    """A directory every xdist worker of this run sees (the parent of the workers' base temps), or this
    session's base temp when there are no workers (its parent is shared by every session of the user)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def tiny_dag(tmp_path_factory) -> TinyDag:
    shared = _shared_dir(tmp_path_factory)
    work, lock, status = shared / "tiny-dag", shared / "tiny-dag.lock", shared / "tiny-dag.status.json"
    with FileLock(lock):
        if not status.exists():
            if work.exists():  # a run that was interrupted before it recorded how it ended
                shutil.rmtree(work)
            work.mkdir()
            copy_workflow(work)
            start = time.monotonic()
            try:
                r = snakemake_local(work, "--config", f"scale={SCALE}", timeout=DAG_TIMEOUT)
                rc, log = r.returncode, r.stdout[-3000:] + r.stderr[-5000:]
            except subprocess.TimeoutExpired as e:
                rc, log = -1, f"the tiny DAG ran past {DAG_TIMEOUT} s: {str(e.stderr or '')[-5000:]}"
            status.write_text(json.dumps({"returncode": rc, "log": log, "seconds": time.monotonic() - start}))
        ran = json.loads(status.read_text())
    assert ran["returncode"] == 0, ran["log"]
    return TinyDag(dir=work, lock=lock, seconds=ran["seconds"])
