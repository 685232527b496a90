"""Figure helpers: a headless matplotlib, atomic PNG + PDF (+ the CSV a figure is drawn from), and the
mean ± std band over seeds that most training-curve figures use."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from ..io import atomic_path, write_text

__all__ = ["band", "plt", "save", "save_figure"]


def save(fig, stem: str | Path) -> list[Path]:
    """Write ``stem``.png (150 dpi) and ``stem``.pdf atomically (the PDF without a creation date, so a
    re-run writes the same bytes); close the figure."""
    stem = Path(stem)
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
