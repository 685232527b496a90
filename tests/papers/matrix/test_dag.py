"""The matrix slice of the shared tiny DAG (tests/papers/conftest.py: every paper, run once per test session):
every declared output exists, every trained leaf went through evaluate (with validation) and diagnose, the
parameter counts are matched, and the front page of report-facing tables holds every (task, mixer) pair."""

from __future__ import annotations

import pandas as pd
import pytest

from seqmix.config.leaves import expand_leaves
from tests.papers.conftest import DAG_TEST_TIMEOUT, assert_declared_outputs_exist, warnings_of_ours

pytestmark = [pytest.mark.integration, pytest.mark.timeout(DAG_TEST_TIMEOUT)]


def test_outputs_and_one_row_per_leaf(tiny_dag):
    assert_declared_outputs_exist(tiny_dag, "matrix")
    r = tiny_dag.results("matrix")
    cfg = tiny_dag.paper_cfg("matrix")
    leaves = expand_leaves("matrix", cfg, "tiny")
    grid = pd.read_csv(r / "grid" / "summary.csv")
    assert len(grid) == len(leaves)
    assert grid["score"].notna().all() and grid["n_params"].notna().all()
    # influence fits exist for every leaf (the diagnose stage ran on every trained model)
    assert grid["effective_memory"].notna().all()
    # matched parameters: every cell within 15% of its task's median (the width grid is coarse at 12k)
    gap = grid.groupby("experiment")["n_params"].transform(lambda s: (s - s.median()).abs() / s.median())
    assert gap.max() < 0.15, grid[["experiment", "mixer", "n_params"]]


def test_scores_and_ranking_cover_every_pair(tiny_dag):
    r = tiny_dag.results("matrix")
    cfg = tiny_dag.paper_cfg("matrix")
    pairs = {(e, v) for e, exp in cfg["experiments"].items() for v in exp["scales"]["tiny"]["variants"]}
    scores = pd.read_csv(r / "tables" / "scores.csv")
    assert set(zip(scores["task"], scores["mixer"])) == pairs
    # where a validation split exists the rate was chosen on it, never on the test score
    chosen = scores[scores["task"] != "stream"]["chosen_on"]
    assert chosen.str.startswith("validation").all()
    ranking = pd.read_csv(r / "tables" / "ranking.csv")
    assert set(ranking["mixer"]) >= {v for _, v in pairs}


def test_job_logs_carry_no_warnings_of_ours(tiny_dag):
    """No Python warning raised in seqmix code and no figure flagged by the style check in any matrix job log."""
    assert warnings_of_ours(tiny_dag.results("matrix")) == []
