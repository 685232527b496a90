"""``python -m seqmix <command>``: the one entry point every rule and every user command calls.

One module per command group, each with ``register(subparsers)``. For people, listed first in --help, each
with examples: ``listing`` (list, validate), ``status`` (where, progress, ui) and ``measured`` (claims-summary,
archive, claims-export, claims-page). For the rules: ``papers`` (artefact, claims, report-index), ``tracking``
(mlflow-init, mlflow-sync) and ``stages`` (train, evaluate, diagnose, collect).
"""

from __future__ import annotations

import argparse
import logging

from ..pipeline import runner
from . import listing, measured, papers, stages, status, tracking

FOR_PEOPLE = (listing, status, measured)
FOR_RULES = (papers, tracking, stages)


def build_parser() -> argparse.ArgumentParser:
    """The whole command tree: the people's commands, then the rules'."""
    p = argparse.ArgumentParser(
        prog="seqmix",
        description="seqmix: the commands for people first, then (marked [rule]) the steps the Snakemake rules "
        "run on the DAG's files",
        epilog="seqmix <command> --help: what each flag does; the people's commands end with examples.",
    )
    sub = p.add_subparsers(dest="cmd", required=True, metavar="<command>")
    for group in FOR_PEOPLE:
        group.register(sub)
    for group in FOR_RULES:
        group.register(sub)
    return p


def people_commands() -> tuple[str, ...]:
    """The names of the people's commands, in --help order."""
    sub = argparse.ArgumentParser().add_subparsers()
    for group in FOR_PEOPLE:
        group.register(sub)
    return tuple(sub.choices)


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    from ..io import DiskFullError
    from ..results import CorruptResult

    try:
        args.fn(args)
    except CorruptResult as e:  # one line naming the file and how to remake it
        raise SystemExit(f"seqmix {args.cmd}: {e}") from None
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
            "seqmix-timing cmd=%s startup_s=%.3f work_s=%.3f", args.cmd, startup, runner.process_age_s() - startup
        )


if __name__ == "__main__":
    main()
