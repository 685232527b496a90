"""Alias of ``report.plots`` for the papers that still import ``report.figures`` (papers/heads.py until it
moves to the package layout); new code imports ``seqmix.report.plots``."""
from .plots import band, plt, save, save_figure  # noqa: F401
