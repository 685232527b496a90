"""The claims engine's outputs: ``results/<paper>/claims.csv`` and ``claims.md`` (led by the verdict counts
per kind and source, reproduction first), and the counts of every paper in one file
(``python -m seqmix claims-summary``, e.g. docs/measured/claims_counts.md) that the README shows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ..io import write_text
from ..results import verify_claims
from .checks import HOLDS, KIND_OF_SOURCE, KINDS, NO_SEEDS, NOT_EXPECTED, NOT_RUN, VERDICTS, WITHIN_NOISE, ClaimResult
from .noise import fmt_estimate

COLUMNS = (
    "id",
    "kind",
    "source",
    "by_construction",
    "secondary",
    "artefact",
    "statement",
    "paper_value",
    "law",
    "our_value",
    "interval",
    "noise",
    "check",
    "scale",
    "seeds",
    "seeds_used",
    "verdict",
    "detail",
    "commit",
)
BY_CONSTRUCTION = "holds by construction"  # a count column: held, but for any data of the right shape
COUNT_COLUMNS = (HOLDS, BY_CONSTRUCTION) + tuple(v for v in VERDICTS if v != HOLDS)
SOURCES = tuple(KIND_OF_SOURCE)
NOISE_TEXT = (
    "Our value of a learned quantity is 'mean ± half-width' of its 95% interval under the claim's noise model "
    f"(seeds, binomial, both; seqmix.claims.noise); '{WITHIN_NOISE}': the interval admits both the relation and "
    "its opposite, counted apart. Secondary readings of a quantity another claim reads are shown, not counted."
)
KIND_TEXT = {
    "reproduction": "a quantity our experiment measured against the paper's own number or relation",
    "derived": "our numerics against a law obtained apart from the formula our code implements (its law named)",
    "consistency": "an identity, or a formula against itself or the spec's evaluation of it: a unit test, not evidence",
}
UNDECLARED = "not declared (no data: in the paper's config)"
NO_DEVICE = "see run metadata (no device column in the summaries)"


def devices(summaries: dict[str, str]) -> str:
    """The devices the experiments' summaries record (the train stage's ``device`` column), e.g. 'cpu' or
    'cuda (e1), cpu (e2)'; NO_DEVICE where no summary has one."""
    found = {}
    for exp, path in summaries.items():
        try:
            df = pd.read_csv(path, usecols=lambda c: c == "device", keep_default_na=False)
        except (FileNotFoundError, pd.errors.EmptyDataError, ValueError):
            continue
        if "device" in df.columns and len(df):
            found[exp] = ", ".join(sorted(set(df["device"].astype(str))))
    if not found:
        return NO_DEVICE
    if len(set(found.values())) == 1:
        return next(iter(found.values()))
    return ", ".join(f"{d} ({e})" for e, d in found.items())


def _fmt(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, list) and v and isinstance(v[0], tuple):
        return ", ".join(f"{x}: {y:.3g}" for x, y in v)
    if isinstance(v, list) and len(v) == 2 and all(isinstance(x, (int, float)) for x in v):
        return f"{v[0]} ± {v[1]}"
    return str(v)


def _fmt_ours(r: ClaimResult) -> str:
    """Our value; with a noise model 'mean ± half-width' of its 95% interval (per point of a series)."""
    if r.estimate is None:
        return _fmt(r.ours)
    if isinstance(r.estimate, list):
        return ", ".join(f"{x}: {fmt_estimate(e)}" for x, e in r.estimate)
    return fmt_estimate(r.estimate)


def to_frame(results: list[ClaimResult], scale: str, commit: str = "unknown") -> pd.DataFrame:
    # explicit columns: a paper without claims still gets a claims.csv with a header (report/index.py reads it)
    rows = [
        {
            "id": r.id,
            "kind": r.kind,
            "source": r.source,
            "by_construction": r.by_construction,
            "secondary": r.secondary,
            "artefact": r.artefact,
            "statement": r.statement,
            "paper_value": _fmt(r.reported),
            "law": r.law,
            "our_value": _fmt_ours(r),
            "interval": r.interval,
            "noise": r.noise,
            "check": r.check,
            "scale": scale,
            "seeds": r.seeds,
            "seeds_used": r.seeds_used,
            "verdict": r.verdict,
            "detail": r.detail,
            "commit": commit,
        }
        for r in results
    ]
    return pd.DataFrame(rows, columns=list(COLUMNS))


def primary(df: pd.DataFrame) -> pd.DataFrame:
    """The rows that count: a secondary reading of a measured quantity is shown but never counted."""
    if "secondary" not in df.columns:
        return df
    return df[df["secondary"].fillna("").astype(str) == ""]


def count_table(df: pd.DataFrame) -> pd.DataFrame:
    """Verdict counts per (kind, source) of a claims frame's primary claims, kinds in KINDS order; a claim
    that holds by construction counts under BY_CONSTRUCTION, not under holds; secondary readings are not
    counted. Older claims.csv files without a kind column get the default of their source."""
    df = primary(df).copy()
    if "kind" not in df.columns:
        df["kind"] = df["source"].map(KIND_OF_SOURCE)
    by_con = df["by_construction"].fillna("").astype(str) if "by_construction" in df.columns else ""
    df["counted"] = df["verdict"].where(~((df["verdict"] == HOLDS) & (by_con != "")), BY_CONSTRUCTION)
    rows = []
    for kind in KINDS:
        for source in SOURCES:
            part = df[(df["kind"] == kind) & (df["source"] == source)]
            if part.empty:
                continue
            counts = {c: int((part["counted"] == c).sum()) for c in COUNT_COLUMNS}
            rows.append({"kind": kind, "source": source, **counts, "total": len(part)})
    return pd.DataFrame(rows, columns=["kind", "source", *COUNT_COLUMNS, "total"])


def _md_table(df: pd.DataFrame) -> list[str]:
    cells = [[str(c) for c in df.columns]] + [[str(v) for v in row] for row in df.itertuples(index=False)]
    esc = [[c.replace("|", "\\|").replace("\n", " ") for c in row] for row in cells]
    head = ["| " + " | ".join(esc[0]) + " |", "|" + "---|" * len(esc[0])]
    return head + ["| " + " | ".join(r) + " |" for r in esc[1:]]


def _verdict_cell(r: pd.Series) -> str:
    if r["verdict"] in (NOT_RUN, "invalid"):
        cell = f"**{r['verdict']}**: {r['detail']}"
    elif r["by_construction"]:
        cell = f"**{r['verdict']}** (by construction: {r['by_construction']})"
    else:
        cell = f"**{r['verdict']}**"
    return f"{cell} (secondary reading {r['secondary']}; not counted)" if r["secondary"] else cell


def _seeds_cell(r: pd.Series) -> str:
    return r["seeds"] if r["seeds_used"] in ("", NO_SEEDS) else f"{r['seeds']} ({r['seeds_used']})"


def write_claims(
    results: list[ClaimResult],
    md_path: Path,
    csv_path: Path,
    paper: str,
    scale: str,
    commit: str = "unknown",
    data: str = "",
    device: str = NO_DEVICE,
    checksum: bool = True,
) -> None:
    """claims.csv and claims.md; the md's header names the data law or substitute the scale ran on (the paper
    config's ``data:``), the device the summaries record, and each row the paper's own relation (paper value)
    or, for a derived claim, the law it is compared with. claims.csv gets a checksum (``checksum``): its
    readers refuse a truncated one (``seqmix.results.verify_claims``)."""
    df = to_frame(results, scale, commit)
    write_text(csv_path, df.to_csv(index=False), checksum=checksum)
    counted = primary(df)
    totals = {v: int((counted["verdict"] == v).sum()) for v in VERDICTS}
    secondary = len(df) - len(counted)
    lines = [
        f"# Claims of `{paper}` at scale `{scale}`",
        "",
        f"Commit `{commit}`. Each row: a number or statement (source: the paper itself, a value the spec derived "
        "(never the paper's), or a closed-form identity), our value, the seeds it had of those it needs, the check "
        "and its verdict. Kinds: " + "; ".join(f"**{k}**: {t}" for k, t in KIND_TEXT.items()) + ". " + NOISE_TEXT,
        "",
        f"Data at `{scale}`: {data or UNDECLARED}. Device: {device}.",
        "",
        "Verdicts: "
        + ", ".join(f"{k}: {v}" for k, v in totals.items())
        + (f" ({secondary} secondary readings shown, not counted)" if secondary else ""),
        "",
        *_md_table(count_table(df)),
    ]
    header = ["claim", "source", "artefact", "statement", "paper value", "our value", "noise", "seeds", "check",
              "verdict"]  # fmt: skip
    for kind in KINDS:
        part = df[df["kind"] == kind]
        if part.empty:
            continue
        lines += ["", f"## {kind.capitalize()}: {KIND_TEXT[kind]}", ""]
        rows = [
            [
                r["id"],
                r["source"],
                r["artefact"],
                r["statement"],
                f"{r['paper_value']} (law: {r['law']})" if r["law"] else r["paper_value"],
                r["our_value"],
                r["noise"],
                _seeds_cell(r),
                r["check"] if r["verdict"] in (NOT_RUN, "invalid") else f"{r['check']}: {r['detail']}",
                _verdict_cell(r),
            ]
            for _, r in part.iterrows()
        ]
        lines += _md_table(pd.DataFrame(rows, columns=header))
    write_text(md_path, "\n".join(lines) + "\n")


def write_counts(results_dir: Path, out: Path, command: str) -> pd.DataFrame:
    """Per paper (every ``<results_dir>/<paper>/claims.csv``) and kind the verdict counts, with the scale
    and commit the claims.csv records, written to ``out`` as markdown marked generated by ``command``."""
    frames = []
    for csv in sorted(Path(results_dir).glob("*/claims.csv")):
        verify_claims(csv)
        df = pd.read_csv(csv, keep_default_na=False)
        counts = count_table(df)
        commits = sorted(set(df["commit"])) if "commit" in df.columns else []
        counts.insert(0, "commit", ", ".join(c[:12] for c in commits) or "unknown")
        counts.insert(0, "scale", ", ".join(sorted(set(df["scale"]))) if len(df) else "—")
        counts.insert(0, "paper", csv.parent.name)
        frames.append(counts)
    if not frames:
        raise FileNotFoundError(f"no <paper>/claims.csv under {results_dir}")
    table = pd.concat(frames, ignore_index=True)
    lines = [
        f"<!-- Generated by `{command}` from {results_dir}/<paper>/claims.csv. Regenerate; do not edit. -->",
        "# Claim verdicts per paper and kind",
        "",
        "Only **reproduction** verdicts are evidence about the papers. "
        + "; ".join(f"**{k}**: {t}" for k, t in KIND_TEXT.items())
        + f". '{BY_CONSTRUCTION}' counts claims that hold for any data of the right shape; "
        f"'{WITHIN_NOISE}': our 95% interval admits both the relation and its opposite; "
        f"'{NOT_EXPECTED}': the scale is below the one the claim needs. Secondary readings are not counted.",
        "",
        *_md_table(table),
    ]
    write_text(out, "\n".join(lines) + "\n")
    return table
