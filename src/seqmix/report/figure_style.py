"""What a reader must never meet in a figure: a legend over plotted data or over a label, and tick labels
printed on top of each other. ``figure_style_problems(fig)`` draws the canvas at the figure's own size and
returns one line per problem (empty when the figure is clean); ``plots.save`` logs them, tests assert none.

Geometry is in display pixels. A tick label is the rotated rectangle of its text (its axis-aligned window
extent is far wider than the glyphs once rotated by 30 degrees, so two slanted labels whose boxes touch can
still be apart); overlap is tested by separating axes, with ``TOLERANCE_PX`` of slack so that labels that
merely touch pass.
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.axis import Axis
from matplotlib.text import Text

__all__ = ["TOLERANCE_PX", "figure_style_problems"]

TOLERANCE_PX = 1.0  # overlaps narrower than this are touching, not overlapping


def _corners(text: Text, renderer) -> np.ndarray:
    """The 4 corners (4 x 2, display pixels) of the rotated rectangle a text occupies: its unrotated size,
    turned about the centre of its window extent (a rotated rectangle's bounding box shares its centre)."""
    box = text.get_window_extent(renderer)
    angle = text.get_rotation()
    text.set_rotation(0)
    flat = text.get_window_extent(renderer)
    text.set_rotation(angle)
    w, h = flat.width / 2, flat.height / 2
    c, s = math.cos(math.radians(angle)), math.sin(math.radians(angle))
    local = np.array([[-w, -h], [w, -h], [w, h], [-w, h]])
    return local @ np.array([[c, s], [-s, c]]) + [(box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2]


def _polygons_overlap(a: np.ndarray, b: np.ndarray, tol: float = TOLERANCE_PX) -> bool:
    """Two convex polygons (k x 2) overlap by more than ``tol`` along every edge normal of both."""
    for poly in (a, b):
        for i in range(len(poly)):
            edge = poly[(i + 1) % len(poly)] - poly[i]
            norm = np.hypot(*edge)
            if norm == 0:
                continue
            axis = np.array([-edge[1], edge[0]]) / norm
            pa, pb = a @ axis, b @ axis
            if min(pa.max(), pb.max()) - max(pa.min(), pb.min()) <= tol:
                return False
    return True


def _box(bbox) -> np.ndarray:
    return np.array([[bbox.x0, bbox.y0], [bbox.x1, bbox.y0], [bbox.x1, bbox.y1], [bbox.x0, bbox.y1]])


def _shown_tick_labels(axis: Axis) -> list[Text]:
    """The tick labels the axis draws: visible, non-empty, at ticks inside the view interval."""
    lo, hi = sorted(axis.get_view_interval())
    span = hi - lo
    out = []
    for tick in [*axis.get_major_ticks(), *axis.get_minor_ticks()]:
        loc = tick.get_loc()
        if loc is None or not (lo - 1e-9 * span <= loc <= hi + 1e-9 * span) or not tick.get_visible():
            continue
        out += [t for t in (tick.label1, tick.label2) if t.get_visible() and t.get_text().strip()]
    return out


def _axis_name(ax, which: str) -> str:
    title = ax.get_title() or ax.get_label() or f"axes {ax.figure.axes.index(ax)}"
    return f"{which} tick labels of {title!r}"


def _overlapping_ticks(ax, renderer) -> list[str]:
    """Tick labels of one axis on top of each other, or on another axes' area (a neighbouring panel)."""
    problems = []
    others = [o for o in ax.figure.axes if o is not ax and o.get_visible()]
    for which, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
        labels = _shown_tick_labels(axis)
        polys = [_corners(t, renderer) for t in labels]
        clashes = [
            (labels[i].get_text(), labels[j].get_text())
            for i in range(len(polys))
            for j in range(i + 1, len(polys))
            if _polygons_overlap(polys[i], polys[j])
        ]
        if clashes:
            shown = ", ".join(f"{a!r}/{b!r}" for a, b in clashes[:3])
            problems.append(f"{_axis_name(ax, which)} overlap ({len(clashes)} pairs: {shown})")
        for o in others:
            area = _box(o.get_window_extent(renderer))
            hit = [t.get_text() for t, p in zip(labels, polys) if _polygons_overlap(p, area)]
            if hit:
                where = o.get_title() or o.get_label() or f"axes {ax.figure.axes.index(o)}"
                problems.append(f"{_axis_name(ax, which)} run into the data area of {where!r} ({hit[0]!r})")
    return problems


def _legends(fig) -> list[tuple[str, object]]:
    found = [(f"figure legend {i}", leg) for i, leg in enumerate(fig.legends)]
    for ax in fig.axes:
        leg = ax.get_legend()
        if leg is not None and leg.get_visible():
            found.append((f"legend of {ax.get_title() or ax.get_label() or 'axes ' + str(fig.axes.index(ax))!r}", leg))
    return found


def _labels(fig) -> list[Text]:
    """Axis labels, titles and tick labels: the text a legend must leave readable."""
    texts = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        texts.append(ax.title)
        if ax.axison:
            texts += [ax.xaxis.label, ax.yaxis.label, *_shown_tick_labels(ax.xaxis), *_shown_tick_labels(ax.yaxis)]
    return [t for t in texts if t.get_visible() and t.get_text().strip()]


def _legend_problems(fig, renderer) -> list[str]:
    problems = []
    legends = _legends(fig)
    labels = _labels(fig)
    for name, leg in legends:
        box = _box(leg.get_window_extent(renderer))
        for ax in fig.axes:
            if ax.get_visible() and _polygons_overlap(box, _box(ax.get_window_extent(renderer))):
                where = ax.get_title() or ax.get_label() or f"axes {fig.axes.index(ax)}"
                problems.append(f"{name} covers the data area of {where!r}")
        covered = [t.get_text() for t in labels if _polygons_overlap(box, _corners(t, renderer))]
        if covered:
            problems.append(f"{name} covers labels {', '.join(repr(t) for t in covered[:3])}")
    for i, (a, la) in enumerate(legends):
        for b, lb in legends[i + 1 :]:
            if _polygons_overlap(_box(la.get_window_extent(renderer)), _box(lb.get_window_extent(renderer))):
                problems.append(f"{a} overlaps {b}")
    return problems


def figure_style_problems(fig) -> list[str]:
    """Draw ``fig`` and list what breaks the house style, one line each: (a) a legend whose box overlaps an
    axes' area (the data it would hide), a label or another legend; (b) tick labels of one axis that overlap
    each other. Axes turned off (schematics) still count as data areas: a legend must not cover a drawing."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    problems = _legend_problems(fig, renderer)
    for ax in fig.axes:
        if ax.get_visible() and ax.axison:
            problems += _overlapping_ticks(ax, renderer)
    return problems
