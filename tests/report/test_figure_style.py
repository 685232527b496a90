"""The figure style check (``seqmix.report.figure_style``) on figures built here: a legend over data, over a
label or over another panel, and tick labels on each other or on a neighbouring panel are reported; the
placements of ``plots.legend_outside`` pass. Also the one style of the paper's values (``paper_values``) and
how a claim's reported value becomes a range (``reported_range``)."""

from __future__ import annotations

import logging

import matplotlib.pyplot as plt
import numpy as np
import pytest

from seqmix.report import plots
from seqmix.report.figure_style import figure_style_problems
from seqmix.report.plots import legend_outside, paper_values, reported_range


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def line_figure(ncols: int = 1, figsize=(4, 3)):
    fig, axes = plt.subplots(1, ncols, figsize=figsize, squeeze=False)
    for i, ax in enumerate(axes[0]):
        ax.plot(np.arange(10), np.arange(10), label=f"series {i}")
        ax.set_xlabel("step")
    return fig, axes[0]


# ----------------------------------------------------------------------------- legends


def test_a_legend_inside_the_axes_is_reported():
    fig, (ax,) = line_figure()
    ax.legend(loc="upper left")
    assert figure_style_problems(fig) == ["legend of 'axes 0' covers the data area of 'axes 0'"]


@pytest.mark.parametrize("below", [False, True])
def test_legend_outside_an_axes_passes(below):
    fig, (ax,) = line_figure()
    legend_outside(ax, below=below)
    assert figure_style_problems(fig) == []
    # beside the frame on the right, or under the x label
    box, frame = ax.get_legend().get_window_extent(), ax.get_window_extent()
    assert box.y1 < frame.y0 - ax.xaxis.label.get_window_extent().height if below else box.x0 > frame.x1


def test_a_legend_outside_its_own_axes_but_on_the_next_panel_is_reported():
    fig, axes = line_figure(ncols=3, figsize=(9, 3))
    legend_outside(axes[0])  # right of the first panel: on top of the second one
    problems = figure_style_problems(fig)
    assert "legend of 'axes 0' covers the data area of 'axes 1'" in problems


def test_a_legend_over_an_axis_label_is_reported():
    fig, (ax,) = line_figure()
    ax.set_ylabel("a long y label")
    ax.legend(loc="center right", bbox_to_anchor=(-0.02, 0.5))  # left of the frame, where the y label is
    assert any("covers labels" in p and "a long y label" in p for p in figure_style_problems(fig))


def test_one_figure_legend_right_of_every_panel_passes_and_lists_each_label_once():
    fig, axes = line_figure(ncols=3, figsize=(9, 3))
    for ax in axes:
        ax.plot([0, 9], [9, 0], color="k", label="shared")
    fig.tight_layout()
    leg = legend_outside(fig)
    assert [t.get_text() for t in leg.get_texts()] == ["series 0", "shared", "series 1", "series 2"]
    assert figure_style_problems(fig) == []


# ----------------------------------------------------------------------------- tick labels


def test_crowded_tick_labels_are_reported_and_rotation_by_90_degrees_clears_them():
    fig, ax = plt.subplots(figsize=(2, 3))
    ax.set_xticks(range(12), [f"label{i}" for i in range(12)])
    problems = figure_style_problems(fig)
    assert len(problems) == 1 and problems[0].startswith("x tick labels of 'axes 0' overlap")
    ax.set_xticks(range(12), [f"label{i}" for i in range(12)], rotation=90)
    assert figure_style_problems(fig) == []


def test_slanted_labels_are_judged_by_their_glyphs_not_their_bounding_boxes():
    """At 30 degrees the boxes of neighbouring labels overlap while the text does not."""
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.set_xticks(range(8), [f"a long label {i}" for i in range(8)], rotation=30, ha="right")
    fig.canvas.draw()
    boxes = [t.get_window_extent() for t in ax.get_xticklabels()]
    assert boxes[0].x1 > boxes[1].x0  # the axis-aligned boxes do overlap
    assert figure_style_problems(fig) == []


def test_log_axis_minor_labels_that_run_together_are_reported():
    """b2s6 Figure 5's old panel (c): a log axis over 50..800 labels its minor ticks 2x10^2, 3x10^2, ..."""
    fig, ax = plt.subplots(figsize=(4, 3.4))
    ax.loglog([50, 100, 200, 400, 800], [5, 7, 10, 14, 20])
    assert any("x tick labels" in p and "overlap" in p for p in figure_style_problems(fig))


def test_tick_labels_running_into_the_next_panel_are_reported():
    fig, axes = plt.subplots(1, 2, figsize=(6, 3))
    fig.subplots_adjust(wspace=0.02)
    axes[1].plot([0, 1], [1e6, 2e6])  # wide y tick labels, left of the second panel: inside the first
    assert any("y tick labels" in p and "run into the data area of 'axes 0'" in p for p in figure_style_problems(fig))


def test_ticks_outside_the_view_and_empty_labels_do_not_count():
    fig, ax = plt.subplots(figsize=(3, 3))
    ax.set_xticks([0, 1, 50, 51], ["a", "", "b", "c"])  # 50 and 51 would overlap, but lie outside the view
    ax.set_xlim(-0.5, 1.5)
    assert figure_style_problems(fig) == []


def test_an_axes_turned_off_has_no_ticks_to_check():
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.set_xticks(range(12), [f"label{i}" for i in range(12)])
    ax.axis("off")
    assert figure_style_problems(fig) == []


# ----------------------------------------------------------------------------- save


def test_save_logs_the_problems_and_still_writes_the_files(tmp_path, caplog):
    fig, (ax,) = line_figure()
    ax.legend(loc="upper left")
    with caplog.at_level(logging.WARNING, logger="seqmix.report.plots"):
        written = plots.save(fig, tmp_path / "inside")
    assert [p.name for p in written] == ["inside.png", "inside.pdf"] and all(p.stat().st_size for p in written)
    assert [r.getMessage() for r in caplog.records] == [
        "figure inside: legend of 'axes 0' covers the data area of 'axes 0'"
    ]


def test_save_of_a_clean_figure_logs_nothing(tmp_path, caplog):
    fig, (ax,) = line_figure()
    legend_outside(ax)
    with caplog.at_level(logging.WARNING, logger="seqmix.report.plots"):
        plots.save(fig, tmp_path / "outside")
    assert caplog.records == []


# ----------------------------------------------------------------------------- the paper's values


def test_paper_values_are_labelled_paper_and_drawn_in_black():
    fig, ax = plt.subplots()
    pts = paper_values(ax, [1, 2], [3.0, 4.0], label="Table 2")
    line = paper_values(ax, [1, 2], [1.0, 2.0], line=True, marker="", label="paper: slope 1")
    level = paper_values(ax, level=0.5, span=(0.5, 1.5))
    assert [a.get_label() for a in (pts, line, level)] == ["paper: Table 2", "paper: slope 1", "paper"]
    assert pts.get_linestyle() == "None" and pts.get_markeredgecolor() == "k" and line.get_linestyle() == "--"
    assert list(pts.get_ydata()) == [3.0, 4.0] and list(level.get_xdata()) == [0.5, 1.5]
    with pytest.raises(ValueError, match="needs points"):
        paper_values(ax, [1, 2])


def test_a_one_sided_paper_band_runs_to_the_axes_edge_and_keeps_the_limits():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0.2, 1.0])
    ylim = ax.get_ylim()
    patch = paper_values(ax, band=reported_range(">= 0.875"), label="band")
    assert ax.get_ylim() == ylim
    assert patch.get_y() == pytest.approx(0.875) and patch.get_y() + patch.get_height() == pytest.approx(ylim[1])


@pytest.mark.parametrize(
    "value, expected",
    [
        (3, (3.0, 3.0)),
        (0.5, (0.5, 0.5)),
        ([49.0, 0.02], (48.98, 49.02)),
        ("[-0.0204, -0.0118]", (-0.0204, -0.0118)),
        (">= 0.875", (0.875, None)),
        ("> 1.05", (1.05, None)),
        ("<= 0.55", (None, 0.55)),
        ("< 1e-14", (None, 1e-14)),
    ],
)
def test_reported_range(value, expected):
    got = reported_range(value)
    assert got == pytest.approx(expected) if None not in expected else got == expected


@pytest.mark.parametrize("value", ["A -> 0", "qualitative", True, "Theta(1)"])
def test_reported_values_that_state_no_number_are_refused(value):
    with pytest.raises(ValueError, match="states no number or range"):
        reported_range(value)
