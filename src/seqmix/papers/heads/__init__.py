"""Heads paper ("How Many Heads Make an SSM?", Ghodsi 2025): its artefacts, declared in the ``artefacts:``
block of config/papers/heads.yaml. Each is ``fn(spec, out)`` (see seqmix.config.artefacts for the spec)."""

from seqmix.registry import lazy_artefacts

ARTEFACTS = lazy_artefacts(
    __name__,
    {
        "analysis": ["theory", "theory_checks", "spectrum"],
        "tables": ["table1"],
        "figures": ["figure1", "figure2", "figure3_left", "figure3_right"],
        "_figure4": ["figure4"],
    },
)
