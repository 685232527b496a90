"""The frontier-superposition paper (Gu & Fu, arXiv 2605.18820): its artefacts, each ``fn(spec, out)``.

``spec`` holds only paper, scale, name, paper_dir, inputs ({summaries, leaves, artefacts}: paths), resolved
(the leaf configs of the experiments it reads), analysis (its keys of the paper's ``analysis:`` block) and
reported (the claims' ``reported`` values it shows); ``out`` is the directory it writes into. What each
artefact reads and writes is declared in config/papers/superposition.yaml (``artefacts:``), its only copy.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path


def _lazy(module: str, function: str) -> Callable[[dict, Path], None]:
    """The artefact ``module.function``, imported when called (a table job never loads matplotlib)."""

    def run(spec: dict, out: Path) -> None:
        getattr(importlib.import_module(f"{__name__}.{module}"), function)(spec, out)

    run.__name__ = run.__qualname__ = function
    run.__doc__ = f"{__name__}.{module}.{function}, imported on call."
    return run


_WHERE = {
    "analysis": ["theory"],
    "tables": ["table1", "table2", "table3", "table_e11"],
    "figures": ["figure1", "figure2", "figure3", "figure_e4_diagonalisation", "figure_e8_mobius_A"],
    "figures_reduced": ["figure_e3_mobius", "figure_e6_gradlaw", "figure_e7_conjd", "figure_e11_beta_ladder"],
}
ARTEFACTS: dict[str, Callable[[dict, Path], None]] = {
    name: _lazy(mod, name) for mod, names in _WHERE.items() for name in names
}
