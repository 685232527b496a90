"""rotations' slice of the shared tiny DAG (tests/papers/conftest.py: every paper, run once per session): M1-M7
train through the three learning-rate stages (each restarting from the best validation weights) and are
evaluated at every power of two up to 32x the training context; the long extrapolation table, Tables 1-4,
Figure 1 and the theory analysis exist; the consistency claims hold and every claim expected at tiny is
judged; a second run is a no-op."""

from __future__ import annotations

import re

import pandas as pd
import pytest
import torch

from seqmix.claims.checks import VERDICTS
from tests.papers.conftest import DAG_TEST_TIMEOUT, assert_declared_outputs_exist, warnings_of_ours

pytestmark = [pytest.mark.integration, pytest.mark.timeout(DAG_TEST_TIMEOUT)]
VARIANTS = {f"m{k}" for k in range(1, 8)}


def test_outputs_exist(tiny_dag):
    assert_declared_outputs_exist(tiny_dag, "rotations")
    r = tiny_dag.results("rotations")
    summary = pd.read_csv(r / "e1" / "summary.csv")
    assert set(summary["variant"]) == VARIANTS and set(summary["seed"]) == {0}
    long = pd.read_csv(r / "extrapolation" / "summary.csv")
    assert sorted(set(long["factor"])) == [1, 2, 4, 8, 16, 32] and len(long) == 7 * 6
    assert (long.loc[long["factor"] == 1, "ratio"] == 1.0).all()
    table1 = pd.read_csv(r / "tables" / "table1.csv")
    assert len(table1) == 6 and (table1["paper PPL"] == "not reported").all()
    assert table1["data (ours)"].str.contains("substitute").all()


def test_training_ran_the_stages(tiny_dag):
    """Every leaf validated through its three stages and finished on its best validation weights."""
    leaves = list((tiny_dag.results("rotations") / "e1").glob("*/*/seed0"))
    assert len(leaves) == 7
    for leaf in leaves:
        ckpt = torch.load(leaf / "checkpoint.pt", weights_only=True)
        hist = ckpt["history"]
        assert hist["val_step"] == [6, 12, 18, 24], leaf
        assert ckpt["best"]["loss"] == min(hist["val_loss"])
        model = torch.load(leaf / "model.pt", weights_only=True)
        assert all(torch.equal(model[k], ckpt["best"]["model"][k]) for k in model), leaf


def test_consistency_claims_hold(tiny_dag):
    """Only consistency claims must hold; every claim expected at tiny is judged (none 'not run')."""
    claims = pd.read_csv(tiny_dag.results("rotations") / "claims.csv", keep_default_na=False)
    assert set(claims["verdict"]) <= set(VERDICTS)
    consistency = claims[claims["kind"] == "consistency"]
    assert len(consistency) >= 30 and (consistency["verdict"] == "holds").all(), consistency.to_string()
    assert "invalid" not in set(claims["verdict"]), claims[claims["verdict"] == "invalid"].to_string()
    paper = tiny_dag.paper_cfg("rotations")
    expected_at = {c["id"]: c["expected_at"] for c in paper["claims"]}
    not_run = claims[claims["verdict"] == "not run"]
    assert all("tiny" not in expected_at[i] for i in not_run["id"]), not_run.to_string()
    learned = claims[claims["id"].str.startswith(("table1-", "table2-", "rot-learned", "rot-alibi", "rot-spec"))]
    assert len(learned) >= 15 and (learned["verdict"].isin(["not expected at this scale", "not run"])).all()


def test_second_run_is_noop(tiny_dag):
    r = tiny_dag.noop_run()
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Nothing to be done" in r.stdout + r.stderr


def test_another_papers_selection_reruns_nothing(tiny_dag):
    """mlflow_init makes the experiments of every paper file, so running another papers selection leaves the
    store (and every finished stage after it) alone: coming back to this selection has nothing to do."""
    other = tiny_dag.smk("--config", "papers=[rotations,heads]", "--until", "mlflow_init")
    assert other.returncode == 0, other.stderr[-3000:]
    back = tiny_dag.smk()
    log = back.stdout + back.stderr
    assert back.returncode == 0, log[-3000:]
    assert not re.findall(r"rule (mlflow_init|train|evaluate|claims|collect)\b", log), log[-3000:]
    assert "Nothing to be done" in log, log[-3000:]


def test_job_logs_carry_no_warnings_of_ours(tiny_dag):
    """No Python warning raised in seqmix code and no figure flagged by the style check in any rotations job log."""
    assert warnings_of_ours(tiny_dag.results("rotations")) == []
