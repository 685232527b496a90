"""Tables: rows of dicts -> CSV; static tables (strings from a paper) -> Markdown, LaTeX (booktabs), CSV."""
from __future__ import annotations

import csv
import io
from pathlib import Path

from ..io import write_text


def write_csv(path: str | Path, rows: list[dict]) -> None:
    cols: list[str] = []
    for r in rows:
        cols.extend(c for c in r if c not in cols)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    write_text(path, buf.getvalue())


def _md_cell(s: str, math: bool) -> str:
    s = s.replace("|", "\\|")
    return f"${s}$" if math else s


def _tex_escape(s: str) -> str:
    return s.replace("&", "\\&").replace("%", "\\%").replace("_", "\\_").replace("#", "\\#")


def render_static_table(table: dict) -> dict[str, str]:
    """{'md', 'tex', 'csv'} text of a table stored as data: columns, rows of strings, and which columns
    hold LaTeX math (written verbatim inside $...$ in Markdown and LaTeX, raw in CSV)."""
    cols, rows = table["columns"], table["rows"]
    for i, r in enumerate(rows):
        if len(r) != len(cols):
            raise ValueError(f"row {i} has {len(r)} cells, expected {len(cols)}")
    math = set(table.get("math_columns", []))
    md = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    md += ["| " + " | ".join(_md_cell(c, h in math) for h, c in zip(cols, r)) + " |" for r in rows]
    caption = table.get("caption", "")
    md_text = (f"{caption}\n\n" if caption else "") + "\n".join(md) + "\n"
    tex = ["\\begin{table}[t]", "\\centering", f"\\caption{{{_tex_escape(caption)}}}",
           "\\begin{tabular}{" + "l" * len(cols) + "}", "\\toprule",
           " & ".join(_tex_escape(c) for c in cols) + " \\\\", "\\midrule"]
    tex += [" & ".join(f"${c}$" if h in math else _tex_escape(c) for h, c in zip(cols, r)) + " \\\\" for r in rows]
    tex += ["\\bottomrule", "\\end{tabular}", "\\end{table}"]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    w.writerows(rows)
    return {"md": md_text, "tex": "\n".join(tex) + "\n", "csv": buf.getvalue()}


def write_static_table(table: dict, stem: str | Path) -> list[Path]:
    stem = Path(stem)
    out = []
    for ext, text in render_static_table(table).items():
        path = stem.with_suffix(f".{ext}")
        write_text(path, text)
        out.append(path)
    return out
