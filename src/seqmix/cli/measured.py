"""``seqmix claims-summary|archive|claims-export|claims-page``: the verdict documents people keep in the
repository under docs/measured/ (the README's counts, a long run's archive of tables and its verdicts), made
from a run, and the claims page of any claims.csv."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import near_miss, user_command


def register(sub: argparse._SubParsersAction) -> None:
    sp = user_command(
        sub,
        "claims-summary",
        cmd_claims_summary,
        "verdict counts per paper and kind, from <results>/<paper>/claims.csv (the README's counts)",
        [
            ("", "docs/measured/claims_counts.md from results/tiny/<paper>/claims.csv"),
            ("--results results/cpu --out /tmp/cpu_counts.md", "the cpu run's counts, written elsewhere"),
        ],
    )
    sp.add_argument(
        "--results",
        default="results/tiny",
        help="one scale's results, whose <paper>/claims.csv are counted (default: results/tiny), "
        "e.g. --results results/cpu",
    )
    sp.add_argument(
        "--out",
        default="docs/measured/claims_counts.md",
        help="the markdown table it writes (default: docs/measured/claims_counts.md), e.g. --out /tmp/counts.md",
    )
    sp = user_command(
        sub,
        "archive",
        cmd_archive,
        "keep the tables one paper's claims read from a run (docs/measured/<paper>/<scale>/) and judge them",
        [
            ("--results results/cpu --paper heads", "heads' cpu run into docs/measured/heads/cpu/, judged there"),
            (
                "--results results/cpu --paper b2s6 --device 'NVIDIA H100' --data 'LRA, real'",
                "saying what the run ran on and read",
            ),
            ("--results results/tiny --paper heads --out /tmp/heads-tiny", "a trial archive outside docs/"),
        ],
    )
    sp.add_argument(
        "--results",
        required=True,
        help="one scale's results (results/<scale>); the scale is its name, e.g. --results results/cpu",
    )
    sp.add_argument("--paper", required=True, help="the paper id, e.g. --paper heads")
    sp.add_argument(
        "--out",
        help="the archive directory (default: docs/measured/<paper>/<scale> under --root), e.g. --out /tmp/heads-cpu",
    )
    sp.add_argument(
        "--device",
        help="what the run ran on (default: this machine's CPU and core count), e.g. --device 'NVIDIA H100'",
    )
    sp.add_argument(
        "--data",
        help="the data the run read (default: the paper config's data: entry for the scale), e.g. --data 'LRA, real'",
    )
    sp.add_argument(
        "--root",
        default=".",
        help="the repository root whose config/papers/<paper>.yaml holds the claims (default: .), e.g. --root ~/seqmix",
    )
    sp = user_command(
        sub,
        "claims-export",
        cmd_claims_export,
        "regenerate archives' verdict docs (claims.md, claims.csv) with today's claims and engine",
        [
            ("", "every archive under docs/measured/"),
            ("--archive docs/measured/heads/cpu", "one archive"),
        ],
    )
    sp.add_argument(
        "--archive",
        nargs="*",
        help="archive directories (default: every docs/measured/<paper>/<scale>/ under --root), "
        "e.g. --archive docs/measured/heads/cpu",
    )
    sp.add_argument(
        "--root",
        default=".",
        help="the repository root whose config/papers/<paper>.yaml holds the claims (default: .), e.g. --root ~/seqmix",
    )

    sp = user_command(
        sub,
        "claims-page",
        cmd_claims_page,
        "render a claims.csv (a run's or an archive's) as the report's claims page (HTML)",
        [
            ("--csv docs/measured/b2s6/cpu/claims.csv --out /tmp/b2s6-claims.html", "an archive's verdicts as a page"),
            ("--csv results/tiny/heads/claims.csv --out /tmp/heads.html", "a run's (its checksum is checked)"),
        ],
    )
    sp.add_argument(
        "--csv",
        required=True,
        help="results/<scale>/<paper>/claims.csv or an archive's claims.csv, "
        "e.g. --csv docs/measured/heads/cpu/claims.csv",
    )
    sp.add_argument("--out", required=True, help="the HTML page it writes, e.g. --out /tmp/heads-claims.html")
    sp.add_argument(
        "--paper", help="the paper id (default: the archive's, else the csv's directory name), e.g. --paper heads"
    )
    sp.add_argument(
        "--data", help="the data line (default: the archive's or the claims run spec's), e.g. --data 'substitute'"
    )
    sp.add_argument(
        "--device", help="the device line (default: the archive's or the run summaries'), e.g. --device cpu"
    )


def cmd_claims_summary(args):
    """The verdict counts per paper and kind (with scale and commit) that the README shows."""
    from ..claims.render import write_counts

    command = f"python -m seqmix claims-summary --results {args.results} --out {args.out}"
    try:
        table = write_counts(Path(args.results), Path(args.out), command)
    except FileNotFoundError as e:
        raise SystemExit(str(e)) from None
    print(f"{args.out}: {len(table)} rows from {table['paper'].nunique()} papers")


def _paper_config(root: str, paper: str, scale: str) -> dict:
    from ..config.base import ConfigError
    from ..config.loading import discover_papers, load_paper

    path = Path(root) / "config" / "papers" / f"{paper}.yaml"
    if not path.exists():
        known = discover_papers(root)
        raise SystemExit(f"unknown paper {paper!r}: no {path} (papers: {', '.join(known)}){near_miss(paper, known)}")
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
    from ..config.artefacts import analysis_tables
    from ..results import SCALES

    results = Path(args.results)
    scale = results.name
    if scale not in SCALES:  # the scale is read from the path: results/ itself would archive as scale 'results'
        raise SystemExit(f"--results {args.results}: not one scale's results (results/<scale>, scales: {SCALES})")
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
    n = archive.judge_archive(out, claims, analysis_tables=analysis_tables(cfg))
    missing = f"; not in the run: {', '.join(meta['missing_tables'])}" if meta["missing_tables"] else ""
    print(f"{out}: {len(meta['tables'])} tables, {n} claims judged{missing}")


def cmd_claims_export(args):
    """Re-judge archives with today's claims and engine: their claims.md and claims.csv, regenerated."""
    from ..claims import archive
    from ..config.artefacts import analysis_tables

    dirs = [Path(a) for a in args.archive] if args.archive else archive.archives(Path(args.root) / "docs" / "measured")
    if not dirs:
        raise SystemExit("no archives under docs/measured/ (make one with `python -m seqmix archive`)")
    for d in dirs:
        try:
            meta = archive.read_meta(d)
        except FileNotFoundError as e:
            raise SystemExit(str(e)) from None
        cfg = _paper_config(args.root, meta["paper"], meta["scale"])
        n = archive.judge_archive(d, cfg["claims"] or [], analysis_tables=analysis_tables(cfg))
        print(f"{d}: {n} claims of {meta['paper']} at {meta['scale']}")


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
