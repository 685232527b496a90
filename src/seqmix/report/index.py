"""results/<scale>/report.md: where every table, figure and claims file of the run is, with verdict counts,
and how to browse the run's MLflow store."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .. import results as layout
from ..claims.render import COUNT_COLUMNS, count_table
from ..io import write_text
from ..tracking.store import is_live, ui_command
from .captions import rst_text


def indexed_papers(results: Path, papers: list[str]) -> list[str]:
    """``papers`` (this run's) and every other paper whose claims are under ``results`` (an earlier run's: a
    ``papers=[x]`` run must not drop them from the scale's index or overview), sorted."""
    present = [d.name for d in Path(results).iterdir() if layout.claims_paths(results, d.name)[1].exists()]
    return sorted(set(papers) | set(present))


def mlflow_line(tracking_uri: str, results_root: Path) -> str:
    """How to browse the runs of ``tracking_uri`` (config tracking.uri): the ``mlflow ui`` command of an
    embedded store (``ui_command``, as ``seqmix where`` prints it), a server's address, or that tracking is off."""
    if tracking_uri == "none":
        return "MLflow: tracking is off (tracking.uri: none); nothing of this run is in MLflow."
    if is_live(tracking_uri):
        return f"MLflow: the runs are on the tracking server {tracking_uri} (open it in a browser)."
    db = Path(tracking_uri[len("sqlite:///") :])
    return f"MLflow (the embedded store {db}): `{ui_command(results_root, db)}`"


def write_index(
    results: Path, papers: list[str], scale: str, out: Path, tracking_uri: str = "sqlite:///results/mlflow.db"
) -> None:
    """The index of ``indexed_papers(results, papers)``; ``results`` is the scale's root (results/<scale>),
    whose parent, the results root, holds the MLflow artifacts."""
    papers = indexed_papers(results, papers)
    lines = [f"# seqmix results (scale `{scale}`)", ""]
    for p in papers:
        lines += [f"## {p}", ""]
        claims = layout.claims_paths(results, p)[1]
        if claims.exists():
            layout.verify_claims(claims)  # a truncated claims.csv would be counted as fewer claims
            lines.append(f"- claims: [{p}/claims.md]({p}/claims.md), by kind (reproduction first) and source:")
            for row in count_table(pd.read_csv(claims, keep_default_na=False)).to_dict("records"):
                counts = ", ".join(f"{c}: {row[c]}" for c in COUNT_COLUMNS if row[c])
                lines.append(f"  - {row['kind']} ({row['source']}): {counts or 'none'}")
        for kind in ("table", "figure"):
            d = layout.artefact_dir(results, p, kind, "")
            files = sorted(f for f in d.glob("*") if f.suffix in (".md", ".png", ".pdf", ".tex", ".csv"))
            if files:
                lines.append(f"- {kind}s: " + ", ".join(f"[{f.name}]({f.relative_to(results)})" for f in files))
        lines.append("")
    lines += [mlflow_line(tracking_uri, Path(results).parent), ""]
    write_text(out, "\n".join(lines))


def write_front_page_counts(table: pd.DataFrame, out: Path) -> None:
    """``table`` (``claims_page.overview_table``: paper, kind, the counts) as the CSV report.html's front page
    shows (a csv-table in workflow/report/workflow.rst); its text cells escaped, since docutils parses every
    cell of a csv-table as reStructuredText."""
    df = table.copy()
    for col in ("paper", "kind"):
        df[col] = df[col].astype(str).map(rst_text)
    write_text(out, df.to_csv(index=False))
