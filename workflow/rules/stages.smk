# ---------------------------------------------------------------------------------------------------
# Stages every paper shares: train -> evaluate per cell, collect per experiment, claims per paper.
# artefacts.smk adds each paper's tables, figures and analyses from its YAML.


# The run-config file is the job's input. Snakemake's `params` rerun trigger rewrites it when the
# config of exactly this cell changes, so editing a hyperparameter re-runs only the cells it touches.
rule run_config:
    output:
        str(layout.cell_run_path(RESULTS, "{paper}", "{experiment}", "{cell}")),
    log:
        R("{paper}", "logs", "run_config", "{experiment}.{cell}.log"),
    benchmark:
        R("{paper}", "benchmarks", "run_config", "{experiment}.{cell}.tsv")
    localrule: True
    params:
        spec=cell_run_spec,
    run:
        from seqmix.io import write_json

        write_json(output[0], json.loads(params.spec))


# An artefact's run spec: only what it reads (its inputs, the resolved configs of its experiments, its
# slice of `analysis:`, the reported values of its claims). The same params rerun trigger: editing one
# artefact's settings re-runs that artefact alone.
rule artefact_run_config:
    output:
        str(layout.artefact_run_path(RESULTS, "{paper}", "{artefact}")),
    log:
        R("{paper}", "logs", "run_config", "artefact.{artefact}.log"),
    benchmark:
        R("{paper}", "benchmarks", "run_config", "artefact.{artefact}.tsv")
    localrule: True
    params:
        spec=artefact_run_spec,
    run:
        from seqmix.io import write_json

        write_json(output[0], json.loads(params.spec))


# The claims step's run spec: the claims and what they read. Editing one claim re-runs only the claims step.
rule claims_run_config:
    output:
        str(layout.claims_run_path(RESULTS, "{paper}")),
    log:
        R("{paper}", "logs", "run_config", "claims.log"),
    benchmark:
        R("{paper}", "benchmarks", "run_config", "claims.tsv")
    localrule: True
    params:
        spec=claims_run_spec,
    run:
        from seqmix.io import write_json

        write_json(output[0], json.loads(params.spec))


# The dispatch settings (local or submitit, resources) of the heavy steps. An input through ancient(): a
# change of cluster settings never re-runs a finished step.
rule dispatch_config:
    output:
        R(".pipeline", "dispatch.json"),
    log:
        R(".pipeline", "logs", "dispatch_config.log"),
    benchmark:
        R(".pipeline", "benchmarks", "dispatch_config.tsv")
    localrule: True
    params:
        spec=dispatch_spec(),
    run:
        from seqmix.io import write_json

        write_json(output[0], json.loads(params.spec))


rule train:
    input:
        run=str(layout.cell_run_path(RESULTS, "{paper}", "{experiment}", "{cell}")),
        dispatch=ancient(rules.dispatch_config.output),
        mlflow=rules.mlflow_init.output,
    output:
        str(layout.cell_marker(RESULTS, "{paper}", "{experiment}", "{cell}", "train")),
    log:
        R("{paper}", "logs", "train", "{experiment}.{cell}.log"),
    benchmark:
        R("{paper}", "benchmarks", "train", "{experiment}.{cell}.tsv")
    conda:
        "../../envs/seqmix.yaml"
    threads: get_threads
    resources:
        **slurm_resources_of("train"),
    params:
        cli=get_seqmix_cli,
    shell:
        "{params.cli} train --run {input.run:q} --out {output:q} --threads {threads} "
        "--dispatch {input.dispatch:q} 2> {log:q}"


rule evaluate:
    input:
        run=str(layout.cell_run_path(RESULTS, "{paper}", "{experiment}", "{cell}")),
        train=rules.train.output,
        dispatch=ancient(rules.dispatch_config.output),
    output:
        str(layout.cell_marker(RESULTS, "{paper}", "{experiment}", "{cell}", "evaluate")),
    log:
        R("{paper}", "logs", "evaluate", "{experiment}.{cell}.log"),
    benchmark:
        R("{paper}", "benchmarks", "evaluate", "{experiment}.{cell}.tsv")
    conda:
        "../../envs/seqmix.yaml"
    threads: get_threads
    resources:
        **slurm_resources_of("evaluate"),
    params:
        cli=get_seqmix_cli,
    shell:
        "{params.cli} evaluate --run {input.run:q} --out {output:q} --threads {threads} "
        "--dispatch {input.dispatch:q} 2> {log:q}"


# Diagnostics (Jacobians, gradient norms) per cell: of the trained model when the experiment trains,
# else of the model at initialisation (the heads paper's Exp. II measures models that are never trained).
rule diagnose:
    input:
        run=str(layout.cell_run_path(RESULTS, "{paper}", "{experiment}", "{cell}")),
        mlflow=rules.mlflow_init.output,
        dispatch=ancient(rules.dispatch_config.output),
        trained=get_trained_marker,
    output:
        str(layout.cell_marker(RESULTS, "{paper}", "{experiment}", "{cell}", "diagnose")),
    log:
        R("{paper}", "logs", "diagnose", "{experiment}.{cell}.log"),
    benchmark:
        R("{paper}", "benchmarks", "diagnose", "{experiment}.{cell}.tsv")
    conda:
        "../../envs/seqmix.yaml"
    threads: get_threads
    resources:
        **slurm_resources_of("diagnose"),
    params:
        cli=get_seqmix_cli,
    shell:
        "{params.cli} diagnose --run {input.run:q} --out {output:q} --threads {threads} "
        "--dispatch {input.dispatch:q} 2> {log:q}"


# An experiment runs its `stages` (default train -> evaluate); collect gathers its last stage's cells.
rule collect:
    input:
        get_collect_inputs,
    output:
        str(layout.summary_path(RESULTS, "{paper}", "{experiment}")),
    log:
        R("{paper}", "logs", "collect", "{experiment}.log"),
    benchmark:
        R("{paper}", "benchmarks", "collect", "{experiment}.tsv")
    localrule: True
    conda:
        "../../envs/seqmix.yaml"
    params:
        cli=get_seqmix_cli,
    shell:
        "{params.cli} collect --out {output:q} {input:q} 2> {log:q}"


rule claims:
    input:
        run=rules.claims_run_config.output,
        results=get_claims_inputs,
        mlflow=rules.mlflow_init.output,
    output:
        md=str(layout.claims_paths(RESULTS, "{paper}")[0]),
        csv=str(layout.claims_paths(RESULTS, "{paper}")[1]),
        # the report shows HTML inline; a .md or .csv only as a download link
        html=report(
            str(layout.claims_html_path(RESULTS, "{paper}")),
            category=get_paper_category,
            subcategory="claims",
            labels=get_claims_labels,
            caption="../report/artefact.rst",
        ),
    log:
        R("{paper}", "logs", "claims.log"),
    benchmark:
        R("{paper}", "benchmarks", "claims.tsv")
    localrule: True
    conda:
        "../../envs/seqmix.yaml"
    params:
        cli=get_seqmix_cli,
        caption=get_claims_caption,
    shell:
        "{params.cli} claims --run {input.run:q} --out-md {output.md:q} --out-csv {output.csv:q} "
        "--out-html {output.html:q} 2> {log:q}"
