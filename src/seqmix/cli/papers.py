"""``seqmix artefact|claims|report-index``: the rules' steps that make a paper's tables, figures and analyses,
its verdicts, and the index of a scale's results (the verdict documents people make: ``cli.measured``)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from ..pipeline.runner import setup
from .common import command, read_input_json

RUN_REMAKE = "rerun snakemake, which writes it (results/<scale>/<paper>/run/)"


def register(sub: argparse._SubParsersAction) -> None:
    sp = command(sub, "artefact", cmd_artefact, "render one table, figure or analysis of a paper")
    sp.add_argument("--run", required=True, help="the artefact's run spec JSON (it names the paper and artefact)")
    sp.add_argument(
        "--out", required=True, help="the directory it writes into (the kind's: tables/, figures/ or the analysis' own)"
    )
    sp.add_argument("--html", help="also render the CSV --html-from as this HTML page (the report shows it)")
    sp.add_argument("--html-from", help="the CSV, a file name in --out that the artefact wrote, which --html renders")
    sp = command(sub, "claims", cmd_claims, "check the paper's claims against our results")
    sp.add_argument(
        "--run", required=True, help="the claims step's run spec JSON (paper, scale, claims, its input tables)"
    )
    sp.add_argument("--out-md", required=True, help="the verdicts as markdown (claims.md)")
    sp.add_argument("--out-csv", required=True, help="the verdicts as CSV (claims.csv, with its checksum beside it)")
    sp.add_argument("--out-html", help="the claims page (HTML, for the report: grouped by kind and artefact)")
    sp = command(
        sub, "report-index", cmd_report_index, "write results/<scale>/report.md, the index of what was produced"
    )
    sp.add_argument(
        "--results", required=True, help="the scale's results (results/<scale>), whose papers' claims it counts"
    )
    sp.add_argument(
        "--papers",
        nargs="+",
        required=True,
        help="the papers of the run (papers with claims under --results are listed too)",
    )
    sp.add_argument("--scale", required=True, help="the scale of the run, named in the index's title")
    sp.add_argument("--out", required=True, help="the index it writes (results/<scale>/report.md)")
    sp.add_argument(
        "--html", help="also the overview page of every indexed paper's verdict counts per kind (claims_overview.html)"
    )
    sp.add_argument("--counts", help="with --html, also the overview's counts as the CSV the report's front page shows")
    sp.add_argument(
        "--names",
        help="JSON {paper: name}: the overview's names of the papers (the report's categories), "
        'e.g. --names \'{"heads": "How Many Heads Make an SSM?"}\'',
    )
    sp.add_argument(
        "--tracking-uri",
        default="sqlite:///results/mlflow.db",
        help="config tracking.uri, for the index's line on browsing the runs (default: the embedded store)",
    )


def cmd_artefact(args):
    """Run one artefact of a paper: ``seqmix.papers.<paper>.ARTEFACTS[spec["name"]](spec, out)``."""
    from ..registry import artefact_function

    spec = read_input_json("artefact", args.run, "run spec", RUN_REMAKE)
    setup(args.threads, torch_now=False)
    try:
        fn = artefact_function(spec["paper"], spec["name"])
    except LookupError as e:
        raise SystemExit(f"{args.run}: {e}") from None
    _verify_inputs(spec)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fn(spec, out)
    if args.html:  # the shown CSV as the HTML report shows it
        from ..report.html import write_table_html

        write_table_html(out / args.html_from, args.html, f"{spec['paper']}: {spec['name']}")


def _verify_inputs(spec: dict) -> None:
    """The summaries an artefact reads (experiments', and analyses' that it reads), verified before it runs:
    an edited one would enter its outputs under a fresh checksum (results.CorruptResult names it)."""
    from ..results import needs_checksum, verify_summary

    inputs = spec.get("inputs") or {}
    paths = list((inputs.get("summaries") or {}).values())
    paths += [p for ps in (inputs.get("artefacts") or {}).values() for p in ps]
    for path in paths:
        if needs_checksum(path) and Path(path).exists():
            verify_summary(path)


def cmd_claims(args):
    from ..claims.engine import evaluate_claims

    start_ms = int(time.time() * 1000)
    spec = read_input_json("claims", args.run, "run spec", RUN_REMAKE)
    setup(args.threads, torch_now=False)
    from ..tracking.runs import git_commit

    results = evaluate_claims(spec["claims"], Path(spec["paper_dir"]), spec["scale"], spec.get("analysis_tables") or ())
    from ..claims.render import devices, write_claims

    data, device = spec.get("data") or "", devices(spec["inputs"]["summaries"])
    write_claims(
        results,
        Path(args.out_md),
        Path(args.out_csv),
        spec["paper"],
        spec["scale"],
        git_commit() or "unknown",
        data=data,
        device=device,
    )
    if args.out_html:
        from ..report.claims_page import write_claims_page

        write_claims_page(args.out_csv, args.out_html, spec["paper"], data=data, device=device)
    artefacts = [p for paths in spec["inputs"]["artefacts"].values() for p in paths]
    _log_paper_artefacts(spec, [args.out_md, args.out_csv] + artefacts, start_ms)


def _log_paper_artefacts(spec: dict, files: list[str], start_ms: int) -> None:
    """One paper-level MLflow run holding the tables, figures and claims as artifacts."""
    from ..io import config_hash
    from ..tracking import runs as tracking

    tags = tracking.run_tags(
        rule="claims", paper=spec["paper"], scale=spec["scale"], config_hash=config_hash(spec["claims"])
    )
    note = tracking.paper_description(Path("config") / "papers" / f"{spec['paper']}.yaml")  # the workflow root's
    tracking.log_paper_artefacts(spec, files, tags, start_ms, note)


def cmd_report_index(args):
    from ..report.index import indexed_papers, write_index

    write_index(Path(args.results), args.papers, args.scale, Path(args.out), args.tracking_uri)
    if args.html:
        import json

        from ..report.claims_page import write_overview
        from ..report.index import write_front_page_counts

        papers = indexed_papers(Path(args.results), args.papers)
        names = json.loads(args.names) if args.names else None
        table = write_overview(Path(args.results), papers, args.scale, args.html, names)
        if args.counts:
            write_front_page_counts(table, Path(args.counts))
