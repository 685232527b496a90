"""What a user meets when running the DAG outside `make`: the README's direct `.venv/bin/snakemake` command
works without the venv on PATH, scales keep their own results (results/<scale>/<paper>/...), and a dry run's
log is small and free of InputFunctionException tracebacks. The dry runs are of a copy of the workflow with
the default (relative) results root, as a user's `make dryrun` prints them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from seqmix import results as layout
from tests.conftest import copy_workflow

# What a clean dry run of the tiny DAG may print at most (on the layout before this test: ~130 KB of
# per-job shell commands and rerun reasons).
# per scheduled job: the shell commands, reasons and dumped params of main made it ~1 KB (130 KB for 132 jobs)
DRY_RUN_LOG_MAX_BYTES_PER_JOB = 700  # now ~600; with -p and reasons ~810
# The only outputs the scales share: the MLflow store's one-time setup marker (seqmix.results docstring).
SHARED_BY_SCALES = {"results/.mlflow/init.json"}


def snakemake(workdir: Path, *args: str, path: str | None = None, timeout: int = 300):
    """The README's shape: the venv's snakemake called directly (here `<venv python> -m snakemake`)."""
    env = dict(os.environ, PATH=path) if path is not None else None
    cmd = [sys.executable, "-m", "snakemake", "--workflow-profile", "profiles/local", *args]
    return subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def workflow(tmp_path_factory) -> Path:
    return copy_workflow(tmp_path_factory.mktemp("layout"))


@pytest.fixture(scope="module")
def dry_runs(workflow) -> dict[str, str]:
    out = {}
    for scale in ("tiny", "cpu"):
        r = snakemake(workflow, "-n", "--config", f"scale={scale}")
        assert r.returncode == 0, r.stderr[-3000:]
        out[scale] = r.stdout + r.stderr
    return out


def outputs_of(log: str) -> set[str]:
    return {p for line in re.findall(r"^\s+output: (.+)$", log, flags=re.M) for p in line.split(", ")}


def test_dry_run_log_is_small_and_clean(dry_runs):
    """Guards: no InputFunctionException (the collect rule's {experiment} once matched analysis directories
    such as heads/theory/) and a log a person can read (per-job shell commands and reasons made it ~130 KB)."""
    log = dry_runs["tiny"]
    assert "InputFunctionException" not in log and "Traceback" not in log
    jobs = len(re.findall(r"^(?:local)?rule \w+:$", log, flags=re.M))
    assert jobs > 50, "the per-job rule lines are still printed"
    assert re.search(r"^rule train:$", log, flags=re.M)
    # the log grows with the papers present, so the bound is per job
    assert len(log.encode()) / jobs < DRY_RUN_LOG_MAX_BYTES_PER_JOB, (len(log.encode()), jobs)


def test_collect_matches_only_declared_experiments(workflow):
    """Guards: `{paper}/{experiment}/summary.csv` matched any directory (analysis outputs such as
    heads/theory/, or a typo), so the collect rule was a candidate producer with an empty cell list. The
    experiment wildcard now takes the declared names only: an unknown one has no rule at all."""
    r = snakemake(workflow, "-n", "results/tiny/heads/nosuch/summary.csv")
    assert r.returncode != 0 and "MissingRuleException" in r.stdout + r.stderr, r.stdout[-2000:]
    r = snakemake(workflow, "-n", "results/tiny/heads/theory/summary.csv")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "rule collect:" not in r.stdout + r.stderr and "heads_theory" in r.stdout + r.stderr


def test_scales_write_disjoint_paths(dry_runs):
    """Guards: a cpu run replaced the tiny results (no scale in the paths). Every output of a scale lies
    under results/<scale>/, and the two dry runs share no output but the MLflow store's setup marker."""
    tiny, cpu = outputs_of(dry_runs["tiny"]), outputs_of(dry_runs["cpu"])
    assert len(tiny) > 50 and len(cpu) > 50
    assert tiny & cpu == SHARED_BY_SCALES, sorted(tiny & cpu)[:10]
    for scale, outs in (("tiny", tiny), ("cpu", cpu)):
        stray = [p for p in outs - SHARED_BY_SCALES if not p.startswith(f"results/{scale}/")]
        assert not stray, stray[:5]
    assert "results/tiny/heads/claims.csv" in tiny and "results/cpu/heads/claims.csv" in cpu
    assert "results/tiny/report.md" in tiny and "results/cpu/report.md" in cpu
    assert "results/tiny/claims_overview.html" in tiny and "results/cpu/claims_overview.html" in cpu


def test_jobs_run_without_the_venv_on_path(workflow):
    """Guards: the README's `.venv/bin/snakemake ...` failed outside `make` because the rules called a bare
    `python`. With PATH holding only the system's directories, a shell job (the heads theory analysis, no
    training) still runs, with the interpreter that runs Snakemake."""
    target = "results/tiny/heads/theory/summary.csv"
    r = snakemake(workflow, "-p", target, path=os.pathsep.join(("/usr/bin", "/bin")))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert (workflow / target).stat().st_size > 0
    commands = [c for c in re.findall(r"^Shell command: (.+)$", r.stdout + r.stderr, flags=re.M) if c != "None"]
    assert commands and all(c.startswith(f"{sys.executable} -m seqmix ") for c in commands), commands


def test_where_lists_every_scale(tmp_path):
    """`seqmix where` (make reproduce's last line) lists each scale's claims side by side."""
    for scale in ("tiny", "cpu"):
        md, _ = layout.claims_paths(layout.scale_root(tmp_path, scale), "heads")
        md.parent.mkdir(parents=True)
        md.write_text("x")
    r = subprocess.run(
        [sys.executable, "-m", "seqmix", "where", "--results", str(tmp_path)], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    for scale in ("tiny", "cpu"):
        assert f"scale {scale}:" in r.stdout and str(tmp_path / scale / "heads" / "claims.md") in r.stdout


def test_scale_root_rejects_unknown_scales(tmp_path):
    assert layout.scale_root(tmp_path, "cpu") == tmp_path / "cpu"
    with pytest.raises(ValueError, match="huge"):
        layout.scale_root(tmp_path, "huge")
