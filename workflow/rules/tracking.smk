# MLflow: the store and the experiments are created once, before any job (SQLite is corrupted by
# parallel first writers). No rule takes the database as an input: its mtime changes with every write.
# A tracking outage never fails it: with the server down it warns, writes "reachable": false and the jobs
# keep their buffers for mlflow_sync.
# It creates the experiments of every paper file, not only the selected ones: the selection is no param, so
# running another `papers` selection re-makes nothing (a re-made store would re-run every finished stage).


rule mlflow_init:
    output:
        str(Path(RESULTS_ROOT, ".mlflow", "init.json")),
    log:
        R(".pipeline", "logs", "mlflow_init.log"),
    benchmark:
        R(".pipeline", "benchmarks", "mlflow_init.tsv")
    localrule: True
    conda:
        "../../envs/seqmix.yaml"
    params:
        cli=get_seqmix_cli,
        uri=config["tracking"]["uri"],
        papers=discover_papers(workflow.basedir),
        results=get_results_root,
    shell:
        "{params.cli} mlflow-init --uri {params.uri:q} --results {params.results:q} "
        "--papers {params.papers:q} --out {output:q} 2> {log:q}"


# Replays every tracking buffer under results/ into MLflow (after an outage of the tracking server).
# Idempotent: one run per buffer (complete runs skipped, runs of killed jobs rewritten, parents linked);
# bad buffer lines are skipped and listed in the output's skipped_lines. Not part of `all`:
#   snakemake --workflow-profile profiles/local --forcerun mlflow_sync -- mlflow_sync
rule mlflow_sync:
    output:
        str(Path(RESULTS_ROOT, ".mlflow", "sync.json")),
    log:
        R(".pipeline", "logs", "mlflow_sync.log"),
    benchmark:
        R(".pipeline", "benchmarks", "mlflow_sync.tsv")
    localrule: True
    conda:
        "../../envs/seqmix.yaml"
    params:
        cli=get_seqmix_cli,
        uri=config["tracking"]["uri"],
        results=get_results_root,
    shell:
        "{params.cli} mlflow-sync --uri {params.uri:q} --results {params.results:q} --out {output:q} 2> {log:q}"
