"""Whether the embedded MLflow store (``sqlite:///.../mlflow.db``) is a usable SQLite database, and what to do
when it is not.

A damaged file (garbage bytes, a truncation, garbled pages) made MLflow fail with a database error, which the
sync reported as "could not reach" (as for a server that is down). The store only mirrors the tracking buffers
under results/ (the source of truth), so the remedy is to move the file aside and replay every buffer into a
fresh store: the sync does that (``mlflow-sync``, the ``mlflow_sync`` rule). Only SQLite's own verdicts on the
file count as damage ("not a database", "malformed", a failed ``PRAGMA quick_check``); a lock or a permission
error is not diagnosed here.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

SQLITE = "sqlite:///"
SYNC_RULE = ".venv/bin/snakemake --workflow-profile profiles/local --forcerun mlflow_sync -- mlflow_sync"
_DAMAGE_WORDS = ("not a database", "malformed", "corrupt")


def sqlite_file(uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` URI, else None."""
    return Path(uri[len(SQLITE) :]) if uri.startswith(SQLITE) else None


def sqlite_problem(uri: str) -> str | None:
    """Why the SQLite file behind ``uri`` is not a usable database, in SQLite's words, or None: a server URI,
    a file not made yet or empty (SQLite makes a database of it), a database that passes ``quick_check``."""
    path = sqlite_file(uri)
    if path is None or not path.is_file() or path.stat().st_size == 0:
        return None
    try:
        with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=60)) as db:
            rows = db.execute("PRAGMA quick_check").fetchall()
    except sqlite3.DatabaseError as e:
        return str(e) if any(w in str(e).lower() for w in _DAMAGE_WORDS) else None
    bad = [str(r[0]) for r in rows if r and r[0] != "ok"]
    return "quick_check: " + "; ".join(bad[:3]) if bad else None


def damaged_message(uri: str, results: str | Path, why: str, out: str | Path | None = None) -> str:
    """What is wrong with the store's file and the commands that rebuild the store from the buffers."""
    path = sqlite_file(uri)
    out = out or Path(results) / ".mlflow" / "sync.json"
    return (
        f"{path} is not a usable SQLite database ({why}). The MLflow store only mirrors the tracking buffers "
        f"under {results}: move it aside and rerun the sync, which rebuilds the store from them: "
        f"`mv {path} {path}.damaged`, then `python -m seqmix mlflow-sync --uri {uri} --results {results} "
        f"--out {out}` (or, through the DAG: `{SYNC_RULE}`)"
    )
