"""Sessa paper ("Sessa: Selective State Space Attention"): its artefacts, declared in the ``artefacts:`` block
of config/papers/sessa.yaml. Each is ``fn(spec, out)`` (see seqmix.config.artefacts for the spec)."""

from seqmix.registry import lazy_artefacts

ARTEFACTS = lazy_artefacts(
    __name__,
    {
        "analysis": ["parameters"],
        "tables": ["table1", "table2", "e2_lag_bins"],
        "theory_checks": ["theory_checks"],
        "figures_theory": ["figure_d1_kernels", "figure_d5_deep"],
        "figures": ["figure1", "figure2"],
        "diagnostics_init": ["d4_init_jacobians"],
        "diagnostics": ["d6_influence", "d7_routing", "d8_gradient_flow"],
    },
)
