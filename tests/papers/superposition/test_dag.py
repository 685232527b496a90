"""The tiny frontier-superposition DAG in a temporary directory, run once per test session: every table,
figure and claims file exists, the consistency claims hold, the figures' CSVs are read from the logged
per-epoch diagnostics, and a second run is a no-op."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pandas as pd
import pytest

from seqmix.claims.engine import VERDICTS
from tests.conftest import copy_workflow, snakemake_local

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

FIGURES = [
    "figure1",
    "figure2",
    "figure3",
    "figure_e3_mobius",
    "figure_e4_diagonalisation",
    "figure_e6_gradlaw",
    "figure_e7_conjd",
    "figure_e8_mobius_A",
    "figure_e11_beta_ladder",
]


def smk(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    return snakemake_local(workdir, *args, timeout=800)


@pytest.fixture(scope="session")
def sdag(tmp_path_factory):
    work = copy_workflow(tmp_path_factory.mktemp("superposition-dag"), ["superposition"])
    first = smk(work)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-5000:]
    return work


def test_outputs_exist(sdag):
    r = sdag / "results" / "tiny" / "superposition"
    rels = [
        "claims.md",
        "claims.csv",
        "theory/summary.csv",
        "theory/mobius_summary.csv",
        "theory/mobius_trace.csv",
        "theory/gradlaw.csv",
        "theory/conjd.csv",
        "theory/bounds.csv",
        "theory/ladder.csv",
    ]
    rels += [f"tables/table{i}.{ext}" for i in ("1", "2", "3", "_e11") for ext in ("md", "tex", "csv")]
    rels += [f"figures/{f}.{ext}" for f in FIGURES for ext in ("png", "pdf", "csv")]
    rels += [f"{e}/summary.csv" for e in ("e1", "e2", "e4", "e5", "e11")]
    for rel in rels:
        assert (r / rel).stat().st_size > 0, rel
    e1 = pd.read_csv(r / "e1" / "summary.csv")
    assert set(e1["variant"]) == {"sup", "node", "e2e_cos", "e2e_ce", "composite_sup"}
    assert e1.groupby("variant")["seed"].nunique().min() >= 3
    for col in (
        "cos_z1",
        "cos_z3",
        "sel_front_l0",
        "alpha_eff_med_l0",
        "A_l0",
        "gamma_l2",
        "grad_norm_l0",
        "acc_new_frontier",
        "r_z3",
    ):
        assert col in e1.columns, col
    assert not list((sdag / "results").rglob(".*.tmp-*"))


def test_figure2_is_drawn_from_per_epoch_diagnostics(sdag):
    fig2 = pd.read_csv(sdag / "results" / "tiny" / "superposition" / "figures" / "figure2.csv")
    assert set(fig2["slot"]) == {1, 2, 3}
    assert fig2.groupby(["slot", "mode"])["step"].nunique().min() >= 3  # several evaluation epochs per curve
    assert fig2["step"].min() == 0


def test_consistency_claims_hold(sdag):
    """Only consistency claims must hold (issue 12); the rest are reported as they come out, but the E10
    bound checks train nothing, so they are judged at tiny (holds or differs, never not run)."""
    claims = pd.read_csv(sdag / "results" / "tiny" / "superposition" / "claims.csv", keep_default_na=False)
    assert set(claims["verdict"]) <= set(VERDICTS)
    assert not {"not run", "invalid"} & set(claims["verdict"]), claims[claims["verdict"].isin(["not run", "invalid"])]
    consistency = claims[claims["kind"] == "consistency"]
    assert len(consistency) >= 30
    assert (consistency["verdict"] == "holds").all(), consistency[consistency["verdict"] != "holds"].to_string()
    verdict = claims.set_index("id")["verdict"]
    for cid in (
        "lemma12-part1-mass",
        "lemma12-part2-cross-adversarial",
        "prop3-step3-corrected-coefficient-c0",
        "prop3-step3-paper-coefficient-c0",
        "slot0-table2-c0",
    ):
        assert verdict[cid] in ("holds", "differs"), (cid, verdict[cid])
    assert claims["seeds"].isin(["—", "3/3", "1/1"]).all(), claims["seeds"].value_counts()  # tiny: 3 seeds
    learned = claims[claims["id"].str.startswith(("table", "abstract", "fig", "e4-", "e5-"))]
    assert (learned["verdict"] == "not expected at this scale").all()
    assert (claims["scale"] == "tiny").all()


def test_second_run_is_noop(sdag):
    r = smk(sdag)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Nothing to be done" in r.stdout + r.stderr
