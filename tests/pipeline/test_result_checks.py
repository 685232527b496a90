"""Stage outputs, summaries and claims.csv are verified where they are read (issue 26 item 8, parts 1-3).

Before: an edited value in a leaf's ``metrics.json`` or in a cell marker ``cells/<cell>.evaluate.json``
(no checksum) went into the experiment's ``summary.csv``, which collect wrote with a fresh checksum; a
summary whose ``.sha256`` was deleted was read with a log warning; a ``claims.csv`` cut to half its rows
gave a report of those rows, exit 0. Each case below is refused, naming the file and how to remake it, or
is remade: a leaf marker that fails its checksum has its stage done again, and the DAG moves a cell
marker, a summary or a claims.csv that fails (or lacks) its checksum aside and makes it again.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

from seqmix.claims import engine as C
from seqmix.claims.checks import HOLDS, ClaimResult
from seqmix.claims.render import write_claims
from seqmix.cli.main import main as cli_main
from seqmix.io import checksum_path, read_json, verify_checksum, write_json, write_text
from seqmix.pipeline.stages import run_stage
from seqmix.results import CorruptResult, claims_paths, discard_corrupt, find_corrupt, verify_summary
from tests.training.test_loop import leaf_cfg, run_config


def _edit(path: Path, change) -> None:
    """Rewrite the JSON at ``path`` with ``change(data)`` applied, as a person editing it would (valid JSON)."""
    data = read_json(path)
    change(data)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def _set_first_metric(value: float):
    def change(marker: dict) -> None:
        marker["metrics"][sorted(marker["metrics"])[0]] = value

    return change


@pytest.fixture
def evaluated(tmp_path):
    """One tiny leaf trained (10 steps) and evaluated by the stage loop; (run config, leaf dir, cell summary)."""
    cfg = leaf_cfg(steps=10, checkpoint_every=10, test_size=16)
    run = run_config(tmp_path / "results", [cfg])
    run_stage("train", run)
    first = run_stage("evaluate", run)
    return run, Path(run["leaves"][0]["out_dir"]), first


# ----------------------------------------------------------------------------- 1. leaf markers


def test_leaf_markers_are_written_with_a_checksum(evaluated):
    _, out, _ = evaluated
    for name in ("train.done.json", "metrics.json"):
        assert verify_checksum(out / name) is None, name


def _edit_with(change):
    return lambda path: _edit(path, change)


@pytest.mark.parametrize(
    "fault",
    [_edit_with(_set_first_metric(0.123)), lambda p: checksum_path(p).unlink()],
    ids=["value_edited", "checksum_deleted"],
)
def test_an_edited_evaluate_marker_is_evaluated_again_not_summarised(evaluated, fault, caplog):
    """Guards: an edited metric in metrics.json (its hash intact, so the leaf looked done) became the cell's
    summary row, and collect wrote it into summary.csv under a fresh checksum."""
    run, out, first = evaluated
    marker = out / "metrics.json"
    fault(marker)
    with caplog.at_level(logging.WARNING, logger="seqmix.pipeline.stages"):
        again = run_stage("evaluate", run)
    assert again["leaves"] == first["leaves"]  # the leaf was evaluated again, not summarised as edited
    assert str(marker) in caplog.text and "evaluate again" in caplog.text
    assert verify_checksum(marker) is None


def test_an_edited_train_marker_is_redone_from_the_final_checkpoint(evaluated, caplog):
    """The train marker's fields (final loss, steps) go into the train summary: an edited one is redone, from
    the final checkpoint (no step is trained again)."""
    run, out, _ = evaluated
    marker = out / "train.done.json"
    before = read_json(marker)
    _edit(marker, lambda m: m.update(final_train_loss=0.5))
    with caplog.at_level(logging.INFO):
        again = run_stage("train", run)
    assert "checksum mismatch" in caplog.text and "resumed from step 10" in caplog.text
    assert again["leaves"][0]["final_train_loss"] == before["final_train_loss"]
    assert verify_checksum(marker) is None


def test_an_edited_history_is_rewritten_by_the_train_stage(evaluated, caplog):
    """history.json (the artefacts read it) carries a checksum; an edited one makes the leaf not done, so the
    train stage rewrites it from the final checkpoint."""
    run, out, _ = evaluated
    history = out / "history.json"
    before = history.read_bytes()
    _edit(history, lambda h: h["train_loss"].__setitem__(0, 0.5))
    with caplog.at_level(logging.INFO):
        run_stage("train", run)
    assert "history.json: checksum mismatch" in caplog.text and "resumed from step 10" in caplog.text
    assert history.read_bytes() == before and verify_checksum(history) is None


def _stability(leaf: dict, out: Path) -> None:
    from seqmix.papers.b2s6.analysis import stability

    leaf = dict(leaf, config={**leaf["config"], "task": {"scale": 1.0}})
    spec = {"analysis": {"stability": {"after_fraction": 0.5, "spike_factor": 2.0}}, "inputs": {"leaves": {}}}
    spec["inputs"]["leaves"]["e5"] = [leaf]
    stability(spec, out)


def _e9_throughput(leaf: dict, out: Path) -> None:
    from seqmix.papers.b2s6.e9_lm import throughput_rows

    leaf = dict(leaf, config={**leaf["config"], "task": {"segment_len": 8}})
    throughput_rows({"inputs": {"leaves": {"e9": [leaf]}}})


@pytest.mark.parametrize(
    "name, change, artefact",
    [
        ("history.json", lambda h: h.update(train_loss=[0.1, 0.1]), _stability),
        ("train.done.json", lambda m: m.update(seconds=1e-3), _e9_throughput),
    ],
    ids=["history_b2s6_stability", "train_marker_b2s6_e9"],
)
def test_an_artefact_refuses_an_edited_leaf_output(tmp_path, name, change, artefact):
    """Guards: an analysis built its summary.csv (checksummed afresh) from an edited history.json (b2s6
    stability: the training loss) or train marker (e9: the training seconds)."""
    cfg = leaf_cfg(steps=10, checkpoint_every=10, test_size=16)
    run = run_config(tmp_path / "results", [cfg])
    run_stage("train", run)
    leaf = run["leaves"][0]
    out = Path(leaf["out_dir"])
    _edit(out / name, change)
    remake = rf"delete {re.escape(str(out / 'train.done.json'))} and run .*--config scale=tiny .*--forcerun train"
    with pytest.raises(CorruptResult, match=rf"{name}: checksum mismatch.*{remake}"):
        artefact(leaf, tmp_path / "out")
    assert not (tmp_path / "out" / "summary.csv").exists()


# ----------------------------------------------------------------------------- 1. cell markers and collect


@pytest.fixture
def cell_markers(tmp_path):
    """A cell trained and evaluated through the CLI; (evaluate cell marker, summary path)."""
    cfg = leaf_cfg(steps=10, checkpoint_every=10, test_size=16)
    run = run_config(tmp_path / "results", [cfg])
    run_json = tmp_path / "run.json"
    write_json(run_json, run)
    cells = tmp_path / "results" / "heads" / "exp1" / "cells"
    for stage in ("train", "evaluate"):
        cli_main([stage, "--run", str(run_json), "--out", str(cells / f"k4-0.{stage}.json")])
    return cells / "k4-0.evaluate.json", tmp_path / "results" / "heads" / "exp1" / "summary.csv"


def test_collect_of_intact_cell_markers(cell_markers):
    cell, summary = cell_markers
    assert verify_checksum(cell) is None
    cli_main(["collect", "--out", str(summary), str(cell)])
    verify_summary(summary)


@pytest.mark.parametrize(
    "fault, why",
    [
        (_edit_with(lambda m: m["leaves"][0].update(mse=0.123, acc=0.5)), "checksum mismatch"),
        (lambda p: checksum_path(p).unlink(), "no checksum"),
    ],
    ids=["value_edited", "checksum_deleted"],
)
def test_collect_refuses_a_cell_marker_that_fails_its_checksum(cell_markers, fault, why):
    """Guards: collect read the edited cell marker and wrote its values into summary.csv with a fresh
    checksum. Now it stops naming the marker and how to remake it; the DAG moves the marker aside (and
    forces it), so the stage runs again for that cell."""
    cell, summary = cell_markers
    fault(cell)
    with pytest.raises(SystemExit, match=rf"k4-0\.evaluate\.json: {why}.*moves it aside.*delete it"):
        cli_main(["collect", "--out", str(summary), str(cell)])
    assert not summary.exists()
    assert [p for p, _ in find_corrupt([cell])] == [cell]
    assert discard_corrupt([cell]) == [cell] and not cell.exists()


# ----------------------------------------------------------------------------- 2. a summary without its checksum


def _summary(tmp_path: Path) -> Path:
    cells = []
    for i in range(2):
        cell = tmp_path / "exp1" / "cells" / f"c-{i}.evaluate.json"
        write_json(cell, {"leaves": [{"id": f"leaf{i}", "seed": i, "m": 0.25 + i}]}, checksum=True)
        cells.append(str(cell))
    out = tmp_path / "exp1" / "summary.csv"
    cli_main(["collect", "--out", str(out), *cells])
    return out


def test_a_summary_whose_checksum_was_deleted_is_refused_and_remade(tmp_path):
    """Guards: the claims read a summary.csv with no sidecar after a log warning, so an edit followed by
    deleting the sidecar went unseen. Now the reader refuses it and the DAG moves it aside and makes it
    again in the same run, as it does a summary that fails its checksum."""
    out = _summary(tmp_path)
    checksum_path(out).unlink()
    with pytest.raises(CorruptResult, match=r"summary\.csv: no checksum.*makes it again"):
        verify_summary(out)
    claim = {"id": "c", "source": "paper", "artefact": "T", "statement": "s", "reported": None,
             "ours": {"table": "exp1", "metric": "m"}, "check": {"kind": "threshold", "op": ">", "value": 0},
             "expected_at": ["tiny"]}  # fmt: skip
    with pytest.raises(CorruptResult, match="no checksum"):
        C.evaluate_claim(claim, tmp_path, "tiny")
    assert discard_corrupt([out]) == [out]
    assert (out.parent / "summary.csv.corrupt").exists() and not out.exists()


# ----------------------------------------------------------------------------- 3. claims.csv


def _claims_csv(results: Path, paper: str = "alpha", n: int = 6) -> Path:
    rows = [
        ClaimResult(f"c{i}", "paper", "T1", "s", 1.0, 1.0, "within", HOLDS, ["tiny"], kind="reproduction")
        for i in range(n)
    ]
    md, csv = claims_paths(results, paper)
    md.parent.mkdir(parents=True)
    write_claims(rows, md, csv, paper, "tiny")
    return csv


CLAIMS_FAULTS = {
    "half_the_rows": lambda p: p.write_text("".join(p.read_text().splitlines(keepends=True)[:4])),
    "cut_mid_row": lambda p: p.write_bytes(p.read_bytes()[:-20]),
    "checksum_deleted": lambda p: checksum_path(p).unlink(),
}


@pytest.mark.parametrize("fault", sorted(CLAIMS_FAULTS))
def test_the_report_refuses_a_damaged_claims_csv(tmp_path, fault):
    """Guards: report-index counted the rows left in a truncated claims.csv and exited 0."""
    results = tmp_path / "results" / "tiny"
    csv = _claims_csv(results)
    out = results / "report.md"
    cli_main(["report-index", "--results", str(results), "--papers", "alpha", "--scale", "tiny", "--out", str(out)])
    assert "holds: 6" in out.read_text()
    CLAIMS_FAULTS[fault](csv)
    remake = f"snakemake --workflow-profile profiles/local --config scale=tiny results={results.parent} "
    remake += f"--forcerun claims -- {csv}"
    with pytest.raises(SystemExit, match=rf"{re.escape(str(csv))}: .*{re.escape(remake)}"):
        cli_main(["report-index", "--results", str(results), "--papers", "alpha", "--scale", "tiny", "--out", str(out)])
    with pytest.raises(SystemExit, match=r"claims\.csv: .*--forcerun claims"):
        cli_main(["claims-summary", "--results", str(results), "--out", str(tmp_path / "counts.md")])
    assert discard_corrupt([csv]) == [csv]  # the DAG moves it aside and forces it: the claims step runs again


@pytest.mark.parametrize(
    "fault",
    [lambda p: p.write_text(p.read_text().replace("0.25", "0.35")), lambda p: checksum_path(p).unlink()],
    ids=["value_edited", "checksum_deleted"],
)
def test_an_artefact_refuses_a_summary_that_fails_its_checksum(tmp_path, monkeypatch, fault):
    """Guards: an artefact read its experiments' summaries with pandas, unverified, so outside a DAG run (whose
    repair moves a corrupt summary aside first) an edited summary entered the artefact's own summary.csv."""
    import seqmix.registry

    summary = _summary(tmp_path)
    ran = []

    def analysis(spec, out):  # what an analysis does: a table built from the summary it reads
        ran.append(spec["name"])
        write_text(out / "summary.csv", Path(spec["inputs"]["summaries"]["exp1"]).read_text(), checksum=True)

    monkeypatch.setattr(seqmix.registry, "artefact_function", lambda paper, name: analysis)
    spec = {"paper": "heads", "name": "copy", "inputs": {"summaries": {"exp1": str(summary)}, "artefacts": {}}}
    write_json(tmp_path / "spec.json", spec)
    args = ["artefact", "--run", str(tmp_path / "spec.json"), "--out", str(tmp_path / "copy")]
    cli_main(args)
    assert ran == ["copy"]
    fault(summary)
    with pytest.raises(SystemExit, match=r"summary\.csv: (checksum mismatch|no checksum)"):
        cli_main(args)
    assert ran == ["copy"]  # not run on the damaged summary
