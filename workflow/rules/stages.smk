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


# The dispatch settings (local or submitit, resources) of the heavy steps. An input through ancient(): a
# change of cluster settings never re-runs a finished step.
rule dispatch_config:
    output:
        R(".pipeline", "dispatch.json"),
    params:
        spec=dispatch_spec(),
    log:
        R(".pipeline", "logs", "dispatch_config.log"),
    benchmark:
        R(".pipeline", "benchmarks", "dispatch_config.tsv")
    localrule: True
    run:
        from seqmix.io import write_json

        write_json(output[0], json.loads(params.spec))


rule train:
    input:
        run=R("{paper}", "run", "{experiment}.{cell}.json"),
        dispatch=ancient(rules.dispatch_config.output),
        mlflow=rules.mlflow_init.output,
    output:
        R("{paper}", "{experiment}", "cells", "{cell}.train.json"),
    log:
        R("{paper}", "logs", "train", "{experiment}.{cell}.log"),
    benchmark:
        R("{paper}", "benchmarks", "train", "{experiment}.{cell}.tsv")
    threads: lambda w: threads_of(w.paper, w.experiment)
    resources:
        **slurm_resources_of("train"),
    shell:
        "python -m seqmix train --run {input.run:q} --out {output:q} --threads {threads} "
        "--dispatch {input.dispatch:q} 2> {log:q}"


rule evaluate:
    input:
        run=R("{paper}", "run", "{experiment}.{cell}.json"),
        train=rules.train.output,
        dispatch=ancient(rules.dispatch_config.output),
    output:
        R("{paper}", "{experiment}", "cells", "{cell}.evaluate.json"),
    log:
        R("{paper}", "logs", "evaluate", "{experiment}.{cell}.log"),
    benchmark:
        R("{paper}", "benchmarks", "evaluate", "{experiment}.{cell}.tsv")
    threads: lambda w: threads_of(w.paper, w.experiment)
    resources:
        **slurm_resources_of("evaluate"),
    shell:
        "python -m seqmix evaluate --run {input.run:q} --out {output:q} --threads {threads} "
        "--dispatch {input.dispatch:q} 2> {log:q}"


# Diagnostics (Jacobians, gradient norms) per cell: of the trained model when the experiment trains,
# else of the model at initialisation (the heads paper's Exp. II measures models that are never trained).
rule diagnose:
    input:
        run=R("{paper}", "run", "{experiment}.{cell}.json"),
        mlflow=rules.mlflow_init.output,
        dispatch=ancient(rules.dispatch_config.output),
        trained=lambda w: [R(w.paper, w.experiment, "cells", f"{w.cell}.train.json")]
        if "train" in stages_of(w.paper, w.experiment) else [],
    output:
        R("{paper}", "{experiment}", "cells", "{cell}.diagnose.json"),
    log:
        R("{paper}", "logs", "diagnose", "{experiment}.{cell}.log"),
    benchmark:
        R("{paper}", "benchmarks", "diagnose", "{experiment}.{cell}.tsv")
    threads: lambda w: threads_of(w.paper, w.experiment)
    resources:
        **slurm_resources_of("diagnose"),
    shell:
        "python -m seqmix diagnose --run {input.run:q} --out {output:q} --threads {threads} "
        "--dispatch {input.dispatch:q} 2> {log:q}"


# An experiment runs its `stages` (default train -> evaluate); collect gathers its last stage's cells.
rule collect:
    input:
        lambda w: expand(R(w.paper, w.experiment, "cells", "{cell}.{stage}.json"),
                         cell=cells_of(w.paper, w.experiment), stage=stages_of(w.paper, w.experiment)[-1]),
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
