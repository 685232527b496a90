"""Artefacts as data, components by file: a paper is one YAML and one package, a mixer one module. In a copy of
the workflow, a throwaway paper (config/papers/toy.yaml and src/seqmix/papers/toy/ with the schema of its
`analysis:` block) whose experiment uses a throwaway mixer (src/seqmix/mixers/toy_mixer.py, registered with
@register_mixer) enters the DAG with no other file of the tree touched; run for real, editing one claim
re-runs only the claims step and editing one artefact's analysis slice re-runs only that artefact (and what
reads its outputs: the claims and the report index); a corrupt summary is left in place and named by a dry run,
and moved aside and made again, with what reads it, by a run that targets only the paper's claims. The throwaway
mixer keeps the mixer contract (seqmix.mixers.base.Mixer): the contract test, unedited, run on a copy of src
holding it, checks every clause on it and passes, and fails a copy that breaks three clauses (no DAG: that
test is in the unit lane, the others are marked integration)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import ROOT, copy_workflow, snakemake_local

pytestmark = pytest.mark.timeout(900)

TOY_YAML = """\
paper: toy
title: A throwaway paper
experiments:
  e1:
    description: the toy mixer at initialisation, ||dy/dx_0|| at two lengths
    stages: [diagnose]
    base:
      task: {name: lag_sensitivity, d: 4, T: [4, 8], draws: 1}
      model: {name: bare, mixer: {name: toy_mixer, decay: 0.5}}
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

from seqmix.io import write_text


def note(spec, out):
    (out / "note.md").write_text(f"{spec['analysis']['note']['greeting']} {spec['reported']['toy-positive']}\\n")


def numbers(spec, out):
    rows = list(csv.DictReader(open(spec["inputs"]["summaries"]["e1"])))
    # a summary the claims read carries a checksum (seqmix.results.verify_summary)
    write_text(out / "summary.csv", f"quantity,value\\nrows,{len(rows)}\\n", checksum=True)


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


TOY_MIXER = '''
"""A throwaway mixer: a causal exponential moving average of a linear map of the input,
y_t = sum_{s <= t} decay^(t - s) W x_s (x: (B, L, d_model) -> (B, L, d_model))."""

from typing import Annotated, ClassVar

import torch
from torch import nn

from ..options import Opt
from ..registry import register_mixer
from .base import check_input, check_positive_int


@register_mixer("toy_mixer")
class ToyMixer(nn.Module):
    example_options: ClassVar[dict] = {"decay": 0.5}
    causal = True

    def __init__(
        self,
        d_model: int,
        *,
        layer_idx: int = 0,
        seq_len: int | None = None,
        decay: Annotated[float, Opt(minimum=0, maximum=1, description="weight of the previous output")] = 0.5,
    ):
        super().__init__()
        check_positive_int(d_model=d_model)
        self.d_model, self.decay, self.backend = d_model, decay, "reference"
        self.W = nn.Linear(d_model, d_model, bias=False)

    def init_state(self, batch: int, dtype: torch.dtype = torch.float32, device=None) -> torch.Tensor:
        return torch.zeros(batch, self.d_model, dtype=dtype, device=device)

    def step(self, x_t: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = self.decay * state + self.W(x_t)
        return y, y

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_input(x, self.d_model, "toy_mixer")
        state, ys = x.new_zeros(x.shape[0], self.d_model), []
        for t in range(x.shape[1]):
            y, state = self.step(x[:, t], state)
            ys.append(y)
        return torch.stack(ys, dim=1)
'''

# The toy mixer as this test first wrote it, breaking clauses 2, 3 and 6 of the mixer contract: no
# example_options, no causal, init_state(batch). (good text, broken text) pairs applied to TOY_MIXER.
BREAKS = [
    ('"toy_mixer"', '"toy_broken"'),
    ('    example_options: ClassVar[dict] = {"decay": 0.5}\n    causal = True\n', ""),
    (
        "init_state(self, batch: int, dtype: torch.dtype = torch.float32, device=None) -> torch.Tensor:\n"
        "        return torch.zeros(batch, self.d_model, dtype=dtype, device=device)",
        "init_state(self, batch: int) -> torch.Tensor:\n        return torch.zeros(batch, self.d_model)",
    ),
]

# the files the throwaway paper and mixer add, relative to the copy's root: nothing else may change
ADDED = {
    "config/papers/toy.yaml": TOY_YAML,
    "src/seqmix/papers/toy/__init__.py": textwrap.dedent(TOY_PACKAGE),
    "src/seqmix/papers/toy/analysis.schema.yaml": TOY_ANALYSIS_SCHEMA,  # the types of its settings, with its code
    "src/seqmix/mixers/toy_mixer.py": textwrap.dedent(TOY_MIXER),
}


def git(work: Path, *args: str) -> str:
    r = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *args],
        cwd=work,
        capture_output=True,
        text=True,
        check=True,
    )
    return r.stdout


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """A copy of the workflow, committed to a scratch git repository, then the paper and mixer files added
    (uncommitted). The DAG's jobs import the copy's src (PYTHONPATH), where the toy paper and mixer are."""
    work = copy_workflow(tmp_path)
    git(work, "init", "-q")
    # what Python and Snakemake write while the DAG runs, not files of the tree
    (work / ".git" / "info" / "exclude").write_text("__pycache__/\n*.pyc\n.snakemake/\nresults/\n")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "the workflow as copied")
    for rel, text in ADDED.items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text(text)
    monkeypatch.setenv("PYTHONPATH", str(work / "src"))  # the jobs' `python -m seqmix`: the copy's, not ROOT's
    return work


def changed_files(work: Path) -> set[str]:
    """Every path git sees as added, modified or deleted since the copy was committed."""
    out = git(work, "status", "--porcelain", "--untracked-files=all")
    return {line[3:] for line in out.splitlines()}


def job_counts(out: str) -> dict[str, int]:
    """{rule: jobs} from a dry run's 'Job stats' table."""
    table = out.split("Job stats:", 1)[1].split("total", 1)[0]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)\s*$", table, flags=re.M)}


def contract_outcomes(tmp_path: Path, mixers: dict[str, str]) -> dict[str, tuple[str, str]]:
    """{test id: (outcome, failure message)} of tests/mixers/test_contract.py, run as it is in a fresh process on
    a copy of src with ``mixers`` ({registered name: module text}) added to seqmix/mixers, selecting those
    mixers' tests (the contract test parametrizes over every registered mixer, so nothing names them there)."""
    src = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "seqmix", src / "seqmix", ignore=shutil.ignore_patterns("__pycache__"))
    for name, text in mixers.items():
        (src / "seqmix" / "mixers" / f"{name}.py").write_text(textwrap.dedent(text))
    report = tmp_path / "contract.xml"
    args = ["-q", "-p", "no:cacheprovider", "-k", " or ".join(mixers), f"--junitxml={report}"]
    r = subprocess.run(
        [sys.executable, "-m", "pytest", *args, str(ROOT / "tests" / "mixers" / "test_contract.py")],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(src)),  # the copy's seqmix, with the added mixers, not ROOT's
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert report.exists(), r.stdout[-3000:] + r.stderr[-3000:]
    out = {}
    for case in ET.parse(report).iter("testcase"):
        outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}
        bad = [c for c in case if c.tag in outcome]
        out[case.get("name")] = (outcome[bad[0].tag], bad[0].get("message") or "") if bad else ("passed", "")
    return out


@pytest.mark.slow
def test_the_throwaway_mixer_keeps_the_mixer_contract_and_a_broken_one_fails_it(tmp_path):
    from seqmix.mixers.base import Mixer

    broken = TOY_MIXER
    for good, bad in BREAKS:
        assert good in broken, good
        broken = broken.replace(good, bad)
    outcomes = contract_outcomes(tmp_path, {"toy_mixer": TOY_MIXER, "toy_broken": broken})
    stated = {int(n) for n in re.findall(r"^\s{4}(\d+)\. ", Mixer.__doc__, flags=re.M)}

    def of(mixer: str) -> dict[str, tuple[int, str, str]]:
        """{test id: (clause, outcome, message)} of the clause tests parametrized with ``mixer``."""
        ids = [t for t in outcomes if re.search(rf"[\[-]{mixer}[\]-]", t)]
        return {t: (int(re.match(r"test_clause_(\d+)_", t).group(1)), *outcomes[t]) for t in ids}

    toy = of("toy_mixer")
    assert {c for c, _, _ in toy.values()} == stated, sorted(toy)  # every clause checked on the toy
    assert all(o == "passed" for _, o, _ in toy.values()), {t: v for t, v in toy.items() if v[1] != "passed"}
    failed = {t: v for t, v in of("toy_broken").items() if v[1] != "passed"}
    assert {c for c, _, _ in failed.values()} == {2, 3, 6}, failed
    assert all(o == "failed" and f"clause {c}" in m for c, o, m in failed.values()), failed  # names its clause
    assert any("init_state('batch',)" in m for _, _, m in failed.values()), failed


@pytest.mark.integration
def test_throwaway_paper_enters_the_dag_with_no_other_file_changed(toy):
    papers = sorted(p.name for p in (toy / "config" / "papers").glob("*.yaml"))
    assert papers == sorted([p.name for p in (ROOT / "config" / "papers").glob("*.yaml")] + ["toy.yaml"])
    r = snakemake_local(toy, "-n", timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    jobs = job_counts(r.stdout + r.stderr)
    assert {"toy_note", "toy_numbers", "toy_plot", "heads_table1", "heads_figure4"} <= set(jobs), jobs
    assert jobs["claims"] == len(papers)
    assert changed_files(toy) == set(ADDED)
    # and the copy was the tree as it is: no file of the original differs from its copy
    for rel in git(toy, "ls-files").splitlines():
        assert (toy / rel).read_bytes() == (ROOT / rel).read_bytes(), rel


@pytest.mark.integration
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
    assert changed_files(toy) == set(ADDED)

    summary = res / "e1" / "summary.csv"
    good = summary.read_bytes()
    summary.write_bytes(good.replace(b"\n", b"\n9", 1))  # one flipped row: the checksum no longer matches
    bad = summary.read_bytes()
    run_config = next((res / "run").glob("e1.*.json"))  # a truncated run config failed every rerun, naming no file
    run_config.write_text(run_config.read_text()[:40])
    r = snakemake_local(toy, "-n", "--config", "papers=[toy]", timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"{summary.relative_to(toy)} is corrupt" in r.stderr
    assert summary.read_bytes() == bad and not summary.with_name("summary.csv.corrupt").exists()  # moved nothing

    r = snakemake_local(toy, "--config", "papers=[toy]", "--", str((res / "claims.csv").relative_to(toy)), timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert summary.with_name("summary.csv.corrupt").read_bytes() == bad
    from seqmix import results as layout

    assert summary.read_bytes() != bad and layout.find_corrupt([summary]) == []  # made again, checksum and all
    assert layout.find_corrupt([run_config]) == [] and run_config.with_name(run_config.name + ".corrupt").exists()
    assert "holds" in (res / "claims.csv").read_text()


@pytest.mark.integration
def test_a_throwaway_mixer_joins_the_matrix_with_one_config_line(toy):
    """Adding a mixer to every task of the cross-paper matrix: its module (the toy fixture's) and one line in
    variant_sets.mixers of config/papers/matrix.yaml; the cpu scale runs every variant of the set."""
    cfg = toy / "config" / "papers" / "matrix.yaml"
    text = cfg.read_text()
    anchor = "  mixers:  # one line per mixer: the matrix's rows\n"
    assert anchor in text
    cfg.write_text(text.replace(anchor, anchor + "    toy: {model: {mixer: {name: toy_mixer}}}\n"))
    r = snakemake_local(toy, "-n", "--config", "papers=[matrix]", "scale=cpu", timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    out = r.stdout + r.stderr
    for task in ("symbolsoup", "mqar", "listops", "stream"):
        assert f"matrix/run/{task}.toy-0.json" in out, task  # one cell per task for the new mixer
    assert changed_files(toy) == set(ADDED) | {"config/papers/matrix.yaml"}
