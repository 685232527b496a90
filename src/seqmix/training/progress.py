"""A progress bar per training job on an interactive terminal; nothing in logs or CI.

Snakemake sends a job's stderr to its rule log, and CI logs are files too: there a bar would write a line per
refresh, so it is off, and the loop's periodic ``step i/n, ms/step, s left`` log line is the record instead.
"""

from __future__ import annotations

import os
import sys


def wanted(stream=None) -> bool:
    """True on a terminal outside CI (``CI`` set to anything non-empty turns it off; ``SEQMIX_PROGRESS=0`` too)."""
    stream = stream or sys.stderr
    if os.environ.get("CI") or os.environ.get("SEQMIX_PROGRESS", "1") == "0":
        return False
    return bool(getattr(stream, "isatty", lambda: False)())


def leaf_label(out_dir) -> str:
    """The bar's label: the leaf's path below its scale (``paper/experiment/variant/point/seed0``), not the bare
    ``seed0`` every leaf shares."""
    from pathlib import Path

    parts = Path(out_dir).parts
    return "/".join(parts[-5:]) if len(parts) >= 5 else "/".join(parts)


class StepBar:
    """``update()`` once per step; a no-op object when no bar is wanted, so the loop never branches on it. While
    the bar is drawn, log records go through tqdm's writer, above the bar, instead of breaking it."""

    def __init__(self, total: int, initial: int, desc: str, enabled: bool | None = None):
        self._bar = None
        self._redirect = None
        if wanted() if enabled is None else enabled:
            from tqdm import tqdm
            from tqdm.contrib.logging import logging_redirect_tqdm

            self._bar = tqdm(total=total, initial=initial, desc=desc, unit="step", leave=False, dynamic_ncols=True)
            self._redirect = logging_redirect_tqdm()
            self._redirect.__enter__()

    @property
    def n(self) -> int | None:
        return None if self._bar is None else int(self._bar.n)

    def update(self) -> None:
        if self._bar is not None:
            self._bar.update(1)

    def close(self) -> None:
        if self._redirect is not None:
            self._redirect.__exit__(None, None, None)
            self._redirect = None
        if self._bar is not None:
            self._bar.close()
