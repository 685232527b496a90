"""A CSV table as a standalone HTML page, for Snakemake's report: it shows images, PDFs and HTML inline but
a CSV or Markdown file only as a download link. Every table artefact the report shows goes through
``write_table_html`` (pandas ``DataFrame.to_html``, cells escaped, written atomically), sortable by a click on
a column's header with the script the claims pages use (``report.sortable``); the claims have their own page
(``report.claims_page``)."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from ..io import write_text
from . import sortable

_STYLE = (
    "body{font-family:sans-serif;font-size:13px;margin:1em}"
    "table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}"
    "th{background:#f3f3f3}tr:nth-child(even) td{background:#fafafa}" + sortable.STYLE
)


def table_html(df: pd.DataFrame, title: str) -> str:
    """The page: ``title`` as heading, then every row and column of ``df`` (no index), values as text, in a
    table that sorts by the clicked column."""
    body = df.to_html(index=False, escape=True, border=0, na_rep="", classes=sortable.SORTABLE_CLASS)
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{_STYLE}</style></head>\n<body><h3>{html.escape(title)}</h3>\n{body}\n"
        f"{sortable.script_tag()}\n</body></html>\n"
    )


def write_table_html(csv_path: str | Path, html_path: str | Path, title: str) -> None:
    """Render the CSV at ``csv_path`` (read as text: the table's display strings stay as written)."""
    df = pd.read_csv(csv_path, dtype=str, keep_default_na=False)
    write_text(html_path, table_html(df, title))
