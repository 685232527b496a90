"""Artefacts as data: a paper is one YAML and one package. A throwaway paper written here (config/papers/toy.yaml
in a copy of the workflow, its package, with the schema of its `analysis:` block, in an overlay directory on
PYTHONPATH) enters the DAG with no other file changed; run for real, editing one claim re-runs only the
claims step and editing one artefact's analysis slice re-runs only that artefact (and what reads its
outputs: the claims and the report index)."""

from __future__ import annotations

import os
import re
import textwrap

import pytest

from tests.conftest import ROOT, copy_workflow, snakemake_local

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

TOY_YAML = """\
paper: toy
title: A throwaway paper
experiments:
  e1:
    description: linear SSM at initialisation, ||dy/dx_0|| at two lengths
    stages: [diagnose]
    base:
      task: {name: lag_sensitivity, d: 4, T: [4, 8], draws: 1}
      model: {name: bare, mixer: {name: linear_ssm, state: 4, init: default}}
      train: {dtype: float64}
    variants:
      ssm: {}
    scales:
      tiny: {seeds: [0], cell_size: 1}
      cpu: {seeds: [0], cell_size: 1}
      paper: {seeds: [0], cell_size: 1}
analysis:
  note: {greeting: hello}
  plot: {scale_by: 2.0}
artefacts:
  note:
    kind: table
    writes: [note.md]
    caption: A note that shows a reported number and a setting.
    analysis: [note]
    claims: [toy-positive]
  numbers:
    kind: analysis
    reads: {summaries: [e1]}
    writes: [summary.csv]
    caption: The rows of e1, counted.
  plot:
    kind: figure
    reads: {artefacts: [numbers]}
    writes: [plot.csv]
    report: [plot.csv]
    caption: The count, scaled.
    analysis: [plot]
claims:
- id: toy-positive
  source: closed-form
  artefact: toy
  statement: e1 has rows
  reported: 3.5
  ours: {table: numbers, metric: value, where: {quantity: rows}}
  check: {kind: threshold, op: '>', value: 0}
  expected_at: [tiny, cpu, paper]
"""

TOY_PACKAGE = '''
"""The throwaway paper's artefacts: fn(spec, out)."""
import csv


def note(spec, out):
    (out / "note.md").write_text(f"{spec['analysis']['note']['greeting']} {spec['reported']['toy-positive']}\\n")


def numbers(spec, out):
    rows = list(csv.DictReader(open(spec["inputs"]["summaries"]["e1"])))
    (out / "summary.csv").write_text(f"quantity,value\\nrows,{len(rows)}\\n")


def plot(spec, out):
    rows = list(csv.DictReader(open(spec["inputs"]["artefacts"]["numbers"][0])))
    scaled = float(rows[0]["value"]) * spec["analysis"]["plot"]["scale_by"]
    (out / "plot.csv").write_text(f"quantity,value\\nscaled,{scaled}\\n")


ARTEFACTS = {"note": note, "numbers": numbers, "plot": plot}
'''

TOY_ANALYSIS_SCHEMA = """\
type: object
additionalProperties: false
properties:
  note: {type: object, additionalProperties: false, properties: {greeting: {type: string}}}
  plot: {type: object, additionalProperties: false, properties: {scale_by: {type: number}}}
"""


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """A copy of the workflow with config/papers/toy.yaml added, the package in an overlay on PYTHONPATH."""
    (tmp_path / "work").mkdir()
    work = copy_workflow(tmp_path / "work")
    (work / "config" / "papers" / "toy.yaml").write_text(TOY_YAML)
    pkg = tmp_path / "overlay" / "seqmix" / "papers" / "toy"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(textwrap.dedent(TOY_PACKAGE))
    (pkg / "analysis.schema.yaml").write_text(TOY_ANALYSIS_SCHEMA)  # the types of its settings, with its code
    monkeypatch.setenv(
        "PYTHONPATH",
        os.pathsep.join(filter(None, [str(tmp_path / "overlay"), str(ROOT / "src"), os.environ.get("PYTHONPATH")])),
    )
    return work


def job_counts(out: str) -> dict[str, int]:
    """{rule: jobs} from a dry run's 'Job stats' table."""
    table = out.split("Job stats:", 1)[1].split("total", 1)[0]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)\s*$", table, flags=re.M)}


def test_throwaway_paper_enters_the_dag_with_no_other_file_changed(toy):
    papers = sorted(p.name for p in (toy / "config" / "papers").glob("*.yaml"))
    assert papers == sorted([p.name for p in (ROOT / "config" / "papers").glob("*.yaml")] + ["toy.yaml"])
    for rel in ("Snakefile", "config/config.yaml", "workflow/rules/artefacts.smk", "workflow/rules/common.smk"):
        assert (toy / rel).read_text() == (ROOT / rel).read_text(), rel
    r = snakemake_local(toy, "-n", timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    jobs = job_counts(r.stdout + r.stderr)
    assert {"toy_note", "toy_numbers", "toy_plot", "heads_table1", "heads_figure4"} <= set(jobs), jobs
    assert jobs["claims"] == len(papers)


def test_claim_edit_reruns_claims_only_and_slice_edit_reruns_its_artefact(toy):
    first = snakemake_local(toy, "--config", "papers=[toy]", timeout=600)
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-3000:]
    res = toy / "results" / "tiny" / "toy"
    assert (res / "tables" / "note.md").read_text() == "hello 3.5\n"  # the analysis slice and the claim's reported
    assert (res / "numbers" / "summary.csv").read_text() == "quantity,value\nrows,2\n"  # two T of one leaf
    assert (res / "figures" / "plot.csv").read_text() == "quantity,value\nscaled,4.0\n"
    assert "holds" in (res / "claims.csv").read_text()

    cfg = toy / "config" / "papers" / "toy.yaml"
    cfg.write_text(TOY_YAML.replace("op: '>', value: 0}", "op: '>', value: 1}"))
    r = snakemake_local(toy, "-n", "--config", "papers=[toy]", timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert job_counts(r.stdout + r.stderr) == {"claims_run_config": 1, "claims": 1, "report_index": 1, "all": 1}

    cfg.write_text(TOY_YAML.replace("scale_by: 2.0", "scale_by: 3.0"))
    r = snakemake_local(toy, "-n", "--config", "papers=[toy]", timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert job_counts(r.stdout + r.stderr) == {
        "artefact_run_config": 1,
        "toy_plot": 1,
        "claims": 1,
        "report_index": 1,
        "all": 1,
    }
    assert "artefacts/plot.json" in r.stdout + r.stderr

    cfg.write_text(TOY_YAML)
    r = snakemake_local(toy, "-n", "--config", "papers=[toy]", timeout=300)
    assert "Nothing to be done" in r.stdout + r.stderr, r.stdout[-2000:]
