# The heads paper ("How Many Heads Make an SSM?"): Table 1, Figures 1-4 (Exp. I: Figure 3, trained
# students; Exp. II: Figure 4, models at initialisation), the closed forms of spec §4 and the theory checks
# T1-T6. Training, evaluation, diagnostics and collection use the shared rules of stages.smk.


rule heads_theory:
    input:
        run=R("heads", "run", "paper.json"),
    output:
        R("heads", "theory", "summary.csv"),
    params:
        out=lambda w, output: Path(output[0]).parent,
    log:
        R("heads", "logs", "theory.log"),
    benchmark:
        R("heads", "benchmarks", "theory.tsv")
    localrule: True
    shell:
        "python -m seqmix artefact --run {input.run:q} --name theory --out {params.out:q} 2> {log:q}"


rule heads_table1:
    input:
        run=R("heads", "run", "paper.json"),
    output:
        md=report(R("heads", "tables", "table1.md"), category="heads", subcategory="tables",
                  caption="../report/heads_table1.rst"),
        tex=R("heads", "tables", "table1.tex"),
        csv=R("heads", "tables", "table1.csv"),
    params:
        out=lambda w, output: Path(output[0]).parent,
    log:
        R("heads", "logs", "table1.log"),
    benchmark:
        R("heads", "benchmarks", "table1.tsv")
    localrule: True
    shell:
        "python -m seqmix artefact --run {input.run:q} --name table1 --out {params.out:q} 2> {log:q}"


rule heads_figure3_left:
    input:
        run=R("heads", "run", "paper.json"),
        exp1=R("heads", "exp1", "summary.csv"),
        theory=rules.heads_theory.output,
    output:
        png=report(R("heads", "figures", "figure3_left.png"), category="heads", subcategory="figures",
                   caption="../report/heads_figure3_left.rst"),
        pdf=R("heads", "figures", "figure3_left.pdf"),
        csv=R("heads", "figures", "figure3_left.csv"),
    params:
        out=lambda w, output: Path(output[0]).parent,
    log:
        R("heads", "logs", "figure3_left.log"),
    benchmark:
        R("heads", "benchmarks", "figure3_left.tsv")
    localrule: True
    shell:
        "python -m seqmix artefact --run {input.run:q} --name figure3_left --out {params.out:q} 2> {log:q}"


rule heads_theory_checks:
    input:
        run=R("heads", "run", "paper.json"),
    output:
        csv=R("heads", "theory_checks", "summary.csv"),
        json=R("heads", "theory_checks", "checks.json"),
    params:
        out=lambda w, output: Path(output[0]).parent,
    log:
        R("heads", "logs", "theory_checks.log"),
    benchmark:
        R("heads", "benchmarks", "theory_checks.tsv")
    localrule: True
    shell:
        "python -m seqmix artefact --run {input.run:q} --name theory_checks --out {params.out:q} 2> {log:q}"


rule heads_figure1:
    input:
        run=R("heads", "run", "paper.json"),
    output:
        png=report(R("heads", "figures", "figure1.png"), category="heads", subcategory="figures",
                   caption="../report/heads_figure1.rst"),
        pdf=R("heads", "figures", "figure1.pdf"),
        csv=R("heads", "figures", "figure1.csv"),
    params:
        out=lambda w, output: Path(output[0]).parent,
    log:
        R("heads", "logs", "figure1.log"),
    benchmark:
        R("heads", "benchmarks", "figure1.tsv")
    localrule: True
    shell:
        "python -m seqmix artefact --run {input.run:q} --name figure1 --out {params.out:q} 2> {log:q}"


rule heads_figure2:
    input:
        run=R("heads", "run", "paper.json"),
    output:
        png=report(R("heads", "figures", "figure2.png"), category="heads", subcategory="figures",
                   caption="../report/heads_figure2.rst"),
        pdf=R("heads", "figures", "figure2.pdf"),
    params:
        out=lambda w, output: Path(output[0]).parent,
    log:
        R("heads", "logs", "figure2.log"),
    benchmark:
        R("heads", "benchmarks", "figure2.tsv")
    localrule: True
    shell:
        "python -m seqmix artefact --run {input.run:q} --name figure2 --out {params.out:q} 2> {log:q}"


# Figure 3 right reads the trained k = 4 students (H = 4 and H = 9, every seed) from their leaf directories:
# it waits for the evaluation of every k4 cell of Exp. I.
rule heads_figure3_right:
    input:
        run=R("heads", "run", "paper.json"),
        exp1=lambda w: [R("heads", "exp1", "cells", f"{c}.evaluate.json") for c in cells_of("heads", "exp1")
                        if c.startswith("k4-")],
    output:
        png=report(R("heads", "figures", "figure3_right.png"), category="heads", subcategory="figures",
                   caption="../report/heads_figure3_right.rst"),
        pdf=R("heads", "figures", "figure3_right.pdf"),
        csv=R("heads", "figures", "figure3_right.csv"),
        spectrum=R("heads", "spectrum", "summary.csv"),
    params:
        out=lambda w, output: Path(output[0]).parent,
    log:
        R("heads", "logs", "figure3_right.log"),
    benchmark:
        R("heads", "benchmarks", "figure3_right.tsv")
    localrule: True
    shell:
        "python -m seqmix artefact --run {input.run:q} --name figure3_right --out {params.out:q} 2> {log:q}"


rule heads_figure4:
    input:
        run=R("heads", "run", "paper.json"),
        exp2=R("heads", "exp2", "summary.csv"),
    output:
        png=report(R("heads", "figures", "figure4.png"), category="heads", subcategory="figures",
                   caption="../report/heads_figure4.rst"),
        pdf=R("heads", "figures", "figure4.pdf"),
        csv=R("heads", "figures", "figure4.csv"),
    params:
        out=lambda w, output: Path(output[0]).parent,
    log:
        R("heads", "logs", "figure4.log"),
    benchmark:
        R("heads", "benchmarks", "figure4.tsv")
    localrule: True
    shell:
        "python -m seqmix artefact --run {input.run:q} --name figure4 --out {params.out:q} 2> {log:q}"


HEADS_FIGURES = [*rules.heads_figure1.output, *rules.heads_figure2.output, *rules.heads_figure3_left.output,
                 *rules.heads_figure3_right.output[:3], *rules.heads_figure4.output]
PAPER_CLAIM_INPUTS["heads"] = [*rules.heads_theory.output, rules.heads_theory_checks.output.csv,
                               rules.heads_figure3_right.output.spectrum]
PAPER_ARTEFACTS["heads"] = [*rules.heads_table1.output, *HEADS_FIGURES, rules.heads_theory_checks.output.json]


PAPER_TARGETS["heads"] = [R("heads", "claims.md"), *rules.heads_table1.output, *HEADS_FIGURES,
                          *rules.heads_theory_checks.output]
