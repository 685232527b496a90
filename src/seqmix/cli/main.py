"""``python -m seqmix <command>``: the one entry point every rule and every user command calls.

One module per command group, each with ``register(subparsers)``: ``listing`` (list, validate) and
``status`` (where, progress) for people; ``papers`` (artefact, claims, claims-summary, claims-export,
report-index), ``tracking`` (mlflow-init, mlflow-sync) and ``stages`` (train, evaluate, diagnose, collect)
for the rules.
"""

from __future__ import annotations

import argparse
import logging

from ..pipeline import runner
from . import listing, papers, stages, status, tracking


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        prog="seqmix", description="seqmix: the commands of the pipeline and of the people using it"
    )
    sub = p.add_subparsers(dest="cmd", required=True, metavar="<command>")
    for group in (listing, status, papers, tracking, stages):  # the people's commands first
        group.register(sub)
    args = p.parse_args(argv)
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
