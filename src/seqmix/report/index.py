"""results/report.md: where every table, figure and claims file of the run is, with verdict counts."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .. import results as layout
from ..claims.render import COUNT_COLUMNS, count_table
from ..io import write_text


def indexed_papers(results: Path, papers: list[str]) -> list[str]:
    """``papers`` (this run's) and every other paper whose claims are under ``results`` (an earlier run's: a
    ``papers=[x]`` run must not drop them from the scale's index or overview), sorted."""
    present = [d.name for d in Path(results).iterdir() if layout.claims_paths(results, d.name)[1].exists()]
    return sorted(set(papers) | set(present))


def write_index(results: Path, papers: list[str], scale: str, out: Path) -> None:
    """The index of ``indexed_papers(results, papers)``."""
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
    lines += [
        "MLflow (the default store): `.venv/bin/mlflow ui --backend-store-uri sqlite:///results/mlflow.db "
        "--artifacts-destination results/.mlflow/artifacts`",
        "",
    ]
    write_text(out, "\n".join(lines))
