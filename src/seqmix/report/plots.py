"""Figure helpers: a headless matplotlib, atomic PNG + PDF (+ the CSV a figure is drawn from), the mean ± std
band over seeds that most training-curve figures use, the paper's own values drawn one way in every figure
(``paper_values``), legends kept off the data (``legend_outside``), and the style check ``save`` runs
(``figure_style.figure_style_problems``)."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import matplotlib

# Importing this module is what makes every figure headless. Callers import pyplot themselves, before or after
# this module: when pyplot is already loaded, matplotlib.use switches it over (tests/report/test_helpers.py).
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.transforms import offset_copy

from ..io import atomic_path, write_text
from .figure_style import figure_style_problems

__all__ = [
    "PAPER",
    "band",
    "legend_outside",
    "paper_values",
    "reported_range",
    "save",
    "save_figure",
]

log = logging.getLogger(__name__)

PAPER = "paper"  # every legend entry of a paper value starts with this word
PAPER_COLOR = "k"


def save(fig, stem: str | Path) -> list[Path]:
    """Write ``stem``.png (150 dpi) and ``stem``.pdf atomically (the PDF without a creation date, so a
    re-run writes the same bytes); close the figure. A legend over data or overlapping tick labels
    (``figure_style_problems``) are logged as a warning: the files are still written."""
    stem = Path(stem)
    problems = figure_style_problems(fig)
    if problems:
        log.warning("figure %s: %s", stem.name, "; ".join(problems))
    out = []
    for ext in ("png", "pdf"):
        path = stem.with_name(f"{stem.name}.{ext}")
        with atomic_path(path) as tmp:
            fig.savefig(
                tmp, format=ext, dpi=150, bbox_inches="tight", metadata={"CreationDate": None} if ext == "pdf" else None
            )
        out.append(path)
    plt.close(fig)
    return out


def save_figure(fig, stem: str | Path, data: pd.DataFrame | list[dict]) -> list[Path]:
    """``save`` plus ``stem``.csv: the numbers the figure shows, so every figure can be checked as data."""
    stem = Path(stem)
    frame = data if isinstance(data, pd.DataFrame) else pd.DataFrame(data)
    csv_path = stem.with_name(f"{stem.name}.csv")
    write_text(csv_path, frame.to_csv(index=False, lineterminator="\n"))
    return [*save(fig, stem), csv_path]


def band(ax, df: pd.DataFrame, col: str, color, label: str | None, ls: str = "-", x: str = "step") -> pd.DataFrame:
    """Plot the mean of ``col`` over the rows sharing an ``x`` (the seeds) with a ± std band.

    Returns the drawn curve as a DataFrame (x, mean, std); one seed has std 0 (not NaN)."""
    g = df.groupby(x)[col].agg(["mean", "std"]).reset_index().fillna(0)
    ax.plot(g[x], g["mean"], ls, color=color, label=label, lw=1.4)
    ax.fill_between(g[x], g["mean"] - g["std"], g["mean"] + g["std"], color=color, alpha=0.18, lw=0)
    return g


def reported_range(value) -> tuple[float | None, float | None]:
    """A claim's ``reported`` value as the (lo, hi) range it states, None for an open side: a number ``v`` ->
    (v, v); ``[mean, std]`` -> mean ± std; ``"[lo, hi]"``; ``">= v"``/``"> v"`` -> (v, None); ``"<= v"``/``"< v"``
    -> (None, v). Anything else (a word, "A -> 0") is not a value a figure can draw: ValueError."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value), float(value)
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, (int, float)) for v in value):
        return float(value[0] - value[1]), float(value[0] + value[1])
    text = str(value).strip()
    m = re.fullmatch(r"\[\s*(\S+)\s*,\s*(\S+)\s*\]", text)
    if m:
        return float(m[1]), float(m[2])
    m = re.fullmatch(r"(>=|>|<=|<|≥|≤)\s*(\S+)", text)
    if m:
        v = float(m[2])
        return (v, None) if m[1] in (">=", ">", "≥") else (None, v)
    raise ValueError(f"reported value {value!r} states no number or range to draw")


def paper_values(
    ax, x=None, y=None, *, band=None, level=None, span=None, line=False, label: str = PAPER, color=None, marker="D"
):
    """Draw the paper's own numbers on ``ax`` in the one style every figure shares (black hollow markers,
    dashed lines, hatched grey ranges) under a legend label that starts with "paper" (``label`` gets the
    prefix if it lacks it):

    - points ``x``, ``y`` (equal lengths): hollow markers; ``line=True`` joins them with a dashed line (a
      printed curve or law, e.g. a reference slope); ``color`` only where several printed series share a panel;
    - ``band=(lo, hi)``: a printed range or threshold region, hatched, across the axes or over ``span=(x0, x1)``;
      a None side (a one-sided threshold such as "≥ 0.875", see ``reported_range``) runs to the axes' current
      limit, so draw it after the data;
    - ``level=v``: one printed value as a dashed horizontal line (over ``span`` when given).

    The numbers come from the paper's config (claims' ``reported`` values, tables of paper numbers) or an
    existing constant of the paper's package, never typed at the call. Returns the artist drawn."""
    label = label if label.startswith(PAPER) else f"{PAPER}: {label}"
    color = PAPER_COLOR if color is None else color
    if band is not None:
        ylim = ax.get_ylim()
        lo, hi = (ylim[0] if band[0] is None else band[0]), (ylim[1] if band[1] is None else band[1])
        kw = dict(facecolor="0.5", alpha=0.25, hatch="//", edgecolor="0.3", lw=0, label=label)
        drawn = ax.axhspan(lo, hi, **kw) if span is None else ax.fill_between(list(span), [lo, lo], [hi, hi], **kw)
        if None in band:
            ax.set_ylim(ylim)
        return drawn
    if level is not None:
        if span is None:
            return ax.axhline(level, color=color, ls="--", lw=1, label=label)
        return ax.plot(list(span), [level, level], "--", color=color, lw=1, label=label)[0]
    if x is None or y is None:
        raise ValueError("paper_values needs points (x and y), a band or a level")
    style = dict(marker=marker, ms=5, mfc="none", mec=color, color=color, label=label, zorder=4)
    return ax.plot(list(x), list(y), ls="--" if line else "none", lw=1, **style)[0]


def legend_outside(where, *, below: bool = False, fontsize: float = 7, **kw):
    """A legend that covers no data. For an Axes: beside it on the right, or with ``below=True`` under its
    tick labels and x label (for panels side by side); the offset is in points, so it survives a later
    ``tight_layout``. For a Figure: one legend of every labelled artist of its axes (each label once, in
    drawing order) right of everything the axes draw; call it once the layout is final."""
    opts = dict(fontsize=fontsize, borderaxespad=0.0, frameon=False) | kw
    fig = where.figure if isinstance(where, Axes) else where
    renderer = fig.canvas.get_renderer()
    if isinstance(where, Axes):
        ax = where
        inner, outer = ax.get_window_extent(renderer), ax.get_tightbbox(renderer)
        pts = 72 / fig.dpi
        if below:  # under what the axes draw below its frame (tick labels, x label), 3 points apart
            shift = offset_copy(ax.transAxes, fig=fig, y=-((inner.y0 - outer.y0) * pts + 3), units="points")
            return ax.legend(loc="upper center", bbox_to_anchor=(0.5, 0.0), bbox_transform=shift, **opts)
        shift = offset_copy(ax.transAxes, fig=fig, x=max(0.0, outer.x1 - inner.x1) * pts + 4, units="points")
        return ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), bbox_transform=shift, **opts)
    entries: dict[str, object] = {}
    for ax in fig.axes:
        for handle, text in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(text, handle)
    to_fig = fig.transFigure.inverted()
    shown = [ax for ax in fig.axes if ax.get_visible()]
    right = max(to_fig.transform(ax.get_tightbbox(renderer).p1)[0] for ax in shown) + 0.01
    top = max(ax.get_position().y1 for ax in shown)
    return fig.legend(list(entries.values()), list(entries), loc="upper left", bbox_to_anchor=(right, top), **opts)
