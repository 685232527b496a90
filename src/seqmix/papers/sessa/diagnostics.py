"""The artefacts of the derived diagnostics D4, D6-D8 of spec §3.6 (``fn(spec, out)``, see seqmix.config.artefacts).

- ``d4_init_jacobians`` (defined in ``diagnostics_init``): one block per mixer at random init, no training read;
- ``d6_influence``, ``d7_routing``, ``d8_gradient_flow``: every trained E1/E2 leaf the artefact reads
  (``reads.leaves``), in float64 (``diagnostics_influence``, ``diagnostics_routing``).
Each writes ``summary.csv`` (long rows ..., quantity, value; checksummed: the claims read it), ``curves.csv``
(the profiles) and its figure ``<name>.png`` / ``.pdf``, the file the report shows.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from ...report.tables import write_csv
from . import diagnostics_figures as figures
from .diagnostics_common import trained_leaves
from .diagnostics_influence import gradient_flow_leaf, influence_leaf
from .diagnostics_routing import routing_leaf

log = logging.getLogger("seqmix.papers.sessa")

__all__ = ["d6_influence", "d7_routing", "d8_gradient_flow"]


def _per_leaf(spec: dict, out: Path, per_leaf, figure) -> None:
    name = spec["name"]
    settings = spec["analysis"][name]
    summary, curves = [], []
    for exp, leaf in trained_leaves(spec, name):
        t0 = time.perf_counter()
        s, c = per_leaf(exp, leaf, settings)
        summary += s
        curves += c
        log.info("%s: %s/%s in %.2f s", name, exp, leaf["id"], time.perf_counter() - t0)
    out = Path(out)
    write_csv(out / "summary.csv", summary, checksum=True)  # the claims verify it
    write_csv(out / "curves.csv", curves)
    figure(curves, summary, out / name, spec["scale"])


def d6_influence(spec: dict, out: Path) -> None:
    _per_leaf(spec, out, influence_leaf, figures.d6_figure)


def d7_routing(spec: dict, out: Path) -> None:
    _per_leaf(spec, out, routing_leaf, figures.d7_figure)


def d8_gradient_flow(spec: dict, out: Path) -> None:
    _per_leaf(spec, out, gradient_flow_leaf, figures.d8_figure)
