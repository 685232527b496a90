"""A claim that names a column its analysis table does not have is 'invalid', never 'not run' (issue 26 item 7).

An experiment's columns are declared (``Task.summary_columns``) and checked at config load; an analysis
artefact's are its own and declared nowhere, so a claim naming one it never writes read 'not run' with exit 0
after every job had run, however often it ran. Now the claim is invalid, its detail naming the table, the
missing column and the columns the table has; the claims step learns which tables are analysis tables from
its run spec (``config.artefacts.claims_spec``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from seqmix.claims import checks as V
from seqmix.claims import engine as C
from seqmix.cli.main import main as cli_main
from seqmix.config import artefacts as A
from seqmix.config.loading import load_paper
from seqmix.io import write_text

THEORY = [
    {"check": "T1", "quantity": "rank", "value": 4.0},
    {"check": "T2", "quantity": "rank", "value": 6.0},
]


def write_table(results: Path, table: str, rows: list[dict]) -> None:
    path = results / table / "summary.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, pd.DataFrame(rows).to_csv(index=False), checksum=True)


def claim(ours: dict, check=None, table: str = "theory") -> dict:
    return {
        "id": "c1",
        "source": "closed-form",
        "artefact": "Table 1",
        "statement": "s",
        "reported": None,
        "ours": {"table": table, "metric": "value", **ours},
        "check": check or {"kind": "within", "target": 4.0, "atol": 1e-9},
        "expected_at": ["tiny"],
    }


def test_the_control_holds(tmp_path):
    write_table(tmp_path, "theory", THEORY)
    res = C.evaluate_claim(claim({"where": {"check": "T1"}}), tmp_path, "tiny", {"theory"})
    assert res.verdict == V.HOLDS


@pytest.mark.parametrize(
    "ours, missing",
    [
        ({"metric": "valeu", "where": {"check": "T1"}}, "'valeu'"),  # a misspelt metric
        ({"where": {"check": "T1", "case": "b=2"}}, "'case'"),  # a where key the table has no column for
        ({"over": "k", "where": {"check": "T1", "k": [1, 2]}}, "'k'"),  # a series over a column it lacks
    ],
)
def test_a_column_an_analysis_table_lacks_makes_the_claim_invalid(tmp_path, ours, missing):
    write_table(tmp_path, "theory", THEORY)
    check = {"kind": "ordering", "order": [1, 2], "direction": "increasing"} if "over" in ours else None
    res = C.evaluate_claim(claim(ours, check), tmp_path, "tiny", {"theory"})
    assert res.verdict == V.INVALID
    assert f"theory/summary.csv (an analysis table) has no column {missing}" in res.detail
    assert "its columns: check, quantity, value" in res.detail


def test_a_relative_to_metric_an_analysis_table_lacks_is_invalid(tmp_path):
    write_table(tmp_path, "theory", [{"check": "T1", "x": x, "value": 10.0**-x} for x in (1, 2, 3)])
    check = {"kind": "slope", "logy": True, "relative_to": {"metric": "rate"}, "lo": 0.9, "hi": 1.1}
    res = C.evaluate_claim(claim({"over": "x", "where": {"check": "T1", "x": [1, 2, 3]}}, check), tmp_path, "tiny",
                           {"theory"})  # fmt: skip
    assert res.verdict == V.INVALID and "has no column 'rate'" in res.detail


def test_an_experiments_missing_column_still_reads_not_run(tmp_path):
    """An experiment's columns are checked at config load; one missing from its summary (a length not
    evaluated at this scale) is results not yet there."""
    write_table(tmp_path, "exp1", THEORY)
    res = C.evaluate_claim(claim({"metric": "valeu"}, table="exp1"), tmp_path, "tiny", {"theory"})
    assert res.verdict == V.NOT_RUN and "metric 'valeu' not in exp1/summary.csv" in res.detail


def test_a_missing_analysis_table_reads_not_run(tmp_path):
    res = C.evaluate_claim(claim({"metric": "valeu"}), tmp_path, "tiny", {"theory"})
    assert res.verdict == V.NOT_RUN and "does not exist" in res.detail


def test_the_claims_spec_names_the_analysis_tables(root):
    heads = load_paper(root / "config" / "papers" / "heads.yaml", "tiny")
    spec = A.claims_spec("heads", heads, "tiny", "results", {"uri": "none"})
    assert spec["analysis_tables"] == ["spectrum", "theory", "theory_checks"]
    assert not set(spec["analysis_tables"]) & set(spec["inputs"]["summaries"])  # the experiments are apart


def test_the_claims_step_reads_them_from_its_run_spec(tmp_path, monkeypatch):
    """`seqmix claims` (the DAG's claims rule) judges with the run spec's analysis tables."""
    from seqmix.cli import papers

    paper_dir = tmp_path / "tiny" / "alpha"
    write_table(paper_dir, "theory", THEORY)
    spec = {
        "claims": [claim({"metric": "valeu"})],
        "analysis_tables": ["theory"],
        "paper_dir": str(paper_dir),
        "scale": "tiny",
        "paper": "alpha",
        "data": "",
        "inputs": {"summaries": {}, "artefacts": {}},
    }
    (tmp_path / "claims.json").write_text(json.dumps(spec))
    monkeypatch.setattr(papers, "_log_paper_artefacts", lambda *a: None)  # MLflow: not this test's
    md, csv = paper_dir / "claims.md", paper_dir / "claims.csv"
    cli_main(["claims", "--run", str(tmp_path / "claims.json"), "--out-md", str(md), "--out-csv", str(csv)])
    row = pd.read_csv(csv, keep_default_na=False).iloc[0]
    assert row["verdict"] == V.INVALID and "has no column 'valeu'" in row["detail"]
