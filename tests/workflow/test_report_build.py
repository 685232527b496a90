"""A real report.html (issue 26): in a copy of the workflow restricted to a throwaway paper (the toy of
test_toy_paper_dag: one diagnose-only leaf, three artefacts, one claim; MLflow off), the DAG runs, then
`snakemake --report` builds the report, which is read back as the browser gets it: its categories, each
item's labels, the front page's text and counts table, and the pages it embeds (the artefact's table and the
overview sortable by the shared script). About 30 s on two busy cores."""

from __future__ import annotations

import base64
import json
import re
import time

import pytest

from seqmix.claims.render import COUNT_COLUMNS
from seqmix.report import sortable
from seqmix.report.captions import OVERVIEW_CATEGORY
from tests.conftest import copy_workflow, snakemake_local
from tests.workflow.test_toy_paper_dag import ADDED, TOY_YAML

pytestmark = pytest.mark.timeout(300)

# the figure's caption leads with a title, as the shipped papers' do; the report lists it by that title
CAPTION = "Figure 1 (toy): the count, scaled."
CATEGORY = "A throwaway paper (toy)"  # the toy's title does not name its id


def _embedded(page: str, name: str):
    """A variable of the report's page (``<script id="name">var x = <json>;</script>``)."""
    m = re.search(rf'<script id="{name}">\s*var \w+ = (.*?);\s*</script>', page, flags=re.S)
    assert m, f"report.html has no {name}"
    return json.loads(m.group(1))


def _page_of(result: dict) -> str:
    """The HTML page of a result, from its data URI."""
    return base64.b64decode(result["data_uri"].split("base64,", 1)[1]).decode()


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    work = copy_workflow(tmp_path_factory.mktemp("report"))
    files = {
        **ADDED,
        "config/papers/toy.yaml": TOY_YAML.replace("caption: The count, scaled.", f"caption: '{CAPTION}'"),
    }
    for rel, text in files.items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text(text)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTHONPATH", str(work / "src"))  # the jobs import the copy's src, where the toy paper is
        config = ["--config", "papers=[toy]", "tracking={uri: none}"]
        start = time.monotonic()
        run = snakemake_local(work, *config, timeout=240)
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
        built = snakemake_local(work, *config, "--report", "report.html", timeout=120)
        assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-3000:]
        print(f"DAG and report: {time.monotonic() - start:.1f} s")
    return work, (work / "report.html").read_text()


def test_items_are_in_the_papers_category_labelled_by_title_file_and_rule(report):
    _, page = report
    assert _embedded(page, "categories") == {
        OVERVIEW_CATEGORY: {"verdict counts": ["results/tiny/claims_overview.html"]},
        CATEGORY: {"claims": ["results/tiny/toy/claims.html"], "figures": ["results/tiny/toy/report/plot.html"]},
    }
    labels = {path: r["labels"] for path, r in _embedded(page, "results").items()}
    assert labels == {
        "results/tiny/toy/report/plot.html": {
            "artefact": "Figure 1 (toy)",
            "file": "figures/plot.csv",
            "rule": "toy_plot",
        },
        "results/tiny/toy/claims.html": {
            "artefact": "Claims: verdicts beside the paper's values",
            "file": "claims.csv",
            "rule": "claims",
        },
        "results/tiny/claims_overview.html": {
            "artefact": "Verdict counts per paper and kind",
            "file": "claims_overview.html",
            "rule": "report_index",
        },
    }  # fmt: skip


def test_the_front_page_describes_the_workflow_and_shows_the_counts(report):
    _, page = report
    front = _embedded(page, "workflow-desc")
    text = " ".join(re.sub(r"<[^>]+>", " ", front).split())
    assert "seqmix: long-range memory in sequence mixers" in text
    assert "generate data --&gt; train (per leaf)" in front  # the stages' graph
    assert "is hidden on this page by workflow/report/style.css , which every shipped profile" in text
    header = " ".join(["paper", "kind", *COUNT_COLUMNS, "total"])
    assert "Verdict counts Every paper's claims at this scale, counted per kind of verdict" in text
    # the table: the toy's one claim, a closed-form check (consistency) that holds
    counts = ["1", "0", *["0"] * (len(COUNT_COLUMNS) - 2), "1"]
    assert f"{header} {CATEGORY} consistency {' '.join(counts)}" in text
    # the paper's category and the overview linked by name
    assert (
        f"javascript:app.showCategory('{CATEGORY.replace(' ', '%20').replace('(', '%28').replace(')', '%29')}')"
        in front
    )
    assert "javascript:app.showResultInfo('results/tiny/claims_overview.html')" in front
    assert "System Message" not in front and "problematic" not in front  # no docutils error on the page


def test_the_pages_it_shows_sort_with_one_script(report):
    _, page = report
    results = _embedded(page, "results")
    table = _page_of(results["results/tiny/toy/report/plot.html"])
    assert '<table class="dataframe sortable">' in table and "<td>scaled</td>" in table
    overview = _page_of(results["results/tiny/claims_overview.html"])
    assert f"<td>{CATEGORY}</td><td>consistency</td>" in overview
    claims = _page_of(results["results/tiny/toy/claims.html"])
    for shown in (table, overview, claims):
        assert shown.count(sortable.script_tag()) == 1


def test_report_md_says_how_to_browse_the_runs(report):
    work, _ = report
    assert (
        (work / "results" / "tiny" / "report.md")
        .read_text()
        .rstrip()
        .endswith("MLflow: tracking is off (tracking.uri: none); nothing of this run is in MLflow.")
    )
