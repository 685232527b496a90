"""``seqmix artefact|claims|claims-page|claims-summary|archive|claims-export|report-index``: a paper's tables,
figures and analyses, its verdicts and their report page, the archive of a long run's tables, and the documents
made from them."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from ..pipeline.runner import setup
from .common import command


def register(sub: argparse._SubParsersAction) -> None:
    sp = command(sub, "artefact", cmd_artefact, "render one table, figure or analysis of a paper")
    sp.add_argument("--run", required=True, help="the artefact's run spec JSON (it names the paper and artefact)")
    sp.add_argument("--out", required=True, help="the directory it writes into")
    sp.add_argument("--html", help="also render the written CSV --html-from as this HTML page (for the report)")
    sp.add_argument("--html-from", help="the written CSV (a file name in --out) that --html renders")
    sp = command(sub, "claims", cmd_claims, "check the paper's claims against our results")
    sp.add_argument("--run", required=True, help="the claims step's run spec JSON")
    sp.add_argument("--out-md", required=True, help="the verdicts as markdown")
    sp.add_argument("--out-csv", required=True, help="the verdicts as CSV")
    sp.add_argument("--out-html", help="the claims page (HTML, for the report)")
    sp = command(
        sub,
        "claims-page",
        cmd_claims_page,
        "render a claims.csv (a run's or an archive's) as the report's claims page, e.g. "
        "--csv docs/measured/b2s6/cpu/claims.csv --out b2s6-claims.html",
    )
    sp.add_argument("--csv", required=True, help="results/<scale>/<paper>/claims.csv or an archive's claims.csv")
    sp.add_argument("--out", required=True, help="the HTML page it writes")
    sp.add_argument("--paper", help="the paper id (default: the archive's, else the csv's directory name)")
    sp.add_argument("--data", help="the data line (default: the archive's or the claims run spec's)")
    sp.add_argument("--device", help="the device line (default: the archive's or the run summaries')")
    sp = command(
        sub,
        "claims-summary",
        cmd_claims_summary,
        "verdict counts per paper and kind, from <results>/<paper>/claims.csv",
    )
    sp.add_argument("--results", default="results/tiny", help="one scale's results (results/<scale>)")
    sp.add_argument("--out", default="docs/measured/claims_counts.md", help="the markdown table it writes")
    sp = command(
        sub,
        "archive",
        cmd_archive,
        "keep the tables one paper's claims read from a run (docs/measured/<paper>/<scale>/) and judge them",
    )
    sp.add_argument("--results", required=True, help="one scale's results (results/<scale>); the scale is its name")
    sp.add_argument("--paper", required=True, help="the paper id")
    sp.add_argument("--out", help="the archive directory (default: docs/measured/<paper>/<scale>)")
    sp.add_argument("--device", help="what the run ran on (default: this machine's CPU and core count)")
    sp.add_argument("--data", help="the data the run read (default: the paper config's data: entry for the scale)")
    sp.add_argument("--root", default=".", help="the repository root (config/papers/<paper>.yaml)")
    sp = command(
        sub,
        "claims-export",
        cmd_claims_export,
        "regenerate archives' verdict docs (claims.md, claims.csv) with today's claims and engine",
    )
    sp.add_argument(
        "--archive", nargs="*", help="archive directories (default: every docs/measured/<paper>/<scale>/ archive)"
    )
    sp.add_argument("--root", default=".", help="the repository root (config/papers/<paper>.yaml)")
    sp = command(
        sub, "report-index", cmd_report_index, "write results/<scale>/report.md, the index of what was produced"
    )
    sp.add_argument("--results", required=True, help="the results root")
    sp.add_argument("--papers", nargs="+", required=True, help="the papers of the run")
    sp.add_argument("--scale", required=True, help="the scale of the run")
    sp.add_argument("--out", required=True, help="the index it writes")
    sp.add_argument("--html", help="also the overview page of every indexed paper's verdict counts per kind")


def cmd_artefact(args):
    """Run one artefact of a paper: ``seqmix.papers.<paper>.ARTEFACTS[spec["name"]](spec, out)``."""
    from ..io import read_json
    from ..registry import artefact_function

    setup(args.threads, torch_now=False)
    spec = read_json(args.run)
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
    from ..claims import engine as claims
    from ..io import read_json

    start_ms = int(time.time() * 1000)
    setup(args.threads, torch_now=False)
    spec = read_json(args.run)
    from ..tracking.runs import git_commit

    results = claims.evaluate_claims(spec["claims"], Path(spec["paper_dir"]), spec["scale"])
    from ..claims.render import devices

    data, device = spec.get("data") or "", devices(spec["inputs"]["summaries"])
    claims.write_claims(
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


def cmd_claims_summary(args):
    """The verdict counts per paper and kind (with scale and commit) that the README shows."""
    from ..claims.engine import write_counts

    command = f"python -m seqmix claims-summary --results {args.results} --out {args.out}"
    try:
        table = write_counts(Path(args.results), Path(args.out), command)
    except FileNotFoundError as e:
        raise SystemExit(str(e)) from None
    print(f"{args.out}: {len(table)} rows from {table['paper'].nunique()} papers")


def cmd_claims_page(args):
    """The claims page of any claims.csv: paper, data and device from the archive.json beside it (an
    archive's csv has no checksum: the archive test checks it against the engine), else from the claims
    run spec beside it (``<paper>/run/claims.json``) after verifying the csv's checksum."""
    from ..claims.archive import META, read_meta
    from ..claims.render import NO_DEVICE, devices
    from ..io import read_json
    from ..report.claims_page import write_claims_page

    csv = Path(args.csv)
    if not csv.exists():
        raise SystemExit(f"{csv}: no such claims.csv")
    run_spec = csv.parent / "run" / "claims.json"
    archived = (csv.parent / META).exists()
    if archived:
        meta = read_meta(csv.parent)
        paper, data, device = meta["paper"], meta["data"], meta["device"]
    elif run_spec.exists():
        spec = read_json(run_spec)
        paper, data, device = spec["paper"], spec.get("data") or "", devices(spec["inputs"]["summaries"])
    else:
        paper, data, device = csv.parent.name, "", NO_DEVICE
    write_claims_page(csv, args.out, args.paper or paper, args.data or data, args.device or device, not archived)
    print(f"{args.out}: claims page of {args.paper or paper} from {csv}")


def _paper_config(root: str, paper: str, scale: str) -> dict:
    from ..config.base import ConfigError
    from ..config.loading import load_paper

    path = Path(root) / "config" / "papers" / f"{paper}.yaml"
    if not path.exists():
        raise SystemExit(f"{path}: no such paper config (papers: config/papers/*.yaml)")
    try:
        return load_paper(path, scale)
    except ConfigError as e:
        raise SystemExit(f"config error: {e}") from None


def _this_machine() -> str:
    import os
    import platform

    return f"CPU ({platform.machine()}, {os.cpu_count()} cores)"


def cmd_archive(args):
    """Archive the tables a run's claims read and write the verdict docs judged on them."""
    from ..claims import archive

    results = Path(args.results)
    scale = results.name
    out = Path(args.out or Path(args.root) / "docs" / "measured" / args.paper / scale)
    cfg = _paper_config(args.root, args.paper, scale)
    claims = cfg["claims"] or []
    data = args.data or (cfg.get("data") or {}).get(scale)
    if not data:
        raise SystemExit(
            f"say what data the run read: --data '...' (config/papers/{args.paper}.yaml has no data.{scale})"
        )
    command = f"python -m seqmix archive --results {args.results} --paper {args.paper}"
    try:
        meta = archive.make_archive(
            results / args.paper,
            claims,
            out,
            paper=args.paper,
            scale=scale,
            device=args.device or _this_machine(),
            data=data,
            command=command,
        )
    except FileNotFoundError as e:
        raise SystemExit(str(e)) from None
    n = archive.judge_archive(out, claims)
    missing = f"; not in the run: {', '.join(meta['missing_tables'])}" if meta["missing_tables"] else ""
    print(f"{out}: {len(meta['tables'])} tables, {n} claims judged{missing}")


def cmd_claims_export(args):
    """Re-judge archives with today's claims and engine: their claims.md and claims.csv, regenerated."""
    from ..claims import archive

    dirs = [Path(a) for a in args.archive] if args.archive else archive.archives(Path(args.root) / "docs" / "measured")
    if not dirs:
        raise SystemExit("no archives under docs/measured/ (make one with `python -m seqmix archive`)")
    for d in dirs:
        try:
            meta = archive.read_meta(d)
        except FileNotFoundError as e:
            raise SystemExit(str(e)) from None
        n = archive.judge_archive(d, _paper_config(args.root, meta["paper"], meta["scale"])["claims"] or [])
        print(f"{d}: {n} claims of {meta['paper']} at {meta['scale']}")


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

    write_index(Path(args.results), args.papers, args.scale, Path(args.out))
    if args.html:
        from ..report.claims_page import write_overview

        write_overview(Path(args.results), indexed_papers(Path(args.results), args.papers), args.scale, args.html)
