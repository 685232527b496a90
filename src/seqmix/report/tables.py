"""One table writer for every table of every paper: a pandas DataFrame of display strings -> Markdown
(``DataFrame.to_markdown``, pipe format), LaTeX (booktabs) and CSV, each written atomically.

Static tables (a paper's own table copied into its YAML: columns, rows of strings, which columns hold LaTeX
math) and computed tables (an artefact's DataFrame) go through the same ``render_table``. ``write_csv`` is the
plain rows-of-dicts -> CSV writer for data files (not display tables).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from ..io import write_text

# LaTeX for the characters our captions and cells use: the specials are escaped, the Unicode signs our
# tables print (±, ≥, ...) become math so a pdflatex build without unicode input encoding still compiles.
_TEX = str.maketrans(
    {
        "\\": r"\textbackslash{}",
        "&": r"\&",
        "%": r"\%",
        "_": r"\_",
        "#": r"\#",
        "$": r"\$",
        "{": r"\{",
        "}": r"\}",
        "~": r"\textasciitilde{}",
        "^": r"\^{}",
        "±": r"$\pm$",
        "≥": r"$\geq$",
        "≤": r"$\leq$",
        "≪": r"$\ll$",
        "≈": r"$\approx$",
        "×": r"$\times$",
        "−": "-",
        "—": "--",
        "–": "-",
        "✓": r"$\checkmark$",
        "→": r"$\to$",
        "α": r"$\alpha$",
        "β": r"$\beta$",
        "γ": r"$\gamma$",
    }
)


def tex_escape(text: str) -> str:
    """Text (not math) as LaTeX: specials escaped, the Unicode signs of our tables as math."""
    return str(text).translate(_TEX)


def write_csv(path: str | Path, rows: list[dict], checksum: bool = False) -> None:
    """Rows of dicts -> CSV; the header is the union of the keys in order of first appearance, a missing key
    is an empty cell. Values are written with ``str`` (floats round-trip exactly). ``checksum``: also the
    sidecar ``<name>.sha256`` a reader verifies (``seqmix.results.verify_summary``)."""
    cols: list[str] = []
    for r in rows:
        cols.extend(c for c in r if c not in cols)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    write_text(path, buf.getvalue(), checksum=checksum)


def _check_frame(df: pd.DataFrame, math_columns: Iterable[str]) -> set[str]:
    unknown = set(math_columns) - set(df.columns)
    if unknown:
        raise ValueError(f"math_columns {sorted(unknown)} are not columns of the table ({list(df.columns)})")
    if not df.columns.is_unique:
        raise ValueError(f"table columns must be unique, got {list(df.columns)}")
    return set(math_columns)


def _markdown(df: pd.DataFrame, caption: str, math: set[str]) -> str:
    def cell(col: str, value) -> str:
        s = str(value).replace("|", "\\|")
        return f"${s}$" if col in math else s

    shown = pd.DataFrame({c: [cell(c, v) for v in df[c]] for c in df.columns}, columns=df.columns)
    body = shown.to_markdown(index=False, tablefmt="pipe", disable_numparse=True)
    return (f"{caption}\n\n" if caption else "") + body + "\n"


def _latex(df: pd.DataFrame, caption: str, math: set[str]) -> str:
    lines = ["\\begin{table}[t]", "\\centering"]
    if caption:
        lines.append(f"\\caption{{{tex_escape(caption)}}}")
    lines += [
        "\\begin{tabular}{" + "l" * len(df.columns) + "}",
        "\\toprule",
        " & ".join(tex_escape(c) for c in df.columns) + " \\\\",
        "\\midrule",
    ]
    for row in df.itertuples(index=False):
        lines.append(" & ".join(f"${v}$" if c in math else tex_escape(v) for c, v in zip(df.columns, row)) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}", "\\end{table}"]
    return "\n".join(lines) + "\n"


def render_table(df: pd.DataFrame, caption: str = "", math_columns: Iterable[str] = ()) -> dict[str, str]:
    """{'md', 'tex', 'csv'} text of a table of display strings.

    ``math_columns`` hold LaTeX math: wrapped in ``$...$`` in Markdown and LaTeX, raw in CSV. Cells are
    shown as given (numbers are not re-parsed: "1.00" stays "1.00")."""
    math = _check_frame(df, math_columns)
    df = df.astype(str)
    return {
        "md": _markdown(df, caption, math),
        "tex": _latex(df, caption, math),
        "csv": df.to_csv(index=False, lineterminator="\n"),
    }


def write_table(df: pd.DataFrame, stem: str | Path, caption: str = "", math_columns: Iterable[str] = ()) -> list[Path]:
    """Write ``stem``.md, ``stem``.tex and ``stem``.csv atomically; returns the paths."""
    stem = Path(stem)
    out = []
    for ext, text in render_table(df, caption, math_columns).items():
        path = stem.with_name(f"{stem.name}.{ext}")
        write_text(path, text)
        out.append(path)
    return out


def static_frame(table: dict) -> pd.DataFrame:
    """The DataFrame of a static table stored as data (``columns``, ``rows`` of strings); a row with the
    wrong number of cells is refused with its index."""
    cols, rows = table["columns"], table["rows"]
    for i, r in enumerate(rows):
        if len(r) != len(cols):
            raise ValueError(f"row {i} has {len(r)} cells, expected {len(cols)}")
    return pd.DataFrame([list(map(str, r)) for r in rows], columns=cols)


def render_static_table(table: dict) -> dict[str, str]:
    """{'md', 'tex', 'csv'} text of a static table (see ``static_frame``; ``math_columns`` optional)."""
    return render_table(static_frame(table), table.get("caption", ""), table.get("math_columns", []))


def write_static_table(table: dict, stem: str | Path) -> list[Path]:
    return write_table(static_frame(table), stem, table.get("caption", ""), table.get("math_columns", []))
