"""Rotations paper ("Why Do Accumulated Transformations Extrapolate?", Godavarti 2026): its artefacts, declared
in the ``artefacts:`` block of config/papers/rotations.yaml, each ``fn(spec, out)`` (see seqmix.config.artefacts for
the spec): the theory checks T1-T13 and the stylized simulations E6 (rotations spec §4, E6), the long
extrapolation table of the trained variants, Tables 1-4 and Figure 1 (spec E1-E4)."""

from seqmix.registry import lazy_artefacts

ARTEFACTS = lazy_artefacts(
    __name__,
    {
        "theory_checks": ["theory_checks", "figure_e6"],
        "extrapolation": ["extrapolation"],
        "tables": ["table1", "table2", "table3", "table4"],
        "figures": ["figure1"],
    },
)
