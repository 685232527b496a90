"""Heads paper ("How Many Heads Make an SSM?", Ghodsi 2025): its artefacts, declared in the ``artefacts:``
block of config/papers/heads.yaml. Each is ``fn(spec, out)`` (see seqmix.config.artefacts for the spec)."""

from . import _figure4, analysis, figures, tables

ARTEFACTS = {
    "theory": analysis.theory,
    "theory_checks": analysis.theory_checks,
    "spectrum": analysis.spectrum,
    "table1": tables.table1,
    "figure1": figures.figure1,
    "figure2": figures.figure2,
    "figure3_left": figures.figure3_left,
    "figure3_right": figures.figure3_right,
    "figure4": _figure4.figure4,
}
