# The index of everything the run produced: results/report.md (the HTML report comes from
# `snakemake --report results/report.html`, which `make reproduce` runs after the DAG), and the report's
# overview of every paper's verdict counts per kind, which its front page links first (config front_page).


rule report_index:
    input:
        [t for p in PAPERS for t in paper_targets(p)],
    output:
        md=R("report.md"),
        overview=report(R("claims_overview.html"), category="overview", caption="../report/artefact.rst"),
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
        caption=(
            "Every paper's claims at this scale: the verdict counts per kind, reproduction first (the only kind "
            "that is evidence about a paper); each paper's claims page lists the claims behind them."
        ),
    shell:
        "{params.cli} report-index --results {params.results:q} --papers {params.papers:q} "
        "--scale {params.scale:q} --out {output.md:q} --html {output.overview:q} 2> {log:q}"
