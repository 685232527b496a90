"""Rotations paper ("Why Do Accumulated Transformations Extrapolate?", Godavarti 2026): its artefacts, each
``fn(spec, out)`` (see seqmix.artefacts for the spec). So far the parts that train nothing: the theory checks
T1-T13 and the stylized simulations E6 (rotations spec §4, E6)."""

from . import theory

ARTEFACTS = {
    "theory_checks": theory.theory_checks,
    "figure_e6": theory.figure_e6,
}
