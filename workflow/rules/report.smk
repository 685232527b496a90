# The index of everything the run produced: results/<scale>/report.md (the HTML report comes from
# `snakemake --report results/<scale>/report.html`, which `make reproduce` runs after the DAG and `make report`
# runs alone), and every paper's verdict counts per kind: claims_overview.html, a report item the front page
# links first (config front_page), and claims_counts.csv, the table the front page shows
# (workflow/report/workflow.rst). report.md ends with how to browse the runs of config tracking.uri.


rule report_index:
    input:
        [t for p in PAPERS for t in paper_targets(p)],
    output:
        md=R("report.md"),
        overview=report(
            R("claims_overview.html"),
            category=OVERVIEW_CATEGORY,
            subcategory="verdict counts",
            caption="../report/artefact.rst",
            labels=report_labels("Verdict counts per paper and kind", "claims_overview.html", "report_index"),
        ),
        counts=R("claims_counts.csv"),
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
        names=json.dumps(CATEGORY, sort_keys=True),  # the papers as the report's categories name them
        results=get_output_dir,  # the scale's root
        scale=SCALE,
        tracking=config["tracking"]["uri"],  # report.md says how to browse this store
        caption=(
            "Every paper's claims at this scale: the verdict counts per kind, reproduction first (the only kind "
            "that is evidence about a paper); each paper's claims page lists the claims behind them."
        ),
    shell:
        "{params.cli} report-index --results {params.results:q} --papers {params.papers:q} "
        "--scale {params.scale:q} --names {params.names:q} --tracking-uri {params.tracking:q} "
        "--out {output.md:q} --html {output.overview:q} --counts {output.counts:q} 2> {log:q}"
