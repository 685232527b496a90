"""A paper's claims page as report.html shows it (``<paper>/claims.html``), and the scale's overview of
every paper's verdict counts (``<scale>/claims_overview.html``), both rendered from claims.csv files alone,
so a committed archive's page can be made again (``python -m seqmix claims-page``).

The page reads top-down as a reviewer asks: which paper, scale, commit, data and device (once, in the
header); how many claims hold per kind (``count_table``, reproduction first); then every claim grouped by
kind (``KINDS`` order) and artefact, its verdict and our value beside the paper's in the first columns, one
line of statement, and the rest (check, detail, noise model, source, secondary note) in a collapsible
``<details>``. Tables sort by clicking a header (``report.sortable``: one script for every page of the
report). Every text from the csv goes through ``html.escape``."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from .. import results as layout
from ..claims.checks import HOLDS, KIND_OF_SOURCE, KINDS, NO_SEEDS, NOT_EXPECTED, VERDICTS
from ..claims.render import (
    BY_CONSTRUCTION,
    COUNT_COLUMNS,
    KIND_TEXT,
    NO_DEVICE,
    NOISE_TEXT,
    UNDECLARED,
    count_table,
    primary,
)
from ..io import write_text
from . import sortable

STATEMENT_CHARS = 110  # one line of the claim column at the report's width; longer ones end in '…'
NOT_COUNTED = "not counted"
# the badge's words and colour class per verdict; the words are the csv's except the long 'not expected'
BADGES = {v: (v, re.sub(r"\W+", "-", v)) for v in VERDICTS}
BADGES[NOT_EXPECTED] = ("not expected", "not-expected")
COLUMNS = ("verdict", "our value ± interval", "paper value", "seeds", "claim")
TEXT_COLUMNS = ("id", "kind", "source", "by_construction", "secondary", "artefact", "statement", "paper_value", "law",
                "our_value", "interval", "noise", "check", "seeds", "seeds_used", "verdict", "detail")  # fmt: skip

_STYLE = (
    "body{font-family:sans-serif;font-size:13px;margin:1em;max-width:80em;color:#222}"
    "h1{font-size:20px;margin:0 0 .3em}h2{font-size:17px;margin:1.4em 0 .2em}"
    "h3{font-size:14px;margin:1em 0 .3em}.meta{margin:.15em 0}"
    ".explain,.kind-text{color:#555;max-width:60em}table{border-collapse:collapse;margin:.3em 0}"
    "th,td{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}"
    "th{background:#f3f3f3;white-space:nowrap}td.num{text-align:right}"
    "td.zero{color:#bbb}"
    ".badge{display:inline-block;border-radius:3px;padding:1px 6px;color:#fff;white-space:nowrap;font-size:12px}"
    ".holds{background:#2e7d32}.within-noise{background:#b7791f}.differs{background:#c62828}"
    ".not-run{background:#757575}.not-expected{background:#b0b0b0;color:#222}.invalid{background:#6a1b9a}"
    ".by-construction{background:#fff;color:#2e7d32;border:1px dashed #2e7d32}"
    ".not-counted{background:#fff;color:#555;border:1px solid #999}"
    "tr.secondary td{color:#777;background:#fafafa}.small{font-size:11px;color:#666}code{font-size:12px}"
    "details summary{cursor:pointer;color:#1a5fb4}table.claims{table-layout:fixed;width:100%}"
    "table.claims td{overflow-wrap:anywhere}table.claims th:nth-child(1){width:9.5em}"
    "table.claims th:nth-child(2){width:13em}table.claims th:nth-child(3){width:15em}"
    "table.claims th:nth-child(4){width:4em}dl{margin:.3em 0 .2em}dt{font-weight:bold;margin-top:.2em}"
    "dd{margin:0 0 0 1.2em}" + sortable.STYLE
)


def _e(value) -> str:
    return html.escape(str(value), quote=True)


def one_line(text: str, limit: int = STATEMENT_CHARS) -> str:
    """``text`` on one line (whitespace collapsed), cut at a word before ``limit`` characters with '…'."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut) + "…"


def _table(header: Iterable[str], rows: list[str], cls: str = sortable.SORTABLE_CLASS) -> str:
    """A table of ``rows`` (each an already-escaped ``<tr>...</tr>``) under an escaped ``header``."""
    ths = "".join(f"<th>{_e(h)}</th>" for h in header)
    return f'<table class="{cls}"><thead><tr>{ths}</tr></thead><tbody>\n' + "\n".join(rows) + "\n</tbody></table>"


def _counts_rows(counts: pd.DataFrame, lead: tuple[str, ...]) -> list[str]:
    """Rows of a counts frame: the ``lead`` columns as text, then the counts right-aligned (a zero blank)."""
    rows = []
    for r in counts.to_dict("records"):
        cells = "".join(f"<td>{_e(r[c])}</td>" for c in lead)
        nums = [*COUNT_COLUMNS, "total"]
        cells += "".join(f'<td class="num{"" if r[c] else " zero"}">{int(r[c])}</td>' for c in nums)
        rows.append(f'<tr class="kind-{_e(r["kind"])}">{cells}</tr>')
    return rows


def _badge(r: dict) -> str:
    words, cls = BADGES.get(r["verdict"], (r["verdict"], "invalid"))
    out = f'<span class="badge {cls}">{_e(words)}</span>'
    if r["verdict"] == HOLDS and r["by_construction"]:
        out = f'<span class="badge by-construction" title="{_e(r["by_construction"])}">{_e(BY_CONSTRUCTION)}</span>'
    if r["secondary"]:
        out += f' <span class="badge not-counted">{NOT_COUNTED}</span>'
    return out


def _details(r: dict) -> str:
    """Everything of a claim but its first columns, as a definition list in a collapsed ``<details>``."""
    items = [
        ("statement", r["statement"]),
        ("source", f"{r['source']} ({r['kind']})"),
        ("check", r["check"]),
        ("detail", r["detail"]),
        ("noise model", r["noise"]),
        ("95% interval", r["interval"]),
        ("seeds used", r["seeds_used"] if r["seeds_used"] not in ("", NO_SEEDS) else ""),
        ("law", r["law"]),
        ("holds by construction", r["by_construction"]),
        ("secondary reading", f"{r['secondary']} (shown, {NOT_COUNTED})" if r["secondary"] else ""),
    ]
    dl = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in items if str(v).strip())
    return f"<details><summary>details</summary><dl>{dl}</dl></details>"


def _claim_row(r: dict) -> str:
    verdict_rank = VERDICTS.index(r["verdict"]) if r["verdict"] in VERDICTS else len(VERDICTS)
    # the interval beside the value only where there is one ('unknown' with one seed: in the details)
    interval = f'<div class="small">95%: {_e(r["interval"])}</div>' if r["interval"].startswith("[") else ""
    law = f'<div class="small">law: {_e(one_line(r["law"]))}</div>' if r["law"] else ""
    claim = f'<code>{_e(r["id"])}</code> <span class="statement">{_e(one_line(r["statement"]))}</span>{_details(r)}'
    cls = ' class="secondary"' if r["secondary"] else ""
    return (
        f'<tr id="{_e(r["id"])}"{cls}><td data-sort="{verdict_rank}">{_badge(r)}</td>'
        f"<td>{_e(r['our_value'])}{interval}</td><td>{_e(r['paper_value'])}{law}</td>"
        f'<td>{_e(r["seeds"])}</td><td data-sort="{_e(r["id"])}">{claim}</td></tr>'
    )


def _normalise(df: pd.DataFrame) -> pd.DataFrame:
    """Every column the page reads, as text ('' where an older claims.csv lacks one)."""
    df = df.copy()
    for col in TEXT_COLUMNS:
        df[col] = df[col].fillna("").astype(str) if col in df.columns else ""
    if (df["kind"] == "").any():  # an older claims.csv: the kind of its source
        df.loc[df["kind"] == "", "kind"] = df["source"].map(KIND_OF_SOURCE).fillna("")
    return df


def _page(title: str, body: list[str]) -> str:
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{_e(title)}</title>'
        f"<style>{_STYLE}</style></head>\n<body>\n" + "\n".join(body) + f"\n{sortable.script_tag()}\n</body></html>\n"
    )


def _one(values: pd.Series, fallback: str) -> str:
    found = sorted(set(values) - {""})
    return ", ".join(found) or fallback


def claims_page(df: pd.DataFrame, paper: str, scale: str = "", data: str = "", device: str = NO_DEVICE) -> str:
    """The claims page of a claims.csv frame ``df`` (rows = claims, the columns of claims.render.COLUMNS):
    scale and commit from its columns (``scale`` where it has none), ``data`` and ``device`` as claims.md
    states them."""
    df = _normalise(df)
    scale = _one(df["scale"] if "scale" in df.columns else pd.Series(dtype=str), scale or "unknown")
    commit = _one(df["commit"] if "commit" in df.columns else pd.Series(dtype=str), "unknown")
    counted = primary(df)
    totals = ", ".join(f"{v}: {int((counted['verdict'] == v).sum())}" for v in VERDICTS)
    n_sec = len(df) - len(counted)
    kinds = [k for k in KINDS if (df["kind"] == k).any()]
    nav = " · ".join(f'<a href="#{k}">{k} ({int((df["kind"] == k).sum())})</a>' for k in kinds)
    body = [
        f"<h1>Claims of {_e(paper)} at scale {_e(scale)}</h1>",
        f'<p class="meta">Commit <code>{_e(commit)}</code></p>',
        f'<p class="meta">Data at {_e(scale)}: {_e(data or UNDECLARED)}. Device: {_e(device)}.</p>',
        f'<p class="meta">Verdicts: {_e(totals)}'
        + (f" ({n_sec} secondary readings shown, {NOT_COUNTED})" if n_sec else "")
        + "</p>",
        _table(
            ["kind", "source", *COUNT_COLUMNS, "total"], _counts_rows(count_table(df), ("kind", "source")), cls="counts"
        ),  # fmt: skip
        '<p class="explain">'
        + _e("Kinds: " + "; ".join(f"{k}: {t}" for k, t in KIND_TEXT.items()) + ". " + NOISE_TEXT)
        + " Click a column's header to sort its table; a claim's <i>details</i> hold its check, the numbers "
        "behind the verdict, the noise model and its source.</p>",
        f'<p class="meta">{nav}</p>' if nav else "<p>No claims.</p>",
    ]
    for kind in kinds:
        part = df[df["kind"] == kind]
        body += [f'<h2 id="{kind}">{_e(kind.capitalize())}</h2>', f'<p class="kind-text">{_e(KIND_TEXT[kind])}</p>']
        for artefact in dict.fromkeys(part["artefact"]):  # the claims' own order (the paper config's)
            rows = [_claim_row(r) for r in part[part["artefact"] == artefact].to_dict("records")]
            body += [
                f'<h3 class="artefact">{_e(artefact or "(no artefact)")}</h3>',
                _table(COLUMNS, rows, f"{sortable.SORTABLE_CLASS} claims"),
            ]
    return _page(f"{paper}: claims at scale {scale}", body)


def write_claims_page(
    csv_path: str | Path, html_path: str | Path, paper: str, data: str = "", device: str = NO_DEVICE, verify=True
) -> None:
    """Render ``csv_path`` (a claims.csv, verified against its checksum unless ``verify`` is false: an
    archive's has none) as the claims page at ``html_path``."""
    if verify:
        layout.verify_claims(csv_path)  # a truncated claims.csv would show fewer claims
    df = pd.read_csv(csv_path, dtype=str, keep_default_na=False)
    write_text(html_path, claims_page(df, paper, data=data, device=device))


def overview_table(results: Path, papers: Iterable[str], names: dict[str, str] | None = None) -> pd.DataFrame:
    """Per paper (in ``papers`` order) and kind (``KINDS`` order) the verdict counts of its claims.csv under
    ``results`` (the scale's root), summed over sources; each claims.csv verified first. The paper column
    holds ``names[paper]`` (its category in the report) where given, else its id."""
    frames = []
    for paper in papers:
        csv = layout.claims_paths(results, paper)[1]
        layout.verify_claims(csv)
        counts = count_table(pd.read_csv(csv, dtype=str, keep_default_na=False))
        per_kind = counts.drop(columns="source").groupby("kind", sort=False).sum().reset_index()
        per_kind.insert(0, "paper", (names or {}).get(paper, paper))
        frames.append(per_kind)
    columns = ["paper", "kind", *COUNT_COLUMNS, "total"]
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)


def write_overview(
    results: Path, papers: Iterable[str], scale: str, out: Path, names: dict[str, str] | None = None
) -> pd.DataFrame:
    """``out``: one table of every paper's verdict counts per kind (reproduction first) at ``scale``, papers
    named as in ``overview_table``."""
    table = overview_table(results, papers, names)
    body = [
        f"<h1>Claims of every paper at scale {_e(scale)}</h1>",
        '<p class="explain">'
        + _e(
            "Only reproduction verdicts are evidence about the papers. "
            + "; ".join(f"{k}: {t}" for k, t in KIND_TEXT.items())
            + f". '{BY_CONSTRUCTION}' counts claims that hold for any data of the right shape; '{NOT_EXPECTED}': "
            "the scale is below the one the claim needs; secondary readings are not counted. Each paper's claims "
            "page (the paper's category, 'claims') lists every claim with our value beside the paper's."
        )
        + "</p>",
        _table(["paper", "kind", *COUNT_COLUMNS, "total"], _counts_rows(table, ("paper", "kind"))),
    ]
    write_text(out, _page(f"claims at scale {scale}", body))
    return table
