"""What every command group of the CLI shares: its sub-command with ``--threads``, and the job setup."""

from __future__ import annotations

import argparse


def command(sub: argparse._SubParsersAction, name: str, fn, help_: str) -> argparse.ArgumentParser:
    """A sub-command ``name`` running ``fn(args)``, with the ``--threads`` every job takes."""
    sp = sub.add_parser(name, help=help_, description=help_)
    sp.set_defaults(fn=fn)
    sp.add_argument("--threads", type=int, default=1, help="torch threads (the rule's `threads`)")
    return sp


def near_miss(name: str, known: list[str]) -> str:
    """'; did you mean 'x'?' for the closest of ``known`` to a misspelt ``name``, or ''."""
    import difflib

    near = difflib.get_close_matches(name, known, n=1)
    return f"; did you mean {near[0]!r}?" if near else ""
