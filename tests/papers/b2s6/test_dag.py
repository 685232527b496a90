"""b2s6's slice of the shared tiny DAG (tests/papers/conftest.py: every paper, run once per test session):
every figure, table and analysis it declares exists, with one row per unit, its consistency claims hold,
every claim expected at tiny is judged, and a second run is a no-op."""

from __future__ import annotations

import pandas as pd
import pytest

from seqmix.claims.checks import VERDICTS
from tests.papers.conftest import DAG_TEST_TIMEOUT, assert_declared_outputs_exist, warnings_of_ours

pytestmark = [pytest.mark.integration, pytest.mark.timeout(DAG_TEST_TIMEOUT)]


def test_outputs_exist(tiny_dag):
    assert_declared_outputs_exist(tiny_dag, "b2s6")
    r = tiny_dag.results("b2s6")
    assert set(pd.read_csv(r / "e1" / "summary.csv")["variant"]) == {"s4d", "s6", "b2s6"}
    e3 = pd.read_csv(r / "e3" / "summary.csv")
    assert len(e3) == 12 and set(e3["sigma2"]) == {0.01, 100.0}
    stability = pd.read_csv(r / "stability" / "summary.csv")
    assert set(stability["variant"]) == {"s4d", "s6", "s6_fixed"} and set(stability["c"]) == {1.0, 3.0}
    assert (stability.loc[stability["variant"] == "s6", "max_grad_norm_w"] > 0).all()
    curves = pd.read_csv(r / "figures" / "figure3.csv")
    assert sorted(curves["epoch"].unique()) == [1.0, 2.0, 3.0], "one test point per epoch"


def test_consistency_claims_hold(tiny_dag):
    """Only consistency claims must hold; every claim expected at tiny is judged (none 'not run' or invalid).
    'not run' only where tiny is not expected: Table 1's per-cell claims (paper scale only) whose h tiny lacks."""
    claims = pd.read_csv(tiny_dag.results("b2s6") / "claims.csv", keep_default_na=False)
    assert set(claims["verdict"]) <= set(VERDICTS)
    consistency = claims[claims["kind"] == "consistency"]
    assert len(consistency) >= 10
    assert (consistency["verdict"] == "holds").all(), consistency[consistency["verdict"] != "holds"].to_string()
    assert "invalid" not in set(claims["verdict"]), claims[claims["verdict"] == "invalid"].to_string()
    paper = tiny_dag.paper_cfg("b2s6")
    expected_at = {c["id"]: c["expected_at"] for c in paper["claims"]}
    not_run = claims[claims["verdict"] == "not run"]
    assert all("tiny" not in expected_at[i] for i in not_run["id"]), not_run.to_string()
    assert set(not_run["id"]) <= {i for i in expected_at if i.startswith("table1-h")}, not_run.to_string()
    assert all("tiny" in expected_at[i] for i in claims[claims["verdict"].isin(["holds", "differs"])]["id"])


def test_second_run_is_noop(tiny_dag):
    r = tiny_dag.noop_run()
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Nothing to be done" in r.stdout + r.stderr


def test_every_run_reached_mlflow(tiny_dag):
    """Guards: a glob key of train.param_hints made MLflow refuse the whole b2s6 ingest; the DAG still passed
    because a failed ingest only warns (the buffers are kept for mlflow_sync)."""
    logs = tiny_dag.results("b2s6") / "logs"
    failed = [p.name for p in logs.rglob("*.log") if "mlflow ingestion failed" in p.read_text()]
    assert not failed, failed


def test_job_logs_carry_no_warnings_of_ours(tiny_dag):
    """No Python warning raised in seqmix code and no figure flagged by the style check in any b2s6 job log."""
    assert warnings_of_ours(tiny_dag.results("b2s6")) == []
