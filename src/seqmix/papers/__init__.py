"""One package per paper, ``seqmix.papers.<paper>``, whose ``ARTEFACTS`` maps the names declared in the
``artefacts:`` block of config/papers/<paper>.yaml to ``fn(spec, out) -> None`` (spec: seqmix.artefacts).

A paper's package may also live outside this source tree: a ``seqmix/papers/`` directory on the Python
path that is an overlay (no ``seqmix/__init__.py`` beside it, so not another copy of the library) is part of
this package. That is how a paper kept out of tree, or a test's throwaway paper, is found.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path

for _entry in sys.path:
    _dir = Path(_entry or ".") / "seqmix" / "papers"
    if _dir.is_dir() and not (_dir.parent / "__init__.py").exists():
        __path__.append(str(_dir))


def artefact_function(paper: str, name: str) -> Callable[[dict, Path], None]:
    """``seqmix.papers.<paper>.ARTEFACTS[name]``; LookupError naming what exists when either is missing."""
    try:
        module = importlib.import_module(f"{__name__}.{paper}")
    except ModuleNotFoundError as e:
        raise LookupError(f"no package {__name__}.{paper} for paper {paper!r} ({e})") from None
    try:
        table = module.ARTEFACTS
    except AttributeError:
        raise LookupError(f"{module.__name__} defines no ARTEFACTS (the map of its declared artefacts)") from None
    if name not in table:
        raise LookupError(
            f"unknown artefact {name!r} of paper {paper}; {module.__name__}.ARTEFACTS has: "
            f"{', '.join(table) or 'nothing'}"
        )
    return table[name]
