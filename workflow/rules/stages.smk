# ---------------------------------------------------------------------------------------------------
# Stages every paper shares: train -> evaluate per cell, collect per experiment, claims per paper.
# The per-paper .smk files add their tables and figures and list their targets in paper_targets().


# The run-config file is the job's input. Snakemake's `params` rerun trigger rewrites it when the
# config of exactly this cell (or paper) changes, so editing a hyperparameter re-runs only the cells
# it touches.
rule run_config:
    output:
        R("{paper}", "run", "{name}.json"),
    params:
        spec=run_spec,
    log:
        R("{paper}", "logs", "run_config", "{name}.log"),
    benchmark:
        R("{paper}", "benchmarks", "run_config", "{name}.tsv")
    localrule: True
    run:
        from seqmix.io import write_json

        write_json(output[0], json.loads(params.spec))


rule train:
    input:
        run=R("{paper}", "run", "{experiment}.{cell}.json"),
        mlflow=rules.mlflow_init.output,
    output:
        R("{paper}", "{experiment}", "cells", "{cell}.train.json"),
    log:
        R("{paper}", "logs", "train", "{experiment}.{cell}.log"),
    benchmark:
        R("{paper}", "benchmarks", "train", "{experiment}.{cell}.tsv")
    threads: lambda w: threads_of(w.paper, w.experiment)
    resources:
        # SLURM resources per scale live in the profiles; this only documents the rule's kind
        heavy=1,
    shell:
        "python -m seqmix train --run {input.run:q} --out {output:q} --threads {threads} 2> {log:q}"


rule evaluate:
    input:
        run=R("{paper}", "run", "{experiment}.{cell}.json"),
        train=rules.train.output,
    output:
        R("{paper}", "{experiment}", "cells", "{cell}.evaluate.json"),
    log:
        R("{paper}", "logs", "evaluate", "{experiment}.{cell}.log"),
    benchmark:
        R("{paper}", "benchmarks", "evaluate", "{experiment}.{cell}.tsv")
    threads: lambda w: threads_of(w.paper, w.experiment)
    resources:
        heavy=1,
    shell:
        "python -m seqmix evaluate --run {input.run:q} --out {output:q} --threads {threads} 2> {log:q}"


rule collect:
    input:
        lambda w: expand(R(w.paper, w.experiment, "cells", "{cell}.evaluate.json"),
                         cell=cells_of(w.paper, w.experiment)),
    output:
        R("{paper}", "{experiment}", "summary.csv"),
    log:
        R("{paper}", "logs", "collect", "{experiment}.log"),
    benchmark:
        R("{paper}", "benchmarks", "collect", "{experiment}.tsv")
    localrule: True
    shell:
        "python -m seqmix collect --out {output:q} {input:q} 2> {log:q}"


rule claims:
    input:
        run=R("{paper}", "run", "paper.json"),
        results=lambda w: claims_inputs(w.paper),
        artefacts=lambda w: PAPER_ARTEFACTS.get(w.paper, []),
        mlflow=rules.mlflow_init.output,
    output:
        md=report(R("{paper}", "claims.md"), category="{paper}", subcategory="claims",
                  caption="../report/claims.rst"),
        csv=R("{paper}", "claims.csv"),
    log:
        R("{paper}", "logs", "claims.log"),
    benchmark:
        R("{paper}", "benchmarks", "claims.tsv")
    localrule: True
    shell:
        "python -m seqmix claims --run {input.run:q} --out-md {output.md:q} --out-csv {output.csv:q} "
        "--artifacts {input.artefacts:q} 2> {log:q}"
