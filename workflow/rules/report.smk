# The index of everything the run produced: results/report.md (the HTML report comes from
# `snakemake --report results/report.html`, which `make reproduce` runs after the DAG).


rule report_index:
    input:
        [t for p in PAPERS for t in paper_targets(p)],
    output:
        R("report.md"),
    log:
        R(".pipeline", "logs", "report_index.log"),
    benchmark:
        R(".pipeline", "benchmarks", "report_index.tsv")
    localrule: True
    conda:
        "../../envs/seqmix.yaml"
    params:
        cli=get_seqmix_cli,
        papers=list(PAPERS),
        results=get_output_dir,  # the scale's root
        scale=SCALE,
    shell:
        "{params.cli} report-index --results {params.results:q} --papers {params.papers:q} "
        "--scale {params.scale:q} --out {output:q} 2> {log:q}"
