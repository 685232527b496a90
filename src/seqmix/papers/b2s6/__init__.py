"""B2S6 paper ("Block-Biased Mamba for Long-Range Sequence Processing", Yu and Erichson 2025): its artefacts,
declared in the ``artefacts:`` block of config/papers/b2s6.yaml. Each is ``fn(spec, out)`` (see
seqmix.config.artefacts for the spec). Built: the synthetic experiments E1, E3, E4, E5, the schematics E10 and the
theory checks of spec §4, E2 (S4D with tied B, C), E6 (Table 1, the sCIFAR ablation), E7-E8 (LRA Tables 2-4),
E9 (the language model, Figure 7) and the diagnostics D1, D5; listed by the module that builds them."""

from seqmix.registry import lazy_artefacts

ARTEFACTS = lazy_artefacts(
    __name__,
    {
        "analysis": ["gradient_scaling", "theory_checks", "stability"],
        "tables": ["e1_width", "e5_stability"],
        "schematics": ["figure1", "figure2"],
        "figures": ["figure3", "figure4", "figure5", "figure6"],
        "e7_lra": ["lra_results"],
        "e7_tables": ["table2", "table3"],
        "e8_table4": ["table4_configs", "table4"],
        "e9_lm": ["e9_lm"],
        "d1_profiles": ["d1_profiles"],
        "d5_delta": ["d5_delta"],
        "e2_tied": ["e2_tied_bc"],
        "e6_ablation": ["e6_relations", "table1"],
    },
)
