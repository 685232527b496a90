"""``seqmix train|evaluate|diagnose|collect``: the per-cell stages the rules run (locally or through
submitit to SLURM, ``--dispatch``), and the collection of their summaries.

Rules pass file paths (a run-config JSON written by the ``run_config`` rule), never a config pasted into
a shell string. ``--threads`` sets torch's thread count (default 1: on 2 cores, two 1-thread processes
beat one 2-thread process by far for these small models).
"""

from __future__ import annotations

import argparse

from ..pipeline.runner import run_cell_stage, setup
from .common import command, read_input_json

# how a stage's run config is made again (the run_config rule writes it; a corrupt one is moved aside first)
RUN_REMAKE = "rerun snakemake, whose run_config rule writes it (results/<scale>/<paper>/run/<experiment>.<cell>.json)"


def register(sub: argparse._SubParsersAction) -> None:
    for name, help_ in (
        ("train", "train every leaf of a cell"),
        ("evaluate", "evaluate every leaf of a cell"),
        ("diagnose", "diagnostics (Jacobians, gradient norms) of every leaf of a cell"),
    ):
        sp = command(sub, name, cmd_stage, help_)
        sp.set_defaults(stage=name)
        sp.add_argument("--run", required=True, help="the cell's run-config JSON")
        sp.add_argument("--out", required=True, help="the cell's summary JSON (written last)")
        sp.add_argument("--dispatch", help="the dispatch settings JSON (dispatch: submitit sends the step to SLURM)")
        sp.add_argument(
            "--set",
            action="append",
            default=[],
            metavar="KEY.PATH=VALUE",
            help="override a leaf config key for this run (repeatable, e.g. --set train.lr=3e-4); leaves are written "
            "beside --out, with the run config as run.json there",
        )
    sp = command(sub, "collect", cmd_collect, "gather cell summaries into one CSV")
    sp.add_argument("--out", required=True, help="the experiment's summary CSV")
    sp.add_argument("inputs", nargs="+", help="the cells' summary JSONs")


def cmd_stage(args) -> None:
    stage = args.stage
    read_input_json(stage, args.run, "run config", RUN_REMAKE)  # a wrong path: one line, not a traceback
    if args.set:  # one-run overrides (seqmix.config.overrides): the stage runs the rewritten run config
        from ..config.base import ConfigError
        from ..config.overrides import write_overridden_run

        try:
            args.run = write_overridden_run(args.run, args.out, args.set)
        except ConfigError as e:
            raise SystemExit(f"config error: {e}") from None
    if args.dispatch:
        settings = read_input_json(stage, args.dispatch, "dispatch settings", "rerun snakemake, which writes it")
        from ..pipeline.dispatch import wants

        if wants(settings, stage):
            from ..pipeline.dispatch import DispatchError, submit_and_wait

            setup(1)
            try:
                submit_and_wait(stage, args.run, args.out, args.threads, settings)
            except DispatchError as e:
                raise SystemExit(f"seqmix {stage}: {e}") from None
            return
    run_cell_stage(stage, args.run, args.out, args.threads)


def cmd_collect(args):
    from ..io import read_json
    from ..report.tables import write_csv
    from ..results import verify_cell_marker

    setup(args.threads, torch_now=False)
    rows = []
    for path in args.inputs:
        verify_cell_marker(path)  # an edited marker would enter the summary under a fresh checksum
        cell = read_json(path)
        rows.extend(cell["rows"] if "rows" in cell else cell["leaves"])  # diagnose cells: many rows per leaf
    if not rows:
        raise SystemExit("collect: no leaves in the inputs")
    write_csv(args.out, rows, checksum=True)  # the claims verify it (seqmix.results.verify_summary)
