"""`python -m seqmix <stage> ...`: the one entry point every rule calls.

Rules pass file paths (a run-config JSON written by the ``run_config`` rule), never a config pasted into
a shell string. ``--threads`` sets torch's thread count (default 1: on 2 cores, two 1-thread processes
beat one 2-thread process by far for these small models).
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

from . import cli_list, cli_status, runner
from .runner import process_age_s, run_cell_stage
from .runner import setup as _setup


def _cell_stage(args, stage: str) -> None:
    if args.set:  # one-run overrides (seqmix.overrides): the stage runs the rewritten run config
        from .config import ConfigError
        from .overrides import write_overridden_run

        try:
            args.run = write_overridden_run(args.run, args.out, args.set)
        except ConfigError as e:
            raise SystemExit(f"config error: {e}") from None
    if args.dispatch:
        from .io import read_json

        settings = read_json(args.dispatch)
        from .dispatch import wants

        if wants(settings, stage):
            from .dispatch import DispatchError, submit_and_wait

            _setup(1)
            try:
                submit_and_wait(stage, args.run, args.out, args.threads, settings)
            except DispatchError as e:
                raise SystemExit(f"seqmix {stage}: {e}") from None
            return
    run_cell_stage(stage, args.run, args.out, args.threads)


def cmd_train(args):
    _cell_stage(args, "train")


def cmd_evaluate(args):
    _cell_stage(args, "evaluate")


def cmd_diagnose(args):
    _cell_stage(args, "diagnose")


def cmd_collect(args):
    from .io import read_json
    from .report.tables import write_csv

    _setup(args.threads, torch_now=False)
    rows = []
    for path in args.inputs:
        cell = read_json(path)
        rows.extend(cell["rows"] if "rows" in cell else cell["leaves"])  # diagnose cells: many rows per leaf
    if not rows:
        raise SystemExit("collect: no leaves in the inputs")
    write_csv(args.out, rows, checksum=True)  # the claims verify it (seqmix.results.verify_summary)


def cmd_artefact(args):
    """Run one artefact of a paper: ``seqmix.papers.<paper>.ARTEFACTS[spec["name"]](spec, out)``."""
    from .io import read_json
    from .papers import artefact_function

    _setup(args.threads, torch_now=False)
    spec = read_json(args.run)
    try:
        fn = artefact_function(spec["paper"], spec["name"])
    except LookupError as e:
        raise SystemExit(f"{args.run}: {e}") from None
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fn(spec, out)
    if args.html:  # the shown CSV as the HTML report shows it
        from .report.html import write_table_html

        write_table_html(out / args.html_from, args.html, f"{spec['paper']}: {spec['name']}")


def cmd_claims(args):
    from . import claims
    from .io import read_json

    start_ms = int(time.time() * 1000)
    _setup(args.threads, torch_now=False)
    spec = read_json(args.run)
    from .tracking import git_commit

    results = claims.evaluate_claims(spec["claims"], Path(spec["paper_dir"]), spec["scale"])
    claims.write_claims(
        results, Path(args.out_md), Path(args.out_csv), spec["paper"], spec["scale"], git_commit() or "unknown"
    )
    if args.out_html:
        from .report.html import write_table_html

        write_table_html(args.out_csv, args.out_html, f"{spec['paper']}: claims at scale {spec['scale']}")
    artefacts = [p for paths in spec["inputs"]["artefacts"].values() for p in paths]
    _log_paper_artefacts(spec, [args.out_md, args.out_csv] + artefacts, start_ms)


def cmd_claims_summary(args):
    """The verdict counts per paper and kind (with scale and commit) that the README shows."""
    from .claims import write_counts

    command = f"python -m seqmix claims-summary --results {args.results} --out {args.out}"
    try:
        table = write_counts(Path(args.results), Path(args.out), command)
    except FileNotFoundError as e:
        raise SystemExit(str(e)) from None
    print(f"{args.out}: {len(table)} rows from {table['paper'].nunique()} papers")


def cmd_claims_export(args):
    """One paper's claims table of one scale, copied into the docs with a generated-by header."""
    from .claims_render import export_claims

    command = f"python -m seqmix claims-export --results {args.results} --paper {args.paper} --out {args.out}"
    try:
        n = export_claims(Path(args.results), args.paper, Path(args.out), command)
    except FileNotFoundError as e:
        raise SystemExit(str(e)) from None
    print(f"{args.out}: {n} claims of {args.paper}")


def _log_paper_artefacts(spec: dict, files: list[str], start_ms: int) -> None:
    """One paper-level MLflow run holding the tables, figures and claims as artifacts."""
    from . import tracking
    from .io import config_hash

    tags = tracking.run_tags(
        rule="claims", paper=spec["paper"], scale=spec["scale"], config_hash=config_hash(spec["claims"])
    )
    tracking.log_paper_artefacts(spec, files, tags, start_ms)


def cmd_mlflow_init(args):
    """Never fails on the tracking store: with the server down the DAG goes on and the jobs buffer."""
    from . import tracking
    from .io import write_json

    _setup(1, torch_now=False)
    uri = tracking.resolve_uri(args.uri)
    ids = tracking.init_store(uri, args.papers, args.results)
    write_json(args.out, {"uri": uri, "reachable": ids is not None, "experiments": ids or {}})


def cmd_mlflow_sync(args):
    from . import tracking
    from .io import write_json

    _setup(1, torch_now=False)
    uri = tracking.resolve_uri(args.uri)
    buffers = sorted(Path(args.results).rglob("tracking-*.jsonl"))
    counts = tracking.ingest(buffers, uri, args.results)
    if counts is None:
        raise SystemExit(f"mlflow_sync: could not reach {uri}")
    _, problems = tracking.read_buffers(buffers)
    write_json(args.out, {"uri": uri, "buffers": len(buffers), **counts, "skipped_lines": problems})


def cmd_report_index(args):
    from .report.index import write_index

    write_index(Path(args.results), args.papers, args.scale, Path(args.out))


def cmd_validate(args):
    """Validate config/config.yaml and the papers' configs (what the Snakefile does before any job)."""
    from .config import ConfigError, load_all, load_yaml

    cfg = load_yaml(args.config)
    if args.scale:
        cfg["scale"] = args.scale
    try:
        load_all(cfg, args.root, args.config)
    except ConfigError as e:
        raise SystemExit(f"config error: {e}") from None
    print("config ok")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="seqmix", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)

    def add(name, fn, help_):
        sp = sub.add_parser(name, help=help_)
        sp.set_defaults(fn=fn)
        sp.add_argument("--threads", type=int, default=1, help="torch threads (the rule's `threads`)")
        return sp

    for name, fn, help_ in (
        ("train", cmd_train, "train every leaf of a cell"),
        ("evaluate", cmd_evaluate, "evaluate every leaf of a cell"),
        ("diagnose", cmd_diagnose, "diagnostics (Jacobians, gradient norms) of every leaf of a cell"),
    ):
        sp = add(name, fn, help_)
        sp.add_argument("--run", required=True, help="the cell's run-config JSON")
        sp.add_argument("--out", required=True, help="the cell's summary JSON (written last)")
        sp.add_argument("--dispatch", help="the dispatch settings JSON (dispatch: submitit sends the step to SLURM)")
        sp.add_argument(
            "--set",
            action="append",
            default=[],
            metavar="KEY.PATH=VALUE",
            help="override a leaf config key for this run (repeatable, e.g. train.lr=3e-4); leaves are written "
            "beside --out, with the run config as run.json there",
        )
    sp = add("collect", cmd_collect, "gather cell summaries into one CSV")
    sp.add_argument("--out", required=True)
    sp.add_argument("inputs", nargs="+")
    sp = add("artefact", cmd_artefact, "render one table, figure or analysis of a paper")
    sp.add_argument("--run", required=True, help="the artefact's run spec JSON (it names the paper and artefact)")
    sp.add_argument("--out", required=True, help="the directory it writes into")
    sp.add_argument("--html", help="also render the written CSV --html-from as this HTML page (for the report)")
    sp.add_argument("--html-from", help="the written CSV (a file name in --out) that --html renders")
    sp = add("claims", cmd_claims, "check the paper's claims against our results")
    sp.add_argument("--run", required=True, help="the claims step's run spec JSON")
    sp.add_argument("--out-md", required=True)
    sp.add_argument("--out-csv", required=True)
    sp.add_argument("--out-html", help="the claims table as an HTML page (for the report)")
    sp = add(
        "claims-summary", cmd_claims_summary, "verdict counts per paper and kind, from <results>/<paper>/claims.csv"
    )
    sp.add_argument("--results", default="results/tiny", help="one scale's results (results/<scale>)")
    sp.add_argument("--out", default="docs/measured/claims_counts.md")
    sp = add("claims-export", cmd_claims_export, "copy one paper's claims.md of one scale into the docs (generated)")
    sp.add_argument("--results", required=True, help="one scale's results (results/<scale>)")
    sp.add_argument("--paper", required=True)
    sp.add_argument("--out", required=True, help="e.g. docs/measured/<paper>-claims-<scale>.md")
    sp = add("mlflow-init", cmd_mlflow_init, "create the MLflow store and experiments once")
    sp.add_argument("--uri", required=True)
    sp.add_argument("--results", required=True)
    sp.add_argument("--papers", nargs="+", required=True)
    sp.add_argument("--out", required=True)
    sp = add("mlflow-sync", cmd_mlflow_sync, "replay every tracking buffer under results/ into MLflow")
    sp.add_argument("--uri", required=True)
    sp.add_argument("--results", required=True)
    sp.add_argument("--out", required=True)
    sp = add("report-index", cmd_report_index, "write results/report.md, the index of what was produced")
    sp.add_argument("--results", required=True)
    sp.add_argument("--papers", nargs="+", required=True)
    sp.add_argument("--scale", required=True)
    sp.add_argument("--out", required=True)
    cli_list.register(sub)
    cli_status.register(sub)
    sp = add("validate", cmd_validate, "validate the configs")
    sp.add_argument("--config", default="config/config.yaml")
    sp.add_argument("--root", default=".")
    sp.add_argument("--scale", choices=("tiny", "cpu", "paper"))

    args = p.parse_args(argv)
    from .io import DiskFullError

    try:
        args.fn(args)
    except DiskFullError as e:
        # one line naming the file and the space left: on stderr (the rule's log) and on stdout (Snakemake's
        # console), since a log on the full disk may not take it
        message = f"seqmix {args.cmd}: {e}"
        print(message, flush=True)
        raise SystemExit(message) from None
    startup = runner.startup_s()
    if startup is not None:
        # one line per job that benchmarks/dag_timing.py reads from the rule logs
        logging.getLogger("seqmix.timing").info(
            "seqmix-timing cmd=%s startup_s=%.3f work_s=%.3f", args.cmd, startup, process_age_s() - startup
        )


if __name__ == "__main__":
    main()
