"""The caption a shown figure gets in the report (``seqmix.config.figure_captions``): the artefact's own
caption, what the paper prints for it (``paper_values``), the scale, the seeds of every experiment it reads
(through other artefacts too) and the paper's data line for the scale. Tables keep their caption as is."""

from __future__ import annotations

import copy

import pytest

from seqmix.config.figure_captions import experiments_read, shown_caption, shows_figure
from seqmix.config.loading import load_paper

PAPERS = ["b2s6", "heads", "matrix", "rotations", "sessa", "superposition"]


@pytest.fixture(scope="module")
def heads(root) -> dict:
    return load_paper(root / "config" / "papers" / "heads.yaml", "tiny")


def test_a_figure_of_measured_data_names_scale_seeds_data_and_that_the_paper_prints_nothing(heads):
    cfg = copy.deepcopy(heads)
    cfg["experiments"]["exp1"]["scales"]["cpu"]["seeds"] = [3, 5]
    decl = cfg["artefacts"]["figure3_left"]
    for scale, seeds in (("tiny", cfg["experiments"]["exp1"]["scales"]["tiny"]["seeds"]), ("cpu", [3, 5])):
        text = shown_caption(cfg, "figure3_left", scale)
        assert text.startswith(decl["caption"].strip() + " The paper prints no values for this figure: ")
        assert f"Scale {scale}; seeds {', '.join(map(str, seeds))} (exp1); data: {cfg['data'][scale]}." in text


def test_paper_values_other_than_none_say_where_the_drawn_numbers_come_from(heads):
    cfg = copy.deepcopy(heads)
    cfg["artefacts"]["figure4"]["paper_values"] = "Table 9 of the paper (claims t9-*)"
    text = shown_caption(cfg, "figure4", "tiny")
    assert 'Paper values, drawn in black and labelled "paper": Table 9 of the paper (claims t9-*).' in text
    cfg["artefacts"]["figure4"]["paper_values"] = "none"
    assert "The paper prints no values for this figure. Scale tiny;" in shown_caption(cfg, "figure4", "tiny")


def test_seeds_are_read_through_other_artefacts_and_grouped_when_experiments_differ(heads):
    cfg = copy.deepcopy(heads)
    arts = cfg["artefacts"]
    # figure3_right reads the spectrum artefact, which reads exp1's leaves
    assert experiments_read(arts, "figure3_right") == experiments_read(arts, "spectrum") == ["exp1"]
    arts["figure3_right"]["reads"] = {"artefacts": ["spectrum"], "summaries": ["exp2"]}
    cfg["experiments"]["exp2"]["scales"]["tiny"]["seeds"] = [7]
    exp1 = ", ".join(map(str, cfg["experiments"]["exp1"]["scales"]["tiny"]["seeds"]))
    assert f"Scale tiny; seeds 7 (exp2); {exp1} (exp1); data:" in shown_caption(cfg, "figure3_right", "tiny")


def test_a_figure_that_reads_no_experiment_says_so(heads):
    why = heads["artefacts"]["figure2"]["paper_values"].removeprefix("none: ")
    assert shown_caption(heads, "figure2", "tiny").endswith(
        f"The paper prints no values for this figure: {why}. "
        "Scale tiny; reads no experiment: nothing trained, no data set."
    )


def test_a_table_keeps_its_own_caption(heads):
    tables = [n for n, d in heads["artefacts"].items() if not shows_figure(d)]
    assert tables
    for name in tables:
        assert shown_caption(heads, name, "tiny") == heads["artefacts"][name]["caption"].strip()


@pytest.mark.parametrize("paper", PAPERS)
def test_every_shown_figure_of_every_paper_says_what_the_paper_prints(root, paper):
    """The shipped configs: each shown figure declares paper_values (the loader refuses one without), and
    one that draws the paper's values lists the claims whose reported values it draws, or says which
    constant of the paper's package holds them (b2s6 Figure 7's App. G table)."""
    cfg = load_paper(root / "config" / "papers" / f"{paper}.yaml", "tiny")
    shown = {n: d for n, d in cfg["artefacts"].items() if shows_figure(d)}
    assert shown
    for name, decl in shown.items():
        values = decl["paper_values"]
        if not values.startswith("none"):
            assert decl.get("claims") or "App. G" in values, (paper, name)
        assert "Scale tiny; " in shown_caption(cfg, name, "tiny")
