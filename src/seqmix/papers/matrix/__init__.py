"""Matrix paper: every sequence mixer on every task under one protocol and budget (config/papers/matrix.yaml,
one experiment per task, one variant per mixer, a learning-rate sweep ``lr`` and seeds). Its artefacts,
each ``fn(spec, out)`` (see seqmix.config.artefacts for the spec):

- ``grid`` (analysis.py): one row per leaf -> grid/summary.csv;
- ``scores``, ``ranking``, ``memory``, ``excluded`` (tables.py);
- ``heatmap``, ``influence_curves`` (figures.py).

The protocol (lr chosen on validation, bootstrap intervals, interval ranks) is selection.py's docstring.
"""

from seqmix.registry import lazy_artefacts

ARTEFACTS = lazy_artefacts(
    __name__,
    {
        "analysis": ["grid"],
        "tables": ["scores", "ranking", "memory", "excluded"],
        "figures": ["heatmap", "influence_curves"],
    },
)
