"""``seqmix mlflow-init|mlflow-sync``: the MLflow store, made once per DAG, and the replay of every
tracking buffer into it."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..pipeline.runner import setup
from .common import command


def register(sub: argparse._SubParsersAction) -> None:
    sp = command(sub, "mlflow-init", cmd_mlflow_init, "create the MLflow store and experiments once")
    sp.add_argument(
        "--uri",
        required=True,
        help="the tracking URI (a sqlite:/// path or a server; a password in it is hidden in what this writes, "
        "but give it as MLFLOW_TRACKING_PASSWORD instead)",
    )
    sp.add_argument("--results", required=True, help="the results root")
    sp.add_argument("--papers", nargs="+", required=True, help="the papers whose experiments it makes")
    sp.add_argument("--out", required=True, help="the marker JSON it writes")
    sp.add_argument("--root", default=".", help="the repository root (config/papers/<paper>.yaml: descriptions)")
    sp = command(sub, "mlflow-sync", cmd_mlflow_sync, "replay every tracking buffer under results/ into MLflow")
    sp.add_argument("--uri", required=True, help="the tracking URI (a password in it is hidden in what this writes)")
    sp.add_argument("--results", required=True, help="the results root whose buffers it replays")
    sp.add_argument("--out", required=True, help="the counts JSON it writes")
    sp.add_argument("--root", default=".", help="the repository root (config/papers/<paper>.yaml: descriptions)")


def cmd_mlflow_init(args):
    """Never fails on the tracking store: with the server down the DAG goes on and the jobs buffer. The marker
    names the URI without its password (``config.credentials.redact``)."""
    from ..config.credentials import redact
    from ..io import write_json
    from ..tracking import runs as tracking
    from ..tracking import store as tracking_store

    setup(1, torch_now=False)
    uri = tracking_store.resolve_uri(args.uri)
    ids = tracking.init_store(uri, args.papers, args.results, _descriptions(args.root, args.papers))
    write_json(args.out, {"uri": redact(uri), "reachable": ids is not None, "experiments": ids or {}})


def cmd_mlflow_sync(args):
    from ..config.credentials import redact
    from ..io import write_json
    from ..tracking import buffer as tracking_buffer
    from ..tracking import health
    from ..tracking import runs as tracking
    from ..tracking import store as tracking_store

    setup(1, torch_now=False)
    uri = tracking_store.resolve_uri(args.uri)
    why = health.sqlite_problem(uri)  # a damaged mlflow.db is named, not taken for an unreachable store
    if why:
        raise SystemExit(f"mlflow_sync: {health.damaged_message(uri, args.results, why, args.out)}")
    buffers = sorted(Path(args.results).rglob("tracking-*.jsonl"))
    from ..config.loading import discover_papers

    counts = tracking.ingest(buffers, uri, args.results, _descriptions(args.root, discover_papers(args.root)))
    if counts is None:
        why = health.sqlite_problem(uri)
        raise SystemExit(
            f"mlflow_sync: {health.damaged_message(uri, args.results, why, args.out)}"
            if why
            else f"mlflow_sync: could not reach {redact(uri)}"
        )
    records, problems = tracking_buffer.read_buffers(buffers)
    # a buffer holds one run per leaf and stage, several for the claims step (the paper's, each experiment's
    # and each sweep's)
    write_json(
        args.out,
        {"uri": redact(uri), "buffers": len(buffers), "records": len(records), **counts, "skipped_lines": problems},
    )


def _descriptions(root: str, papers: list[str]) -> dict[str, str]:
    """{paper: its experiment's description} from config/papers/<paper>.yaml (papers without one left out)."""
    from ..tracking import runs as tracking

    notes = {p: tracking.paper_description(Path(root) / "config" / "papers" / f"{p}.yaml") for p in papers}
    return {p: n for p, n in notes.items() if n}
