"""A re-judgeable archive of a run's claims: the small tables the claims read, committed under
``docs/measured/<paper>/<scale>/`` with where they came from, and the verdict docs regenerated from them.

A long run (cpu or paper scale, hours, sometimes on a borrowed GPU) is gone once its machine is; its verdicts
would then be frozen at the engine and the claims of the day they ran. The archive keeps what the claims
read (each ``<table>/summary.csv`` a claim names, kilobytes, with its checksum sidecar) and ``archive.json``
(commit of the run, date, device, data source, the tables and the command that made it). ``claims.md`` and
``claims.csv`` beside them are generated from the archive by today's engine and today's claims
(``python -m seqmix claims-export --archive docs/measured/<paper>/<scale>``); a test fails when a committed
verdict doc differs from what the engine gives on its archive.

Layout of an archive: the same relative paths as the run's paper directory, so the engine reads it as one::

    docs/measured/heads/cpu/archive.json
    docs/measured/heads/cpu/exp1/summary.csv (+ summary.csv.sha256)
    docs/measured/heads/cpu/claims.md, claims.csv   (generated)
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from ..io import checksum_path, read_json, write_bytes, write_json, write_text
from ..results import verify_claims
from .engine import evaluate_claims
from .render import write_claims

META = "archive.json"
VERDICT_DOCS = ("claims.md", "claims.csv")


def tables_read(claims: Iterable[dict]) -> list[str]:
    """Every ``table`` a claim's selections name (``ours``, ``ratio_to``, ``relative_to``, references ...)."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            table = node.get("table")
            if isinstance(table, str):
                found.add(table)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for claim in claims:
        walk(claim.get("ours"))
        walk(claim.get("check"))
    return sorted(found)


# the tag a tracking buffer's records carry the job's commit in (seqmix.tracking.runs.GIT_COMMIT_TAG; not
# imported: claims and tracking are sibling layers)
_COMMIT_TAG = "mlflow.source.git.commit"


def _run_commit(paper_dir: Path, tables: Iterable[str] = ()) -> str:
    """The commit the run's claims step recorded (claims.csv); for a run stopped before its claims step (a
    subset of the experiments run), the commits its jobs recorded in the tracking buffers under the archived
    ``tables``' directories, comma-separated when the tables were made at several; else 'unknown'."""
    csv = paper_dir / "claims.csv"
    if csv.exists():
        verify_claims(csv)
        df = pd.read_csv(csv, keep_default_na=False)
        if "commit" in df.columns and len(df):
            return str(df["commit"].iloc[0])
    commits = set()
    for table in tables:
        for buffer in sorted((paper_dir / table).rglob("tracking-*.jsonl")):
            for line in buffer.read_text(errors="replace").splitlines():
                try:
                    commit = json.loads(line).get("tags", {}).get(_COMMIT_TAG)
                except (json.JSONDecodeError, AttributeError):
                    continue  # a torn line of a killed job: the others carry the same commit
                if commit:
                    commits.add(str(commit))
    return ", ".join(sorted(commits)) or "unknown"


def make_archive(
    paper_dir: Path, claims: list[dict], out: Path, *, paper: str, scale: str, device: str, data: str, command: str
) -> dict:
    """Copy the tables ``claims`` read from a run's ``paper_dir`` into ``out`` and write its ``archive.json``;
    returns the metadata. Tables the run lacks are listed as missing (their claims will read 'not run')."""
    paper_dir, out = Path(paper_dir), Path(out)
    if not paper_dir.is_dir():
        raise FileNotFoundError(f"{paper_dir}: no results of {paper!r} (run its DAG at scale {scale} first)")
    copied, missing = [], []
    for table in tables_read(claims):
        src = paper_dir / table / "summary.csv"
        if not src.exists():
            missing.append(table)
            continue
        dst = out / table / "summary.csv"
        write_bytes(dst, src.read_bytes())  # a copy, never a hard link: the run's file may be rewritten later
        if checksum_path(src).exists():
            write_bytes(checksum_path(dst), checksum_path(src).read_bytes())
        copied.append(table)
    meta = {
        "paper": paper,
        "scale": scale,
        "run_commit": _run_commit(paper_dir, copied),
        "archived": _dt.date.today().isoformat(),
        "device": device,
        "data": data,
        "tables": copied,
        "missing_tables": missing,
        "command": command,
    }
    write_json(out / META, meta)
    return meta


def read_meta(archive: Path) -> dict:
    path = Path(archive) / META
    if not path.exists():
        raise FileNotFoundError(f"{path}: not an archive (make one with `python -m seqmix archive`)")
    return read_json(path)


def judge_archive(
    archive: Path,
    claims: list[dict],
    md: Path | None = None,
    csv: Path | None = None,
    analysis_tables: Iterable[str] = (),
) -> int:
    """Judge ``claims`` on the archive's tables with today's engine and write its verdict docs (by default
    ``claims.md`` and ``claims.csv`` in the archive), headed by where the tables came from; ``analysis_tables``
    as ``engine.evaluate_claims``. Returns the rows."""
    archive = Path(archive)
    meta = read_meta(archive)
    results = evaluate_claims(claims, archive, meta["scale"], set(analysis_tables))
    for r in results:  # details name tables relative to the archive, so the docs do not depend on where it lies
        r.detail = r.detail.replace(f"{archive.as_posix()}/", "")
    md = md or archive / "claims.md"
    csv = csv or archive / "claims.csv"
    # no checksum: the archive's verdict docs are generated, and checked against the engine by
    # tests/claims/test_archive.py, a stronger check than a sidecar (and no .sha256 files among the docs)
    meta_kw = {"data": meta["data"], "device": meta["device"], "checksum": False}
    write_claims(results, md, csv, meta["paper"], meta["scale"], meta["run_commit"], **meta_kw)
    header = [
        "<!-- Generated by `python -m seqmix claims-export --archive <this directory>` from the archived tables;"
        " regenerate, do not edit. -->",
        "",
        f"Archive of the `{meta['scale']}` run of `{meta['paper']}` (run at commit `{meta['run_commit']}`, archived "
        f"{meta['archived']}), judged by the claims and the engine of the commit that regenerated this file; the "
        "tables it read are in this directory"
        + (f" (not in the run: {', '.join(meta['missing_tables'])})" if meta["missing_tables"] else "")
        + ".",
        "",
    ]
    write_text(md, "\n".join(header) + Path(md).read_text())
    return len(results)


def archives(root: Path) -> list[Path]:
    """Every archive under ``root`` (``docs/measured``): the directories holding an ``archive.json``."""
    return sorted(p.parent for p in Path(root).glob(f"*/*/{META}"))
