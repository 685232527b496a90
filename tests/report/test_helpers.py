"""The shared report helpers: the one table writer (Markdown, LaTeX booktabs, CSV), seed statistics,
fits, curve crossings and the figure writer. Expected values are worked out by hand here."""

from __future__ import annotations

import csv
import io
import math
import os
import subprocess
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from seqmix.report import stats
from seqmix.report.plots import band, save_figure
from seqmix.report.tables import render_table, tex_escape, write_csv, write_table


def md_rows(md: str) -> list[list[str]]:
    """Cells of a pipe-format Markdown table (after the caption), separator row dropped."""
    rows = [line for line in md.splitlines() if line.startswith("|")]
    cells = [[c.strip() for c in line.strip().strip("|").split(" | ")] for line in rows]
    assert set("".join(rows[1])) <= set("|:- "), rows[1]
    return [cells[0]] + cells[2:]


# ----------------------------------------------------------------------------- tables


def test_render_table_keeps_display_strings_and_escapes_pipes():
    df = pd.DataFrame([["L_sup", "1.00", "0.652 ± 0.001"], ["a|b", "0.10", "—"]], columns=["mode", "c=0", "c=1"])
    out = render_table(df, caption="Table X: cos per slot.")
    lines = out["md"].splitlines()
    assert lines[0] == "Table X: cos per slot." and lines[1] == ""
    assert md_rows(out["md"]) == [["mode", "c=0", "c=1"], ["L_sup", "1.00", "0.652 ± 0.001"], ["a\\|b", "0.10", "—"]]
    assert list(csv.reader(io.StringIO(out["csv"]))) == [
        ["mode", "c=0", "c=1"],
        ["L_sup", "1.00", "0.652 ± 0.001"],
        ["a|b", "0.10", "—"],
    ]


def test_latex_is_booktabs_with_escaped_text_and_raw_math():
    df = pd.DataFrame([["W_ij & more", r"\alpha_{ij}", "50%"]], columns=["name_1", "formula", "share"])
    tex = render_table(df, caption="costs ± 5%", math_columns=["formula"])["tex"].splitlines()
    assert tex[0] == r"\begin{table}[t]" and tex[-1] == r"\end{table}"
    assert tex[2] == r"\caption{costs $\pm$ 5\%}"
    assert tex[3] == r"\begin{tabular}{lll}"
    top, mid, bottom = tex.index(r"\toprule"), tex.index(r"\midrule"), tex.index(r"\bottomrule")
    assert tex[top + 1] == r"name\_1 & formula & share \\"
    assert tex[mid + 1 : bottom] == [r"W\_ij \& more & $\alpha_{ij}$ & 50\% \\"]


def test_math_columns_wrap_in_markdown_only_and_must_exist():
    df = pd.DataFrame([["O(n)", "x"]], columns=["cost", "note"])
    out = render_table(df, math_columns=["cost"])
    assert md_rows(out["md"])[1] == ["$O(n)$", "x"]
    assert out["csv"].splitlines()[1] == "O(n),x"
    with pytest.raises(ValueError, match="math_columns .*'nope'"):
        render_table(df, math_columns=["nope"])


def test_tex_escape_turns_unicode_signs_into_math():
    assert tex_escape("≥ 0.90 ± 0.01 — ~") == r"$\geq$ 0.90 $\pm$ 0.01 -- \textasciitilde{}"
    assert tex_escape(r"a\b") == r"a\textbackslash{}b"


def test_write_table_writes_three_files_atomically(tmp_path):
    df = pd.DataFrame([["1", "2"]], columns=["a", "b"])
    paths = write_table(df, tmp_path / "sub" / "table_e11", caption="cap")
    assert [p.name for p in paths] == ["table_e11.md", "table_e11.tex", "table_e11.csv"]
    assert all(p.stat().st_size > 0 for p in paths)
    assert not [f for f in os.listdir(tmp_path / "sub") if ".tmp-" in f]


def test_write_csv_takes_the_union_of_keys_in_order(tmp_path):
    write_csv(tmp_path / "x.csv", [{"a": 1, "b": 0.1}, {"c": "z", "a": 2}])
    assert (tmp_path / "x.csv").read_text() == "a,b,c\n1,0.1,\n2,,z\n"


# ----------------------------------------------------------------------------- stats


def test_mean_std_over_seeds():
    assert stats.mean_std([0.5, 0.7]) == f"0.600 ± {math.sqrt(0.02):.3f}"  # sample std, ddof = 1
    assert stats.mean_std([0.25]) == "0.250 (1 seed)"
    assert stats.mean_std([]) == "—"
    assert stats.mean_std([float("nan"), float("nan")]) == "—"
    assert stats.mean_std([1.0, float("nan"), 3.0], digits=1) == "2.0 ± 1.4"


def test_geomean_and_its_refusals():
    assert stats.geomean([1, 4, 16]) == pytest.approx(4.0)
    assert stats.geomean(np.array([2.0])) == pytest.approx(2.0)
    for bad in ([1.0, 0.0], [1.0, -2.0], [1.0, float("nan")], []):
        with pytest.raises(ValueError):
            stats.geomean(bad)


def test_linear_and_loglinear_fits():
    x = np.array([0.0, 1.0, 2.0, 3.0])
    f = stats.linear_fit(x, 2 * x + 1)
    assert (f.slope, f.intercept, f.r2) == pytest.approx((2.0, 1.0, 1.0))
    g = stats.loglinear_fit(x, 10 ** (-0.5 * x + 2))  # log10 y = -0.5 x + 2
    assert (g.slope, g.intercept, g.r2) == pytest.approx((-0.5, 2.0, 1.0))
    p = stats.loglinear_fit([1, 2, 4, 8], [3, 12, 48, 192], base=2, log_x=True)  # y = 3 x^2
    assert (p.slope, p.intercept) == pytest.approx((2.0, math.log2(3)))
    noisy = stats.linear_fit([0, 1, 2, 3], [0, 1, 0, 1])
    assert 0 < noisy.r2 < 1 and noisy.slope == pytest.approx(0.2)
    with pytest.raises(ValueError, match="positive y"):
        stats.loglinear_fit([0, 1], [1, 0])
    with pytest.raises(ValueError, match="two distinct x"):
        stats.linear_fit([1, 1], [0, 1])


def test_crossing_interpolates_between_samples():
    x = [0.0, 1.0, 2.0, 3.0]
    assert stats.crossing(x, [0, 1, 2, 3], [1.5, 1.5, 1.5, 1.5]) == pytest.approx(1.5)
    assert stats.crossing(x, [3, 2, 1, 0], [0, 0, 0, 0]) == pytest.approx(3.0)  # touches at the last sample
    assert stats.crossing(x, [0, 0, 0, 0], [1, 1, 1, 1]) is None
    assert stats.crossing([0, 1, 2], [0, 2, 0], [1, 1, 1]) == pytest.approx(0.5)  # the first of two crossings
    with pytest.raises(ValueError, match="increasing"):
        stats.crossing([0, 2, 1], [0, 1, 2], [1, 1, 1])


# ----------------------------------------------------------------------------- plots


def test_band_is_mean_and_std_over_seeds_and_save_figure_writes_its_data(tmp_path):
    df = pd.DataFrame({"step": [0, 0, 10, 10, 20], "v": [1.0, 3.0, 2.0, 2.0, 5.0]})
    fig, ax = plt.subplots()
    g = band(ax, df, "v", "tab:blue", "v")
    assert g["step"].tolist() == [0, 10, 20]
    assert g["mean"].tolist() == pytest.approx([2.0, 2.0, 5.0])
    assert g["std"].tolist() == pytest.approx([math.sqrt(2), 0.0, 0.0])  # one seed at step 20: 0, not NaN
    paths = save_figure(fig, tmp_path / "fig_a", g)
    assert [p.name for p in paths] == ["fig_a.png", "fig_a.pdf", "fig_a.csv"]
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and paths[1].read_bytes()[:5] == b"%PDF-"
    back = pd.read_csv(paths[2])
    assert back["mean"].tolist() == pytest.approx([2.0, 2.0, 5.0])


def test_importing_plots_makes_pyplot_headless_whichever_is_imported_first():
    """A figure module imports pyplot itself, beside ``plots`` (which sets the backend): with another backend
    asked for (svg, one that needs no display), pyplot loaded first still draws with Agg once plots is in."""
    code = (
        "import matplotlib.pyplot as plt\n"
        "before = plt.get_backend().lower()\n"
        "import seqmix.report.plots\n"
        "print(before, plt.get_backend().lower(), type(plt.figure().canvas).__name__)\n"
    )
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "MPLBACKEND": "svg", "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["svg", "agg", "FigureCanvasAgg"]
