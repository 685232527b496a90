"""Rotations paper ("Why Do Accumulated Transformations Extrapolate?", Godavarti 2026): its artefacts, declared
in the ``artefacts:`` block of config/papers/rotations.yaml, each ``fn(spec, out)`` (see seqmix.config.artefacts for
the spec): the theory checks T1-T13 and the stylized simulations E6 (rotations spec §4, E6), the long
extrapolation table of the trained variants, Tables 1-4 and Figure 1 (spec E1-E4)."""

from . import extrapolation, figures, tables, theory_checks

ARTEFACTS = {
    "theory_checks": theory_checks.theory_checks,
    "figure_e6": theory_checks.figure_e6,
    "extrapolation": extrapolation.extrapolation,
    "table1": tables.table1,
    "table2": tables.table2,
    "table3": tables.table3,
    "table4": tables.table4,
    "figure1": figures.figure1,
}
