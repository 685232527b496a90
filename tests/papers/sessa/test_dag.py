"""The tiny sessa DAG in a temporary directory, run once per test session and shared by the tests: its
tables and analysis exist with one row per model and both seeds, its consistency claims hold and every
claim expected at tiny is judged, and a second run is a no-op. (About 50 s on an idle 2-core box.)"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pandas as pd
import pytest

from seqmix.claims.engine import VERDICTS
from seqmix.config.loading import load_paper
from tests.conftest import copy_workflow, snakemake_local

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]
MODELS = {"sessa", "transformer", "mamba2", "sessa_nofb"}


def smk(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    return snakemake_local(workdir, *args, timeout=600)


@pytest.fixture(scope="session")
def dag(tmp_path_factory):
    work = copy_workflow(tmp_path_factory.mktemp("sessa-dag"), ["sessa"])  # this DAG: sessa only
    first = smk(work)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-5000:]
    return {"dir": work, "first": first}


def test_outputs_exist(dag):
    r = dag["dir"] / "results" / "tiny"
    for rel in (
        *(f"sessa/tables/{n}.{ext}" for n in ("table1", "table2", "e2_lag_bins") for ext in ("md", "tex", "csv")),
        "sessa/parameters/summary.csv",
        "sessa/theory_checks/summary.csv",
        *(f"sessa/figures/{n}.{ext}" for n in ("figure_d1_kernels", "figure_d5_deep") for ext in ("png", "pdf", "csv")),
        *(f"sessa/figures/figure{i}.{ext}" for i in (1, 2) for ext in ("png", "pdf")),
        "sessa/claims.md",
        "sessa/claims.csv",
        *(f"sessa/{exp}/summary.csv" for exp in ("e1", "e2", "e3")),
        "report.md",
    ):
        assert (r / rel).stat().st_size > 0, rel
    for exp in ("e1", "e2", "e3"):
        summary = pd.read_csv(r / "sessa" / exp / "summary.csv")
        assert set(summary["variant"]) == MODELS and set(summary["seed"]) == {0, 1}, exp
    table1 = pd.read_csv(r / "sessa" / "tables" / "table1.csv")
    assert len(table1) == 4 and all("substitute data" in c for c in table1.columns if c.startswith("ours"))


def test_consistency_claims_hold(dag):
    """Only consistency claims must hold; every claim expected at tiny is judged (none 'not run')."""
    claims = pd.read_csv(dag["dir"] / "results" / "tiny" / "sessa" / "claims.csv", keep_default_na=False)
    assert set(claims["verdict"]) <= set(VERDICTS)
    consistency = claims[claims["kind"] == "consistency"]
    theory = consistency["id"].str.startswith("theory-")
    assert (~theory).sum() == 3 and theory.sum() >= 20  # the theory checks' identities (spec §4)
    assert (consistency["verdict"] == "holds").all(), consistency[consistency["verdict"] != "holds"].to_string()
    assert "invalid" not in set(claims["verdict"]), claims[claims["verdict"] == "invalid"].to_string()
    paper = load_paper(dag["dir"] / "config" / "papers" / "sessa.yaml", "tiny")
    expected_at = {c["id"]: c["expected_at"] for c in paper["claims"]}
    not_run = claims[claims["verdict"] == "not run"]
    assert all("tiny" not in expected_at[i] for i in not_run["id"]), not_run.to_string()


def test_second_run_is_noop(dag):
    r = smk(dag["dir"])
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Nothing to be done" in r.stdout + r.stderr
