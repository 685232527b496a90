"""results/report.md: where every table, figure and claims file of the run is, with verdict counts."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .. import results as layout
from ..io import write_text


def write_index(results: Path, papers: list[str], scale: str, out: Path) -> None:
    lines = [f"# seqmix results (scale `{scale}`)", ""]
    for p in papers:
        lines += [f"## {p}", ""]
        claims = layout.claims_paths(results, p)[1]
        if claims.exists():
            df = pd.read_csv(claims)
            counts = df["verdict"].value_counts().to_dict()
            lines.append(
                f"- claims: [{p}/claims.md]({p}/claims.md) — " + ", ".join(f"{v}: {n}" for v, n in counts.items())
            )
        for kind in ("table", "figure"):
            d = layout.artefact_dir(results, p, kind, "")
            files = sorted(f for f in d.glob("*") if f.suffix in (".md", ".png", ".pdf", ".tex", ".csv"))
            if files:
                lines.append(f"- {kind}s: " + ", ".join(f"[{f.name}]({f.relative_to(results)})" for f in files))
        lines.append("")
    lines += ["MLflow: `mlflow ui --backend-store-uri sqlite:///results/mlflow.db` (default store).", ""]
    write_text(out, "\n".join(lines))
