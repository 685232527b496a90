"""What every command group of the CLI shares: a rule's sub-command with ``--threads``, a person's
sub-command with its examples, and the 'did you mean' hint."""

from __future__ import annotations

import argparse
from typing import Any

# the line that opens a people's command's examples in its --help; each example below it starts with EXAMPLE
EXAMPLES = "examples:"
EXAMPLE = "python -m seqmix "
# what marks a rule's command in the list of commands (people rarely run them: to retry one cell, --set)
RULE = "[rule]"


def command(sub: argparse._SubParsersAction, name: str, fn, help_: str) -> argparse.ArgumentParser:
    """A sub-command ``name`` that a Snakemake rule runs as ``fn(args)``, with the ``--threads`` every job
    takes."""
    sp = sub.add_parser(name, help=f"{RULE} {help_}", description=help_)
    sp.set_defaults(fn=fn)
    sp.add_argument("--threads", type=int, default=1, help="torch threads (the rule's `threads`), e.g. --threads 2")
    return sp


def user_command(
    sub: argparse._SubParsersAction, name: str, fn, help_: str, examples: list[tuple[str, str]]
) -> argparse.ArgumentParser:
    """A sub-command ``name`` for people, running ``fn(args)``; its --help ends with ``examples``, each
    (the arguments after ``python -m seqmix <name>``, what it does), as lines a shell takes as printed."""
    lines = [EXAMPLES]
    for args, what in examples:
        lines += [f"  {EXAMPLE}{name} {args}".rstrip(), f"      {what}"]
    sp = sub.add_parser(
        name,
        help=help_,
        description=help_,
        epilog="\n".join(lines),
        formatter_class=argparse.RawDescriptionHelpFormatter,  # keeps the examples one per line
    )
    sp.set_defaults(fn=fn)
    return sp


def examples_of(parser: argparse.ArgumentParser) -> list[str]:
    """The example command lines of a people's sub-command's --help (``python -m seqmix ...``)."""
    text = (parser.epilog or "").split(EXAMPLES, 1)
    if len(text) < 2:
        return []
    return [ln.strip() for ln in text[1].splitlines() if ln.strip().startswith(EXAMPLE)]


def near_miss(name: str, known: list[str]) -> str:
    """'; did you mean 'x'?' for the closest of ``known`` to a misspelt ``name``, or ''."""
    import difflib

    near = difflib.get_close_matches(name, known, n=1)
    return f"; did you mean {near[0]!r}?" if near else ""


def read_input_json(cmd: str, path: str, what: str, remake: str) -> dict[str, Any]:
    """The JSON object of a rule's input file ``path`` (a run config, dispatch settings), or a one-line
    ``SystemExit`` naming ``what``, the file and ``remake`` (how to get it again): a wrong path or a truncated
    file ended in a traceback of FileNotFoundError or JSONDecodeError that named no file."""
    import json

    try:
        with open(path) as f:
            data = json.load(f)
    except FileNotFoundError:
        raise SystemExit(f"seqmix {cmd}: {what} {path} does not exist; {remake}") from None
    except OSError as e:
        raise SystemExit(f"seqmix {cmd}: {what} {path} cannot be read ({e.strerror or e}); {remake}") from None
    except (ValueError, UnicodeDecodeError) as e:  # JSONDecodeError is a ValueError
        raise SystemExit(f"seqmix {cmd}: {what} {path} is not valid JSON ({e}); delete it and {remake}") from None
    if not isinstance(data, dict):
        raise SystemExit(f"seqmix {cmd}: {what} {path} is not a JSON object (got {type(data).__name__}); {remake}")
    return data
