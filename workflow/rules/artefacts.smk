# Every paper's tables, figures and analyses, one named rule each (<paper>_<name>), built from the
# `artefacts:` block of config/papers/<paper>.yaml: what it reads (experiment summaries, the final-stage
# markers of chosen cells, other artefacts' outputs), what it writes, what the report shows (one file: a
# figure's PNG, or a table's CSV rendered as <paper>/report/<name>.html, since the report shows HTML
# inline and a CSV only as a download) and its caption (a figure's says what the paper prints for it and the
# scale, seeds and data its numbers come from: seqmix.config.figure_captions).
# Each artefact's run spec (run/artefacts/<name>.json) holds only what it reads, so editing one artefact's
# settings re-runs that artefact (and what reads its outputs) alone.


# In the report: the paper's category (its short title), the kind's subcategory, and one row per artefact
# labelled by its title (the lead of its caption), the file behind it and its rule (seqmix.report.captions).
_PLURAL = {"table": "tables", "figure": "figures", "analysis": "analyses"}


def _report_item(path, paper, name, decl, data):
    labels = report_labels(artefact_title(name, decl), data, f"{paper}_{name}")
    return report(
        path,
        caption="../report/artefact.rst",
        category=CATEGORY[paper],
        subcategory=_PLURAL[decl["kind"]],
        labels=labels,
    )


for _paper, _cfg in PAPERS.items():
    for _name, _decl in (_cfg.get("artefacts") or {}).items():
        _outs = [str(p) for p in A.outputs(RESULTS, _paper, _cfg, _name)]
        _html = A.report_html(RESULTS, _paper, _cfg, _name)
        _shown = set() if _html else set(A.report_files(_decl))
        # the file the report shows, or the CSV its HTML renders, as a path under results/<scale>/<paper>/
        _dir = layout.artefact_dir(RESULTS, _paper, _decl["kind"], _name).relative_to(layout.paper_dir(RESULTS, _paper))
        _data = (_dir / A.report_files(_decl)[0]).as_posix() if A.report_files(_decl) else ""
        _html_args = (
            f"--html-from {shlex.quote(A.report_files(_decl)[0])} --html {shlex.quote(str(_html))}" if _html else ""
        )

        rule:
            name:
                f"{_paper}_{_name}"
            input:
                **A.input_files(RESULTS, _paper, _cfg, CELLS[_paper], _name),
                run=str(layout.artefact_run_path(RESULTS, _paper, _name)),
            output:
                [_report_item(o, _paper, _name, _decl, _data) if Path(o).name in _shown else o for o in _outs],
                html=[_report_item(str(_html), _paper, _name, _decl, _data)] if _html else [],
            log:
                R(_paper, "logs", "artefacts", f"{_name}.log"),
            benchmark:
                R(_paper, "benchmarks", "artefacts", f"{_name}.tsv")
            localrule: True
            conda:
                "../../envs/seqmix.yaml"
            params:
                cli=get_seqmix_cli,
                out=get_output_dir,  # the kind dir (writes are plain file names)
                caption=rst_text(shown_caption(_cfg, _name, SCALE)),
                html=_html_args,  # the shown CSV -> the HTML the report shows
            shell:
                "{params.cli} artefact --run {input.run:q} --out {params.out:q} {params.html} 2> {log:q}"
