"""The tiny rotations DAG in a temporary directory, run once per test session and shared by the tests: M1-M7
train through the three learning-rate stages (each restarting from the best validation weights) and are
evaluated at every power of two up to 32x the training context; the long extrapolation table, Tables 1-4,
Figure 1 and the theory analysis exist; the consistency claims hold and every claim expected at tiny is
judged; a second run is a no-op. (The whole DAG is about 90 s on an idle 2-core box, longer under load.)"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import torch

from seqmix.claims.engine import VERDICTS
from seqmix.config.loading import load_paper
from tests.conftest import copy_workflow, snakemake_local

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]
VARIANTS = {f"m{k}" for k in range(1, 8)}


def smk(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    return snakemake_local(workdir, *args, timeout=600)


@pytest.fixture(scope="session")
def dag(tmp_path_factory):
    work = copy_workflow(tmp_path_factory.mktemp("rotations-dag"), ["rotations"])  # this DAG: rotations only
    first = smk(work)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-5000:]
    return {"dir": work, "first": first}


def test_outputs_exist(dag):
    r = dag["dir"] / "results" / "tiny" / "rotations"
    for rel in (
        *(f"tables/table{i}.{ext}" for i in (1, 2, 3, 4) for ext in ("md", "tex", "csv")),
        *(f"figures/{n}.{ext}" for n in ("figure1", "figure_e6") for ext in ("png", "pdf", "csv")),
        "extrapolation/summary.csv",
        "theory_checks/summary.csv",
        "claims.md",
        "claims.csv",
        "e1/summary.csv",
    ):
        assert (r / rel).stat().st_size > 0, rel
    summary = pd.read_csv(r / "e1" / "summary.csv")
    assert set(summary["variant"]) == VARIANTS and set(summary["seed"]) == {0}
    long = pd.read_csv(r / "extrapolation" / "summary.csv")
    assert sorted(set(long["factor"])) == [1, 2, 4, 8, 16, 32] and len(long) == 7 * 6
    assert (long.loc[long["factor"] == 1, "ratio"] == 1.0).all()
    table1 = pd.read_csv(r / "tables" / "table1.csv")
    assert len(table1) == 6 and (table1["paper PPL"] == "not reported").all()
    assert table1["data (ours)"].str.contains("substitute").all()


def test_training_ran_the_stages(dag):
    """Every leaf validated through its three stages and finished on its best validation weights."""
    leaves = list((dag["dir"] / "results" / "tiny" / "rotations" / "e1").glob("*/*/seed0"))
    assert len(leaves) == 7
    for leaf in leaves:
        ckpt = torch.load(leaf / "checkpoint.pt", weights_only=True)
        hist = ckpt["history"]
        assert hist["val_step"] == [6, 12, 18, 24], leaf
        assert ckpt["best"]["loss"] == min(hist["val_loss"])
        model = torch.load(leaf / "model.pt", weights_only=True)
        assert all(torch.equal(model[k], ckpt["best"]["model"][k]) for k in model), leaf


def test_consistency_claims_hold(dag):
    """Only consistency claims must hold; every claim expected at tiny is judged (none 'not run')."""
    claims = pd.read_csv(dag["dir"] / "results" / "tiny" / "rotations" / "claims.csv", keep_default_na=False)
    assert set(claims["verdict"]) <= set(VERDICTS)
    consistency = claims[claims["kind"] == "consistency"]
    assert len(consistency) >= 30 and (consistency["verdict"] == "holds").all(), consistency.to_string()
    assert "invalid" not in set(claims["verdict"]), claims[claims["verdict"] == "invalid"].to_string()
    paper = load_paper(dag["dir"] / "config" / "papers" / "rotations.yaml", "tiny")
    expected_at = {c["id"]: c["expected_at"] for c in paper["claims"]}
    not_run = claims[claims["verdict"] == "not run"]
    assert all("tiny" not in expected_at[i] for i in not_run["id"]), not_run.to_string()
    learned = claims[claims["id"].str.startswith(("table1-", "table2-", "rot-learned", "rot-alibi", "rot-spec"))]
    assert len(learned) >= 15 and (learned["verdict"].isin(["not expected at this scale", "not run"])).all()


def test_second_run_is_noop(dag):
    r = smk(dag["dir"])
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Nothing to be done" in r.stdout + r.stderr


def test_another_papers_selection_reruns_nothing(dag):
    """mlflow_init makes the experiments of every paper file, so running another papers selection leaves the
    store (and every finished stage after it) alone: coming back to this selection has nothing to do."""
    other = smk(dag["dir"], "--config", "papers=[rotations,heads]", "--until", "mlflow_init")
    assert other.returncode == 0, other.stderr[-3000:]
    back = smk(dag["dir"])
    log = back.stdout + back.stderr
    assert back.returncode == 0, log[-3000:]
    assert not re.findall(r"rule (mlflow_init|train|evaluate|claims|collect)\b", log), log[-3000:]
    assert "Nothing to be done" in log, log[-3000:]
