"""``seqmix list``: papers, experiments (cells per scale), mixers, tasks and models as markdown tables.

Guards (main had no ``list`` command): every paper config and experiment is listed, the leaves and cells
counts are those the DAG expands at the chosen scale, and every registered mixer and task appears with the
options of its generated schema (type, bound, default)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from seqmix import registry
from seqmix.cli.listing import describe_option
from seqmix.cli.main import main
from seqmix.config.leaves import expand_cells
from seqmix.config.loading import discover_papers, load_paper

ROOT = Path(__file__).resolve().parents[2]


def _table(text: str) -> list[dict]:
    lines = [line for line in text.splitlines() if line.startswith("|")]
    cells = [[c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip()[1:-1])] for line in lines]
    return [dict(zip(cells[0], row)) for row in cells[2:]]


def _list(capsys, *args) -> list[dict]:
    main(["list", *args, "--root", str(ROOT)])
    return _table(capsys.readouterr().out)


def test_papers(capsys):
    rows = _list(capsys, "papers")
    assert [r["paper"] for r in rows] == discover_papers(ROOT)
    heads = next(r for r in rows if r["paper"] == "heads")
    assert heads["title"].startswith("How Many Heads") and int(heads["experiments"]) == 2


@pytest.mark.parametrize("scale", ["tiny", "cpu"])
def test_experiments_count_cells_at_the_scale(capsys, scale):
    rows = _list(capsys, "experiments", "--paper", "heads", "--scale", scale)
    cells = expand_cells("heads", load_paper(ROOT / "config" / "papers" / "heads.yaml", scale), scale)
    assert {r["experiment"] for r in rows} == {"exp1", "exp2"}
    for r in rows:
        mine = [leaves for (e, _), leaves in cells.items() if e == r["experiment"]]
        assert int(r[f"cells ({scale})"]) == len(mine) > 0
        assert int(r[f"leaves ({scale})"]) == sum(map(len, mine))
    exp2 = next(r for r in rows if r["experiment"] == "exp2")
    assert exp2["stages"] == "diagnose" and "||dy_{T-1}/dx_0||" in exp2["description"]  # pipes escaped


def test_cells_differ_between_scales(capsys):
    """exp1 has more seeds at cpu than at tiny, so the counts must follow the scale asked for."""
    tiny = _list(capsys, "experiments", "--paper", "heads", "--scale", "tiny")
    cpu = _list(capsys, "experiments", "--paper", "heads", "--scale", "cpu")
    exp1 = {s: next(r for r in rows if r["experiment"] == "exp1") for s, rows in (("tiny", tiny), ("cpu", cpu))}
    assert int(exp1["cpu"]["leaves (cpu)"]) > int(exp1["tiny"]["leaves (tiny)"])


@pytest.mark.parametrize("what, kind", [("mixers", "mixer"), ("tasks", "task"), ("models", "model")])
def test_components_with_their_options(capsys, what, kind):
    rows = {r[kind]: r for r in _list(capsys, what, "--long")}
    assert sorted(rows) == registry.names(kind)
    if kind == "mixer":
        assert "heads: integer >= 1 = 4" in rows["mha"]["options"]
        assert "rho: number or null > 0 = None" in rows["linear_ssm"]["options"]
        assert rows["rope"]["from"] == "seqmix.mixers.softmax_attention"  # a preset: its base class's module
        assert rows["bidirectional"]["options"] == "mixer: a mixer {name, options} (required)"
    if kind == "task":
        assert "k: integer >= 2 (required)" in rows["rotation_teacher"]["options"]


@pytest.mark.parametrize("what, kind", [("mixers", "mixer"), ("tasks", "task"), ("models", "model")])
def test_short_rows_fit_a_terminal(capsys, what, kind):
    """Rows were up to 545 characters; the short form names the options and points at --long."""
    main(["list", what, "--root", str(ROOT)])
    lines = capsys.readouterr().out.splitlines()
    assert max(map(len, lines)) <= 160, max(lines, key=len)
    rows = {r[kind]: r for r in _table("\n".join(lines))}
    assert sorted(rows) == registry.names(kind)
    if kind == "mixer":
        assert rows["mha"]["options (* required)"].startswith("heads")
        assert rows["bidirectional"]["options (* required)"] == "mixer*"
        assert "more: --long)" in rows["alibi"]["options (* required)"]


def test_unknown_paper_is_named_with_the_known_ones():
    with pytest.raises(SystemExit, match=r"unknown paper 'haeds' \(papers: b2s6, heads, .*did you mean 'heads'"):
        main(["list", "experiments", "--paper", "haeds", "--root", str(ROOT)])


def test_describe_option():
    assert describe_option("p", {"type": "number", "exclusiveMinimum": 0, "maximum": 1}, True) == (
        "p: number > 0 <= 1 (required)"
    )
    assert describe_option("mode", {"enum": ["conv", "recurrent"], "default": "conv"}, False) == (
        "mode: {conv, recurrent} = conv"
    )


def test_unknown_paper_is_an_error(capsys):
    with pytest.raises(SystemExit, match="unknown paper 'no_such_paper'"):
        main(["list", "experiments", "--paper", "no_such_paper", "--root", str(ROOT)])


def test_the_matrix_axes_with_exclusions_by_capability(capsys):
    rows = {r["task"]: r for r in _list(capsys, "matrix", "--scale", "cpu")}
    cfg = load_paper(ROOT / "config" / "papers" / "matrix.yaml", "cpu")
    assert set(rows) == {f"{e} ({x['base']['task']['name']})" for e, x in cfg["experiments"].items()}
    assert {"stream (rotations_lm)", "image (lra_image)"} <= set(rows)
    assert rows["mqar (diffuse_mqar)"]["excluded"].startswith("factorized (task 'diffuse_mqar' evaluates beyond")
    assert "factorized" not in rows["mqar (diffuse_mqar)"]["mixers"].split(", ")
    assert rows["symbolsoup (symbolsoup)"]["excluded"] == "none" and rows["listops (lra_listops)"]["seeds"] == "0, 1, 2"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["mixers", "--paper", "heads"], "list mixers: --paper applies to papers, experiments only"),
        (["matrix", "--long"], "list matrix: --long applies to mixers, tasks, models only"),
        (["tasks", "--scale", "cpu"], "list tasks: --scale applies to papers, experiments, matrix only"),
    ],
)
def test_an_option_the_table_does_not_read_is_an_error(argv, message):
    """Before: silently ignored (`list mixers --paper heads` listed every mixer)."""
    with pytest.raises(SystemExit, match=re.escape(message)):
        main(["list", *argv, "--root", str(ROOT)])


def test_validate_names_a_missing_config(tmp_path):
    """Before: a ConfigError traceback."""
    with pytest.raises(SystemExit, match=r"config error: .*nope\.yaml: <top>: file does not exist"):
        main(["validate", "--config", str(tmp_path / "nope.yaml"), "--root", str(ROOT)])
