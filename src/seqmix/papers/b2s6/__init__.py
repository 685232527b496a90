"""B2S6 paper ("Block-Biased Mamba for Long-Range Sequence Processing", Yu and Erichson 2025): its artefacts,
declared in the ``artefacts:`` block of config/papers/b2s6.yaml. Each is ``fn(spec, out)`` (see
seqmix.artefacts for the spec). Built: the synthetic experiments E1, E3, E4, E5, the schematics E10 and the
theory checks of spec §4; E2 and E6-E9 (the sCIFAR, LRA and language-model runs) are not built yet."""

from . import (  # --- E7 (Tables 2-3, LRA) and E8 (Table 4) ---
    analysis,
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
