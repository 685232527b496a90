"""The frontier-superposition paper (Gu & Fu, arXiv 2605.18820): its artefacts, each ``fn(spec, out)``.

``spec`` holds only paper, scale, name, paper_dir, inputs ({summaries, leaves, artefacts}: paths), resolved
(the leaf configs of the experiments it reads), analysis (its keys of the paper's ``analysis:`` block) and
reported (the claims' ``reported`` values it shows); ``out`` is the directory it writes into. What each
artefact reads and writes is declared in config/papers/superposition.yaml (``artefacts:``), its only copy.
"""

from seqmix.registry import lazy_artefacts

ARTEFACTS = lazy_artefacts(
    __name__,
    {
        "analysis": ["theory"],
        "tables": ["table1", "table2", "table3", "table_e11"],
        "figures": ["figure1", "figure2", "figure3", "figure_e4_diagonalisation", "figure_e8_mobius_A"],
        "figures_reduced": ["figure_e3_mobius", "figure_e6_gradlaw", "figure_e7_conjd", "figure_e11_beta_ladder"],
    },
)
