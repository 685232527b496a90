# The frontier-superposition paper (Gu & Fu, arXiv 2605.18820): E1 three supervision modes (Tables 2-3,
# Figures 2-3), E2 LN x Res ablation (Table 1), E4 S_n diagonalisation, E5 gamma_{D-1}, and the reduced
# experiments that need no training (E3 Möbius, E6 gradient law, E7 Conjecture D, E10 closed forms and bound
# checks), and E11's optional unreported variants (tied, non-orthogonal U, learnable readout scale; selectivity ladder).
# Training and evaluation use the shared train/evaluate/collect rules; diagnostics are logged per
# evaluation epoch by the training loop (eval.every) into each leaf's history.json.

SUPERPOSITION_FIGURES = ["figure1", "figure2", "figure3", "figure_e3_mobius", "figure_e4_diagonalisation",
                         "figure_e6_gradlaw", "figure_e7_conjd", "figure_e8_mobius_A", "figure_e11_beta_ladder"]


rule superposition_theory:
    input:
        run=R("superposition", "run", "paper.json"),
    output:
        theory=R("superposition", "theory", "summary.csv"),
        bounds=R("superposition", "theory", "bounds.csv"),
        mobius=R("superposition", "mobius", "summary.csv"),
        mobius_trace=R("superposition", "mobius", "trace.csv"),
        gradlaw=R("superposition", "gradlaw", "summary.csv"),
        conjd=R("superposition", "conjd", "summary.csv"),
        ladder=R("superposition", "ladder", "summary.csv"),
    params:
        out=lambda w, output: Path(output.theory).parent,
    log:
        R("superposition", "logs", "theory.log"),
    benchmark:
        R("superposition", "benchmarks", "theory.tsv")
    shell:
        "python -m seqmix artefact --run {input.run:q} --name theory --out {params.out:q} 2> {log:q}"


rule superposition_tables:
    input:
        run=R("superposition", "run", "paper.json"),
        e1=R("superposition", "e1", "summary.csv"),
        e2=R("superposition", "e2", "summary.csv"),
        e11=R("superposition", "e11", "summary.csv"),
    output:
        table1=report(R("superposition", "tables", "table1.md"), category="superposition", subcategory="tables",
                      caption="../report/superposition_table1.rst"),
        table2=report(R("superposition", "tables", "table2.md"), category="superposition", subcategory="tables",
                      caption="../report/superposition_table2.rst"),
        table3=report(R("superposition", "tables", "table3.md"), category="superposition", subcategory="tables",
                      caption="../report/superposition_table3.rst"),
        table_e11=report(R("superposition", "tables", "table_e11.md"), category="superposition", subcategory="tables",
                         caption="../report/superposition_table_e11.rst"),
        other=multiext(R("superposition", "tables", "table"), "1.tex", "1.csv", "2.tex", "2.csv", "3.tex", "3.csv",
                       "_e11.tex", "_e11.csv"),
    params:
        out=lambda w, output: Path(output.table1).parent,
    log:
        R("superposition", "logs", "tables.log"),
    benchmark:
        R("superposition", "benchmarks", "tables.tsv")
    localrule: True
    shell:
        "python -m seqmix artefact --run {input.run:q} --name tables --out {params.out:q} 2> {log:q}"


rule superposition_figures:
    input:
        run=R("superposition", "run", "paper.json"),
        e1=R("superposition", "e1", "summary.csv"),
        e4=R("superposition", "e4", "summary.csv"),
        theory=rules.superposition_theory.output,
    output:
        **{f: report(R("superposition", "figures", f"{f}.png"), category="superposition", subcategory="figures",
                     caption="../report/superposition_figures.rst") for f in SUPERPOSITION_FIGURES},
        pdf=expand(R("superposition", "figures", "{fig}.pdf"), fig=SUPERPOSITION_FIGURES),
        csv=expand(R("superposition", "figures", "{fig}.csv"), fig=SUPERPOSITION_FIGURES),
    params:
        out=lambda w, output: Path(output.pdf[0]).parent,
    log:
        R("superposition", "logs", "figures.log"),
    benchmark:
        R("superposition", "benchmarks", "figures.tsv")
    localrule: True
    shell:
        "python -m seqmix artefact --run {input.run:q} --name figures --out {params.out:q} 2> {log:q}"


PAPER_CLAIM_INPUTS["superposition"] = list(rules.superposition_theory.output)
PAPER_ARTEFACTS["superposition"] = [*rules.superposition_tables.output, *rules.superposition_figures.output]


PAPER_TARGETS["superposition"] = [R("superposition", "claims.md"), *rules.superposition_tables.output,
                                  *rules.superposition_figures.output]
