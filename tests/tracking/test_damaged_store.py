"""A damaged ``mlflow.db`` (issue 26 item 8, part 4): garbage bytes or a truncated file.

Before: ``mlflow-sync`` said "could not reach sqlite:///..." (as for a server that is down), and the claims
step's ingest logged a generic failure and "run the mlflow_sync rule later", which failed the same way.
Now both say the file is not a usable SQLite database and how to rebuild the store from the buffers (the
files under results/ are the source of truth): move the file aside and rerun the sync. The test follows
that advice and checks the store comes back with every run.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import subprocess
import sys

import pytest

from seqmix.cli.main import main as cli_main
from seqmix.io import read_json
from seqmix.tracking import health
from seqmix.tracking import runs as tracking
from seqmix.tracking import store as tracking_store
from tests.tracking.test_store import _rec, _runs, _write

pytestmark = pytest.mark.timeout(300)

DAMAGE = {
    "garbage": lambda p: p.write_bytes(bytes(range(256)) * (p.stat().st_size // 256)),
    "truncated": lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),
    "header_kept_pages_garbled": lambda p: p.write_bytes(p.read_bytes()[:100] + b"\xa5" * (p.stat().st_size - 100)),
}


def _sync_args(uri: str, results) -> list[str]:
    return ["mlflow-sync", "--uri", uri, "--results", str(results), "--out", str(results / ".mlflow" / "sync.json")]


def _synced(store):
    """A store with two runs (a training run and its evaluation) replayed from their buffers."""
    uri, results = store
    _write(results, "tracking-train.jsonl", _rec("a.train"))
    _write(results, "tracking-evaluate.jsonl", _rec("a.evaluate", parent="a.train"))
    cli_main(_sync_args(uri, results))
    assert len(_runs(uri)[2]) == 2
    return uri, results, results / "mlflow.db"


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_sync_names_a_damaged_store_and_how_to_rebuild_it(store, damage):
    uri, results, db = _synced(store)
    DAMAGE[damage](db)
    with pytest.raises(SystemExit) as stop:
        cli_main(_sync_args(uri, results))
    message = str(stop.value)
    assert "could not reach" not in message
    assert f"{db} is not a usable SQLite database" in message
    assert "malformed" in message or "not a database" in message  # what SQLite says
    assert f"mv {db} {db}.damaged" in message and "mlflow-sync --uri" in message
    assert "--forcerun mlflow_sync -- mlflow_sync" in message


def test_the_advice_rebuilds_the_store_from_the_buffers(store, root):
    """Moving the damaged file aside and rerunning the sync (a new process, as a person or the rule runs it)
    gives back every run, the evaluation linked to its training run."""
    uri, results, db = _synced(store)
    DAMAGE["truncated"](db)
    with pytest.raises(SystemExit, match="mlflow.db.damaged"):
        cli_main(_sync_args(uri, results))
    db.rename(db.with_name("mlflow.db.damaged"))  # what the message says to do, then the sync again
    env = dict(os.environ, PYTHONPATH=str(root / "src"))
    done = subprocess.run([sys.executable, "-m", "seqmix", *_sync_args(uri, results)], cwd=root, env=env,
                          capture_output=True, text=True, timeout=240)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert read_json(results / ".mlflow" / "sync.json")["created"] == 2
    with contextlib.closing(sqlite3.connect(db)) as con:
        tags = con.execute("SELECT run_uuid, key, value FROM tags WHERE key IN (?, ?)",
                           (tracking_store.KEY_TAG, tracking_store.PARENT_RUN_TAG)).fetchall()  # fmt: skip
    run_of = {value: run for run, key, value in tags if key == tracking_store.KEY_TAG}
    parent_of = {run: value for run, key, value in tags if key == tracking_store.PARENT_RUN_TAG}
    assert sorted(run_of) == ["a.evaluate", "a.train"]
    assert parent_of[run_of["a.evaluate"]] == run_of["a.train"]


def test_the_claims_steps_ingest_names_a_damaged_store(store, caplog):
    """The claims step's ingest never fails the DAG on tracking, but its warning says what is wrong."""
    uri, results = store
    buf = _write(results, "tracking-train.jsonl", _rec("a.train"))
    DAMAGE["garbage"](results / "mlflow.db")
    with caplog.at_level(logging.WARNING, logger="seqmix.tracking.runs"):
        assert tracking.ingest([buf], uri, results) is None
    assert "is not a usable SQLite database" in caplog.text and "mlflow.db.damaged" in caplog.text


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_store_is_named_before_mlflow_opens_it(store, damage, monkeypatch, caplog):
    """MLflow's engine retries a database error for about 100 s before it fails (the claims step's ingest
    into a garbage file took 101 s): the ingest and the store's set-up ask SQLite first and never hand a
    damaged file to MLflow."""
    uri, results = store
    buf = _write(results, "tracking-train.jsonl", _rec("a.train"))
    DAMAGE[damage](results / "mlflow.db")
    opened = []
    monkeypatch.setattr(tracking, "_ingest_records", lambda *a, **k: opened.append("ingest"))
    monkeypatch.setattr(tracking, "_init_experiments", lambda *a, **k: opened.append("init"))
    with caplog.at_level(logging.WARNING, logger="seqmix.tracking.runs"):
        assert tracking.ingest([buf], uri, results) is None
        assert tracking.init_store(uri, ["heads"], results) is None
    assert opened == []
    assert caplog.text.count("is not a usable SQLite database") == 2


def test_a_healthy_or_absent_store_is_not_called_damaged(store, tmp_path):
    uri, _ = store
    assert health.sqlite_problem(uri) is None
    assert health.sqlite_problem(f"sqlite:///{tmp_path / 'none' / 'mlflow.db'}") is None
    assert health.sqlite_problem("http://localhost:5000") is None
