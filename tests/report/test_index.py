"""report-index (the DAG's report_index): report.md's line on browsing MLflow follows tracking.uri (it printed
`sqlite:///results/mlflow.db` whatever the config said), and the front page's counts table."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from docutils.core import publish_doctree
from docutils.nodes import entry, problematic, row, system_message

from seqmix.claims.render import COUNT_COLUMNS
from seqmix.cli.main import main as cli_main
from seqmix.report.index import mlflow_line, write_index
from seqmix.tracking.store import ui_command
from tests.report.test_claims_page import CLAIMS, _csv


@pytest.mark.parametrize(
    "uri,db",
    [
        ("sqlite:///results/mlflow.db", "results/mlflow.db"),
        ("sqlite:////scratch/store/runs.db", "/scratch/store/runs.db"),
    ],
)
def test_an_embedded_store_gets_the_command_seqmix_where_prints(uri, db):
    line = mlflow_line(uri, Path("results"))
    assert line.endswith(f"`{ui_command(Path('results'), db)}`")
    assert f"--backend-store-uri sqlite:///{db} --artifacts-destination results/.mlflow/artifacts" in line
    assert ui_command(Path("results"), "results/mlflow.db") == ui_command(Path("results"))  # where's own


def test_a_server_or_no_tracking_is_said_as_such():
    assert "the tracking server http://mlflow.example:5000" in mlflow_line("http://mlflow.example:5000", Path("r"))
    assert "mlflow ui" not in mlflow_line("https://h:1", Path("r"))
    assert mlflow_line("none", Path("r")).startswith("MLflow: tracking is off (tracking.uri: none)")


def test_report_md_names_the_configured_store(tmp_path):
    results = tmp_path / "out" / "tiny"
    _csv(results)
    write_index(results, ["alpha"], "tiny", results / "report.md", "sqlite:////elsewhere/m.db")
    text = (results / "report.md").read_text()
    assert "sqlite:////elsewhere/m.db" in text and "sqlite:///results/mlflow.db" not in text
    assert f"--artifacts-destination {tmp_path / 'out' / '.mlflow' / 'artifacts'}" in text  # the results root's


def test_the_front_page_counts_are_the_overview_with_the_papers_names(tmp_path):
    """--counts: the CSV report.html's front page shows (a csv-table, whose cells docutils parses as
    reStructuredText): the overview's rows with the papers as --names names them, reproduction first."""
    results = tmp_path / "tiny"
    _csv(results)
    _csv(results, "beta", CLAIMS[:2])  # an earlier run's paper, not in --names: its id
    name = "Why *x* is_ {y}? (alpha)"
    cli_main(["report-index", "--results", str(results), "--papers", "alpha", "--scale", "tiny",
              "--out", str(results / "report.md"), "--html", str(results / "o.html"),
              "--counts", str(results / "counts.csv"), "--names", f'{{"alpha": "{name}"}}',
              "--tracking-uri", "none"])  # fmt: skip
    rows = list(csv.reader(io.StringIO((results / "counts.csv").read_text())))
    assert rows[0] == ["paper", "kind", *COUNT_COLUMNS, "total"]
    assert [r[:2] for r in rows[1:]][:2] == [[r"Why \*x\* is\_ {y}? (alpha)", "reproduction"], [rows[2][0], "derived"]]
    assert {r[0] for r in rows[1:]} == {rows[1][0], "beta"}
    assert "tracking is off" in (results / "report.md").read_text()
    assert name in (results / "o.html").read_text().replace("&#x27;", "'")

    table = f".. csv-table::\n   :file: {results / 'counts.csv'}\n   :header-rows: 1\n"
    tree = publish_doctree(
        table, settings_overrides={"report_level": 1, "halt_level": 5, "warning_stream": io.StringIO()}
    )
    assert not list(tree.findall(system_message)) and not list(tree.findall(problematic))
    cells = [[e.astext() for e in r.findall(entry)] for r in tree.findall(row)]
    assert cells[1][:2] == [name, "reproduction"]  # the name as written, not as markup
