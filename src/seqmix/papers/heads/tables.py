"""The heads paper's tables."""

from __future__ import annotations

from pathlib import Path

from ...report.tables import write_static_table


def table1(spec: dict, out: Path) -> None:
    """Table 1 (representative architectures), stored as data in the config's ``tables:`` block."""
    write_static_table(spec["analysis"]["table1"], out / "table1")
