"""Figure helpers: a headless matplotlib and atomic PNG + PDF output."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..io import atomic_path  # noqa: E402


def save(fig, stem: str | Path) -> list[Path]:
    """Write ``stem``.png (150 dpi) and ``stem``.pdf atomically; close the figure."""
    stem = Path(stem)
    out = []
    for ext in ("png", "pdf"):
        path = stem.with_suffix(f".{ext}")
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=ext, dpi=150, bbox_inches="tight", metadata={"CreationDate": None} if ext == "pdf" else None)
        out.append(path)
    plt.close(fig)
    return out
