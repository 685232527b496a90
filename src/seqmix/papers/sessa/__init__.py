"""Sessa paper ("Sessa: Selective State Space Attention"): its artefacts, declared in the ``artefacts:`` block
of config/papers/sessa.yaml. Each is ``fn(spec, out)`` (see seqmix.config.artefacts for the spec)."""

from . import analysis, diagnostics, figures, figures_theory, tables, theory_checks

ARTEFACTS = {
    "parameters": analysis.parameters,
    "table1": tables.table1,
    "table2": tables.table2,
    "e2_lag_bins": tables.e2_lag_bins,
    "theory_checks": theory_checks.theory_checks,
    "figure_d1_kernels": figures_theory.figure_d1_kernels,
    "figure_d5_deep": figures_theory.figure_d5_deep,
    "figure1": figures.figure1,
    "figure2": figures.figure2,
    "d4_init_jacobians": diagnostics.d4_init_jacobians,
    "d6_influence": diagnostics.d6_influence,
    "d7_routing": diagnostics.d7_routing,
    "d8_gradient_flow": diagnostics.d8_gradient_flow,
}
