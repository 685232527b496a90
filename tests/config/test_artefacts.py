"""Artefacts declared in a paper's YAML: validation errors name the file and key path, and each artefact's
run spec holds only what it reads (so an edit elsewhere in the paper leaves it unchanged)."""

from __future__ import annotations

import copy

import pytest

from seqmix import results as layout
from seqmix.cli.main import main
from seqmix.config import artefacts as A
from seqmix.config.base import ConfigError, load_yaml
from seqmix.config.leaves import expand_cells
from seqmix.config.loading import load_paper
from seqmix.io import write_json, write_text


@pytest.fixture(scope="module")
def heads(root) -> dict:
    return load_yaml(root / "config" / "papers" / "heads.yaml")


def _load(tmp_path, cfg: dict) -> dict:
    import yaml

    path = tmp_path / "config" / "papers" / "heads.yaml"
    write_text(path, yaml.safe_dump(cfg, sort_keys=False))
    return load_paper(path, "tiny")


@pytest.mark.parametrize(
    "mutate, keypath, words",
    [
        (
            lambda c: c["analysis"]["figure1"].update(kernal=[1.0]),
            "analysis.figure1",
            ["'kernal' was unexpected", "allowed keys: a, d_k, kernel, n, seed"],
        ),
        (
            lambda c: c["analysis"]["theory_checks"]["t5"].update(epsilon=-1),
            "analysis.theory_checks.t5.epsilon",
            ["-1 is less than or equal to the minimum of 0"],
        ),
        (
            lambda c: c["artefacts"]["figure4"]["reads"].update(summaries=["exp9"]),
            "artefacts.figure4.reads.summaries",
            ["no experiment 'exp9'"],
        ),
        (
            lambda c: c["artefacts"]["figure1"].update(analysis=["figure9"]),
            "artefacts.figure1.analysis",
            ["'figure9' must name exactly one key"],
        ),
        (
            lambda c: c["artefacts"]["figure1"].update(claims=["no-such-claim"]),
            "artefacts.figure1.claims",
            ["no claim with id 'no-such-claim'"],
        ),
        (
            lambda c: c["artefacts"]["theory"].update(reads={"artefacts": ["figure3_left"]}),
            "artefacts.theory.reads.artefacts",
            ["in a circle: theory -> figure3_left -> theory"],
        ),
        (
            lambda c: c["artefacts"]["figure2"].update(writes=["figure1.png"]),
            "artefacts.figure2.writes",
            ["figures/figure1.png is also written by artefact 'figure1'"],
        ),
        (
            lambda c: c["artefacts"]["figure2"].update(report=["figure2.svg"]),
            "artefacts.figure2.report",
            ["'figure2.svg' is not among its writes"],
        ),
        (  # one caption for two figures: the second figure would be shown under the first's caption
            lambda c: c["artefacts"]["figure2"].update(writes=["figure2.png", "figure2b.png"]),
            "artefacts.figure2.report",
            ["shows 2 files (figure2.png, figure2b.png) under one caption"],
        ),
        (
            lambda c: c["artefacts"]["figure2"].update(caption=c["artefacts"]["figure1"]["caption"]),
            "artefacts.figure2.caption",
            ["the same caption as artefact 'figure1'"],
        ),
        (
            lambda c: c["artefacts"]["figure2"].update(kind="chart"),
            "artefacts.figure2.kind",
            ["'chart' is not one of ['table', 'figure', 'analysis']"],
        ),
        (
            lambda c: c["artefacts"].update(exp1=dict(c["artefacts"]["theory"])),
            "artefacts.exp1",
            ["writes into <paper>/exp1/, which is taken"],
        ),
        (  # a shown figure must say what the paper prints for it (config.figure_captions)
            lambda c: c["artefacts"]["figure3_left"].pop("paper_values"),
            "artefacts.figure3_left.paper_values",
            ["a figure the report shows must say what the paper prints for it", "'none: <why>'"],
        ),
        (  # also an analysis whose shown file is a figure
            lambda c: c["artefacts"]["theory"].update(
                writes=[*c["artefacts"]["theory"]["writes"], "theory.png"], report=["theory.png"]
            ),
            "artefacts.theory.paper_values",
            ["a figure the report shows must say what the paper prints for it"],
        ),
        (
            lambda c: c["artefacts"]["figure2"].update(paper_values=""),
            "artefacts.figure2.paper_values",
            ["should be non-empty"],
        ),
    ],
)
def test_bad_declarations_name_file_and_key_path(tmp_path, heads, mutate, keypath, words):
    cfg = copy.deepcopy(heads)
    mutate(cfg)
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, cfg)
    assert info.value.file.endswith("heads.yaml") and info.value.keypath == keypath, str(info.value)
    for w in words:
        assert w in info.value.message, info.value.message


def test_spec_holds_only_what_the_artefact_reads(tmp_path, heads):
    cells = expand_cells("heads", heads, "tiny")
    spec = A.artefact_spec("heads", heads, "figure3_left", "tiny", tmp_path, cells)
    assert set(spec) == {"paper", "scale", "name", "paper_dir", "inputs", "resolved", "analysis", "reported"}
    assert spec["inputs"]["summaries"] == {"exp1": str(layout.summary_path(tmp_path, "heads", "exp1"))}
    assert spec["inputs"]["artefacts"] == {"theory": [str(tmp_path / "heads" / "theory" / "summary.csv")]}
    assert set(spec["resolved"]) == {"exp1"} and set(spec["resolved"]["exp1"]) == {"k2", "k4", "k8"}
    assert spec["resolved"]["exp1"]["k4"]["task"]["n"] == 16  # tiny's override
    # another artefact's slice, a claim, or another experiment's hyperparameter: the spec does not change
    edited = copy.deepcopy(heads)
    edited["analysis"]["figure1"]["a"] = 0.5
    edited["claims"][0]["check"]["target"] = 3
    edited["experiments"]["exp2"]["base"]["task"]["draws"] = 3
    assert A.artefact_spec("heads", edited, "figure3_left", "tiny", tmp_path, cells) == spec
    # the leaves an artefact reads: the cells matching its glob, and their final-stage markers as inputs
    spectrum = A.artefact_spec("heads", heads, "spectrum", "tiny", tmp_path, cells)
    assert {leaf["config"]["variant"] for leaf in spectrum["inputs"]["leaves"]["exp1"]} == {"k4"}
    files = A.input_files(tmp_path, "heads", heads, cells, "spectrum")
    assert files["leaves"] == [str(layout.cell_marker(tmp_path, "heads", "exp1", "k4-0", "evaluate"))]


def test_claims_spec_reads_every_summary_and_artefact_output(tmp_path, heads):
    """The claims step reads its scale's files (results/<scale>/<paper>/...) and logs to the results root's
    MLflow store, which the scales share."""
    spec = A.claims_spec("heads", heads, "tiny", tmp_path, {"uri": "none"})
    assert spec["results"] == str(tmp_path) and spec["paper_dir"] == str(tmp_path / "tiny" / "heads")
    assert spec["inputs"]["summaries"]["exp1"] == str(tmp_path / "tiny" / "heads" / "exp1" / "summary.csv")
    cpu = A.claims_spec("heads", heads, "cpu", tmp_path, {"uri": "none"})
    assert cpu["paper_dir"] == str(tmp_path / "cpu" / "heads")
    assert set(spec["inputs"]["summaries"]) == {"exp1", "exp2"}
    assert set(spec["inputs"]["artefacts"]) == set(heads["artefacts"])
    assert spec["claims"] == heads["claims"]


def test_claims_spec_names_each_sweep_at_its_scale(tmp_path, heads):
    """The claims step writes one MLflow parent run per (experiment, variant) series of a sweep
    (tracking.runs.sweep_parents): the spec carries the sweep and what the scale runs of it."""
    from seqmix.config.leaves import expand_leaves

    spec = A.claims_spec("heads", heads, "tiny", tmp_path, {"uri": "none"})
    assert set(spec["sweeps"]) == {"exp1"}  # exp2 declares no sweep
    sweep = spec["sweeps"]["exp1"]
    assert (sweep["name"], sweep["path"]) == ("H", "model.mixer.heads")
    exp1 = [leaf for leaf in expand_leaves("heads", heads, "tiny") if leaf.experiment == "exp1"]
    assert sweep["values"] == sorted({leaf.config["sweep_value"] for leaf in exp1})
    assert sweep["variants"] == sorted({leaf.variant for leaf in exp1}) == ["k2", "k4", "k8"]


def test_reported_values_and_scaled_slices():
    cfg = {
        "experiments": {},
        "claims": [{"id": "c1", "reported": [0.93, 0.01]}, {"id": "c2", "reported": 4}],
        "analysis": {"fig": {"n": 1, "scales": {"cpu": {"n": 5}}}},
        "artefacts": {
            "fig": {"kind": "figure", "writes": ["f.png"], "caption": "c", "analysis": ["fig"], "claims": ["c1"]}
        },
    }
    tiny = A.artefact_spec("p", cfg, "fig", "tiny", "r", {})
    assert tiny["reported"] == {"c1": [0.93, 0.01]} and tiny["analysis"] == {"fig": {"n": 1}}
    assert A.artefact_spec("p", cfg, "fig", "cpu", "r", {})["analysis"] == {"fig": {"n": 5}}


def test_cli_artefact_names_what_exists(tmp_path):
    run = tmp_path / "spec.json"
    write_json(run, {"paper": "heads", "name": "figure9"})
    with pytest.raises(SystemExit, match="unknown artefact 'figure9' of paper heads.*figure4"):
        main(["artefact", "--run", str(run), "--out", str(tmp_path / "out")])
    write_json(run, {"paper": "nopaper", "name": "x"})
    with pytest.raises(SystemExit, match="no package seqmix.papers.nopaper"):
        main(["artefact", "--run", str(run), "--out", str(tmp_path / "out")])


def test_is_done_needs_the_leaf_hash(tmp_path):
    marker = layout.leaf_marker(tmp_path, "train")
    assert not layout.is_done(marker, "abc")
    write_json(marker, {"hash": "abc"})
    assert layout.is_done(marker, "abc") and not layout.is_done(marker, "other")
    marker.write_text("{half")
    assert not layout.is_done(marker, "abc")
    assert layout.KIND_DIRS == {"table": "tables", "figure": "figures", "analysis": "{name}"}
