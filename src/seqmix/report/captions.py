"""Captions for Snakemake's report (standard library only: the Snakefile imports it while the DAG is parsed)."""

from __future__ import annotations

import re


def rst_text(text: str) -> str:
    """``text`` as literal reStructuredText, for the captions Snakemake's report renders: ``|x|`` would be a
    substitution reference, ``x_`` a link, ``*x*`` emphasis (each an error or a mangled caption)."""
    return re.sub(r"([\\|*`_])", r"\\\1", text)
