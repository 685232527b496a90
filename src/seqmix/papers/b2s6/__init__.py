"""B2S6 paper ("Block-Biased Mamba for Long-Range Sequence Processing", Yu and Erichson 2025): its artefacts,
declared in the ``artefacts:`` block of config/papers/b2s6.yaml. Each is ``fn(spec, out)`` (see
seqmix.config.artefacts for the spec). Built: the synthetic experiments E1, E3, E4, E5, the schematics E10 and the
theory checks of spec §4, E2 (S4D with tied B, C), E6 (Table 1, the sCIFAR ablation), E7-E8 (LRA Tables 2-4),
E9 (the language model, Figure 7) and the diagnostics D1, D5; each experiment's artefacts are registered in
its own block below."""

from . import (  # noqa: E402
    analysis,
    e2_tied,
    e6_ablation,
    e7_lra,
    e7_tables,
    e8_table4,
    figures,
    schematics,
    tables,
)

ARTEFACTS = {
    "gradient_scaling": analysis.gradient_scaling,
    "theory_checks": analysis.theory_checks,
    "stability": analysis.stability,
    "e1_width": tables.e1_width,
    "e5_stability": tables.e5_stability,
    "figure1": schematics.figure1,
    "figure2": schematics.figure2,
    "figure3": figures.figure3,
    "figure4": figures.figure4,
    "figure5": figures.figure5,
    "figure6": figures.figure6,
    # --- E7 (Tables 2-3, Long Range Arena) ---
    "lra_results": e7_lra.lra_results,
    "table2": e7_tables.table2,
    "table3": e7_tables.table3,
    # --- E8 (Table 4, the LRA configs) ---
    "table4_configs": e8_table4.table4_configs,
    "table4": e8_table4.table4,
}

# --- E9 (language model, Figure 7) and diagnostics D1, D5 ---
from . import d1_profiles, d5_delta, e9_lm  # noqa: E402

ARTEFACTS.update(
    {
        "e9_lm": e9_lm.e9_lm,
        "d1_profiles": d1_profiles.d1_profiles,
        "d5_delta": d5_delta.d5_delta,
    }
)
# --- E2, E6 (S4D with tied B, C; Table 1) ---
ARTEFACTS |= {
    "e2_tied_bc": e2_tied.e2_tied_bc,
    "e6_relations": e6_ablation.e6_relations,
    "table1": e6_ablation.table1,
}
