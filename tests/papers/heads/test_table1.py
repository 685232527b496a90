r"""Table 1 of the heads paper, rendered from config/papers/heads.yaml, held cell by cell against the
paper's own strings written here (not read from the config)."""

from __future__ import annotations

import copy
import csv
import io

import pytest

from seqmix.config.base import load_yaml
from seqmix.report.tables import render_static_table

COLUMNS = ["Model", "Strategy", "Interaction Tensor W_ij", "Weight Type", "Complexity", "Memory", "Depth"]
MATH = {2, 4, 5, 6}  # the interaction tensor and the three cost columns are LaTeX math

PAPER_ROWS = [
    ["MLP", "Factorized", r"\delta_{ij}V", "Static", "O(n)", "O(1)", "O(1)"],
    ["CNN (separable)", "Factorized", r"c_{i-j}V", "Static", "O(n)", "O(1)", "O(1)"],
    [
        "Attention",
        "Factorized",
        r"\alpha_{ij}(X)\,V,\;\alpha_{ij}=\mathrm{softmax}(\mathbf{q}_{i}^{\top}\mathbf{k}_{j})",
        "Dynamic",
        "O(n^{2})",
        "O(n^{2})",
        "O(1)",
    ],
    [
        "Linear Attn",
        "Factorized",
        r"(\phi(\mathbf{x}_{i})^{\top}\psi(\mathbf{x}_{j}))\,V",
        "Dynamic",
        "O(n)",
        "O(1)",
        r"O(\log n)",
    ],
    ["RNN / SSM (linear)", "Structured", r"C\,\bar{A}^{\,i-j}\bar{B}", "Static", "O(n)", "O(1)", r"O(\log n)"],
    [
        "Mamba / selective SSM",
        "Structured",
        r"C_{i}(X)\Big(\prod_{k=j+1}^{i}\bar{A}_{k}(X)\Big)\bar{B}_{j}(X)",
        "Dynamic",
        "O(n)",
        "O(1)",
        r"O(\log n)",
    ],
]


@pytest.fixture(scope="module")
def table(root) -> dict:
    return load_yaml(root / "config" / "papers" / "heads.yaml")["tables"]["table1"]


@pytest.fixture(scope="module")
def rendered(table) -> dict:
    return render_static_table(table)


def test_csv_matches_the_paper_cell_by_cell(rendered):
    rows = list(csv.reader(io.StringIO(rendered["csv"])))
    assert rows[0] == COLUMNS
    body = rows[1:]
    assert len(body) == len(PAPER_ROWS)
    for i, (got, want) in enumerate(zip(body, PAPER_ROWS)):
        assert len(got) == 7, i
        for j, (g, w) in enumerate(zip(got, want)):
            assert g == w, (i, COLUMNS[j], g, w)


def _md_cells(line: str) -> list[str]:
    # pipe-format Markdown pads cells to the column width: compare the stripped cells
    return [c.strip() for c in line.strip().strip("|").split(" | ")]


def test_markdown_wraps_math_cells(rendered, table):
    md = rendered["md"]
    lines = md.splitlines()
    assert lines[0] == table["caption"] and lines[1] == ""
    assert _md_cells(lines[2]) == COLUMNS
    assert set(lines[3]) <= set("|:-") and lines[3].count("|") == 8
    body = lines[4:]
    assert len(body) == len(PAPER_ROWS)
    for line, want in zip(body, PAPER_ROWS):
        cells = [f"${c}$" if j in MATH else c for j, c in enumerate(want)]
        assert _md_cells(line) == cells
    assert _md_cells(body[0]) == ["MLP", "Factorized", r"$\delta_{ij}V$", "Static", "$O(n)$", "$O(1)$", "$O(1)$"]
    assert _md_cells(body[4]) == [
        "RNN / SSM (linear)",
        "Structured",
        r"$C\,\bar{A}^{\,i-j}\bar{B}$",
        "Static",
        "$O(n)$",
        "$O(1)$",
        r"$O(\log n)$",
    ]


def test_latex_is_booktabs_with_rows_joined_by_ampersands(rendered):
    tex = rendered["tex"].splitlines()
    assert tex[0] == r"\begin{table}[t]" and tex[-1] == r"\end{table}"
    assert r"\begin{tabular}{lllllll}" in tex
    top, mid, bottom = tex.index(r"\toprule"), tex.index(r"\midrule"), tex.index(r"\bottomrule")
    assert top < mid < bottom
    assert tex[top + 1] == r"Model & Strategy & Interaction Tensor W\_ij & Weight Type & Complexity & Memory & Depth \\"
    body = tex[mid + 1 : bottom]
    assert len(body) == len(PAPER_ROWS)
    for line, want in zip(body, PAPER_ROWS):
        cells = [f"${c}$" if j in MATH else c for j, c in enumerate(want)]
        assert line == " & ".join(cells) + r" \\"
    assert body[2] == (
        r"Attention & Factorized & $\alpha_{ij}(X)\,V,\;\alpha_{ij}=\mathrm{softmax}"
        r"(\mathbf{q}_{i}^{\top}\mathbf{k}_{j})$ & Dynamic & $O(n^{2})$ & $O(n^{2})$ & $O(1)$ \\"
    )
    assert any(line.startswith(r"\caption{Comparison of representative architectures") for line in tex)


def test_row_with_wrong_number_of_cells_is_refused(table):
    bad = copy.deepcopy(table)
    bad["rows"].append(["S4", "Structured", "K", "Static", "O(n)", "O(1)"])
    with pytest.raises(ValueError, match="row 6 has 6 cells, expected 7"):
        render_static_table(bad)
    bad = copy.deepcopy(table)
    bad["rows"][0] = bad["rows"][0] + ["extra"]
    with pytest.raises(ValueError, match="row 0 has 8 cells, expected 7"):
        render_static_table(bad)


def test_artefact_writes_the_rendered_table_from_its_spec_slice(table, rendered, tmp_path):
    """The pipeline's ``table1`` artefact receives the static table as its spec's analysis slice (declared in
    the paper's `artefacts:` block) and writes exactly the rendered text."""
    from seqmix.papers.heads import ARTEFACTS

    ARTEFACTS["table1"]({"analysis": {"table1": table}}, tmp_path)
    for ext in ("md", "tex", "csv"):
        assert (tmp_path / f"table1.{ext}").read_text() == rendered[ext], ext
