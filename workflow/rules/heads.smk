# The heads paper ("How Many Heads Make an SSM?"): Experiment I (Figure 3 left), Table 1 and the
# closed forms of spec §4. Training and evaluation use the shared train/evaluate/collect rules.


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


PAPER_CLAIM_INPUTS["heads"] = rules.heads_theory.output
PAPER_ARTEFACTS["heads"] = [*rules.heads_table1.output, *rules.heads_figure3_left.output]


PAPER_TARGETS["heads"] = [R("heads", "claims.md"), *rules.heads_table1.output, *rules.heads_figure3_left.output]
