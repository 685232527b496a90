"""`seqmix where`, `seqmix progress` and `seqmix ui`: what a run has left behind, read from the files its stages wrote
(``seqmix.results`` owns the layout), for people watching or browsing a run."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..results import SCALES
from .common import near_miss, user_command
from .listing import markdown

RESULTS_HELP = "the results root, holding one directory per scale and mlflow.db (default: results)"


def register(sub: argparse._SubParsersAction) -> None:
    sp = user_command(
        sub,
        "where",
        cmd_where,
        "print where a run's outputs are: per scale and paper its claims, tables, figures, report; the MLflow store",
        [
            ("", "every scale under results/ (what make reproduce prints last)"),
            ("--results results --scale cpu", "the cpu scale's outputs only"),
        ],
    )
    sp.add_argument("--results", default="results", help=f"{RESULTS_HELP}, e.g. --results /scratch/seqmix-results")
    sp.add_argument(
        "--scale", choices=SCALES, help="one scale (default: every scale under --results), e.g. --scale cpu"
    )
    sp = user_command(
        sub,
        "progress",
        cmd_progress,
        "what has trained/evaluated so far, leaf by leaf, with chosen metrics (also while the DAG runs)",
        [
            ("--paper heads", "every leaf of heads at the tiny scale: evaluated, trained, its step, or not started"),
            (
                "--scale cpu --paper superposition --experiment e1 --metrics cos_z1,cos_z2,cos_z3",
                "one experiment at the cpu scale, with three metrics of its evaluated leaves",
            ),
            ("--results /scratch/seqmix-results --paper rotations", "a run under another results root"),
        ],
    )
    sp.add_argument("--results", default="results", help=f"{RESULTS_HELP}, e.g. --results /scratch/seqmix-results")
    sp.add_argument("--scale", choices=SCALES, default="tiny", help="the run's scale (default: tiny), e.g. --scale cpu")
    sp.add_argument(
        "--paper", required=True, help="the paper id (python -m seqmix list papers names them), e.g. --paper heads"
    )
    sp.add_argument("--experiment", help="one experiment of the paper (default: all), e.g. --experiment exp1")
    sp.add_argument(
        "--metrics",
        help="comma-separated names of metrics the evaluated leaves wrote, shown per leaf, "
        "e.g. --metrics cos_z1,cos_z2",
    )
    sp = user_command(
        sub,
        "ui",
        cmd_ui,
        "open the MLflow UI on the results' store (the venv's mlflow, artifacts included)",
        [
            ("", "serve results/mlflow.db on http://127.0.0.1:5000"),
            ("--port 5001 --print", "print the mlflow ui command for port 5001 instead of running it"),
            ("--results /scratch/seqmix-results", "the store of another results root"),
        ],
    )
    sp.add_argument("--results", default="results", help=f"{RESULTS_HELP}, e.g. --results /scratch/seqmix-results")
    sp.add_argument("--port", type=int, default=5000, help="the port it serves on (default: 5000), e.g. --port 5001")
    sp.add_argument("--print", action="store_true", help="print the command instead of running it")


def cmd_where(args):
    """Print where the tables, figures, claims and report of each scale's run are, and the MLflow database
    the scales share (results/<scale>/<paper>/...; seqmix.results)."""
    from .. import results as layout

    results = Path(args.results)
    roots = [layout.scale_root(results, args.scale)] if args.scale else layout.scale_roots(results)
    if not any(r.is_dir() for r in roots) and not (results / "mlflow.db").exists():
        # a bare header reads like a run that made nothing
        which = f"scale {args.scale}" if args.scale else f"any scale ({', '.join(SCALES)})"
        raise SystemExit(f"no results of {which} under {results}: run the DAG first (make reproduce)")
    print("\nseqmix: outputs")
    for root in (r for r in roots if r.is_dir()):
        print(f"  scale {root.name}:")
        for d in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
            claims_md = layout.claims_paths(root, d.name)[0]
            if not claims_md.exists():
                continue
            print(f"    {d.name}:")
            print(f"      claims   {claims_md}")
            for kind, ext in (("table", "*.md"), ("figure", "*.png")):
                files = sorted(layout.artefact_dir(root, d.name, kind, "").glob(ext))
                if files:
                    print(f"      {kind + 's':8s} " + "  ".join(str(f) for f in files))
        for name, what in (("report.html", "report  "), ("report.md", "index   ")):
            if (root / name).exists():
                print(f"    {what} {root / name}")
    if (results / "mlflow.db").exists():
        print(f"  mlflow   {results / 'mlflow.db'} (every scale; runs tagged scale=...)")
        from ..tracking.store import ui_command

        print(f"  browse runs: {ui_command(results)}")


def cmd_ui(args):
    """``mlflow ui`` on the embedded store with its artifacts destination, as `seqmix where` prints it."""
    import os
    import shlex

    from ..tracking.store import ui_command

    results = Path(args.results)
    if not (results / "mlflow.db").exists():
        raise SystemExit(f"{results / 'mlflow.db'} does not exist: run the DAG first (make reproduce)")
    argv = [*shlex.split(ui_command(results)), "--port", str(args.port)]
    if args.print:
        print(shlex.join(argv))
        return
    # MLflow 3 opens an experiment on its GenAI view unless the address asks for runs
    print(f"seqmix: open http://127.0.0.1:{args.port}/#/experiments?workflowType=machine_learning", file=sys.stderr)
    # its background job runners (seven processes, for GenAI jobs seqmix never submits) slowed a 2-core box's
    # pages to minutes in our screenshots; off unless the user set the variable
    os.environ.setdefault("MLFLOW_SERVER_ENABLE_JOB_EXECUTION", "false")
    os.execv(argv[0], argv)


def _leaf_status(leaf: dict, metrics: list[str]) -> tuple[str, list[str], set[str]]:
    """(status, metric cells, the metric names it has) of one leaf from the files its stages wrote."""
    import torch

    from ..io import read_json
    from ..results import is_done, leaf_marker

    out, h = Path(leaf["out_dir"]), leaf["hash"]
    steps = (leaf["config"].get("train") or {}).get("steps")
    if is_done(leaf_marker(out, "evaluate"), h):
        got = read_json(leaf_marker(out, "evaluate"))["metrics"]
        cells = [f"{got[m]:.4g}" if isinstance(got.get(m), (int, float)) else "—" for m in metrics]
        return "evaluated", cells, set(got)
    if is_done(leaf_marker(out, "train"), h):
        return "trained", [""] * len(metrics), set()
    if (out / "checkpoint.pt").exists():
        try:
            ck = torch.load(out / "checkpoint.pt", weights_only=True, map_location="cpu")
        except Exception:  # a damaged file raises many kinds; training discards it at resume
            return "damaged checkpoint", [""] * len(metrics), set()
        status = f"training: step {ck['step']}/{steps}" if ck.get("config_hash") == h else "stale checkpoint"
        return status, [""] * len(metrics), set()
    return "not started", [""] * len(metrics), set()


def _check_names(results: Path, paper: str, experiment: str | None) -> None:
    """A misspelt paper or experiment is named as such (with what exists), not taken for a run not yet made. A
    paper is known by its config (config/papers/<paper>.yaml) or by its results at any scale under ``results``."""
    from ..config.base import load_yaml
    from ..config.loading import discover_papers
    from ..results import paper_dir, scale_roots

    papers = discover_papers(".")
    if paper not in papers and not any(paper_dir(r, paper).is_dir() for r in scale_roots(results)):
        raise SystemExit(f"unknown paper {paper!r} (papers: {', '.join(papers)}){near_miss(paper, papers)}")
    if experiment is not None and paper in papers:
        experiments = sorted(load_yaml(Path("config") / "papers" / f"{paper}.yaml").get("experiments") or {})
        if experiment not in experiments:
            raise SystemExit(
                f"unknown experiment {experiment!r} of {paper} (experiments: {', '.join(experiments)})"
                f"{near_miss(experiment, experiments)}"
            )


def cmd_progress(args):
    """A markdown table of every leaf of a paper (or one experiment): evaluated, trained, in progress (the
    step of its last checkpoint) or not started, with chosen metrics of the evaluated ones. For watching a
    long run, and for reading the leaves that finished when the whole DAG has not."""
    from ..io import read_json
    from ..results import cell_run_paths, paper_dir, scale_root

    root = scale_root(args.results, args.scale)
    _check_names(Path(args.results), args.paper, args.experiment)
    cells = cell_run_paths(root, args.paper, args.experiment)
    if not cells:
        where = paper_dir(root, args.paper) / "run"
        raise SystemExit(f"no run configs under {where} (has the DAG written them yet?)")
    metrics = [m for m in (args.metrics or "").split(",") if m]
    rows, seen = [], set()
    for cell in cells:
        for leaf in read_json(cell)["leaves"]:
            status, values, names = _leaf_status(leaf, metrics)
            seen |= names
            rows.append({"leaf": leaf["id"], "status": status, **dict(zip(metrics, values))})
    unknown = [m for m in metrics if m not in seen]
    if seen and unknown:  # no evaluated leaf has it: a typo, not a value still to come
        known = sorted(seen)
        raise SystemExit(
            f"unknown metric {unknown[0]!r}: the evaluated leaves have {', '.join(known)}{near_miss(unknown[0], known)}"
        )
    print(markdown(rows))
