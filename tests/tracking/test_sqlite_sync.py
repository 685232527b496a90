"""The embedded store's SQLite connections skip the per-commit disk flush unless SEQMIX_SQLITE_SYNC says
otherwise (seqmix.tracking.store.client), and a bad value fails before any work."""

from __future__ import annotations

import pytest

from seqmix.tracking import store as tracking_store

# PRAGMA synchronous reads back as a number
LEVEL = {"OFF": 0, "NORMAL": 1, "FULL": 2, "EXTRA": 3}


def _synchronous(mlf) -> int:
    engine = mlf._tracking_client.store.engine  # the SQLAlchemy engine MLflow writes through
    with engine.connect() as con:
        return con.exec_driver_sql("PRAGMA synchronous").scalar()


@pytest.mark.parametrize("mode", [None, "FULL", "normal"])
def test_mlflow_store_connections_take_the_mode(store, monkeypatch, mode):
    uri, _ = store
    if mode is None:
        monkeypatch.delenv(tracking_store.SQLITE_SYNC_ENV, raising=False)
    else:
        monkeypatch.setenv(tracking_store.SQLITE_SYNC_ENV, mode)
    mlf = tracking_store.client(uri)
    assert _synchronous(mlf) == LEVEL[(mode or "OFF").upper()]
    # the store still works: an experiment written and read back
    exp = tracking_store.ensure_experiment(mlf, "sync-check", live=False)
    assert mlf.get_experiment(exp).name == "sync-check"


def test_a_bad_mode_is_an_error_naming_the_variable(store, monkeypatch):
    monkeypatch.setenv(tracking_store.SQLITE_SYNC_ENV, "sometimes")
    with pytest.raises(ValueError, match="SEQMIX_SQLITE_SYNC='SOMETIMES': expected OFF, NORMAL, FULL or EXTRA"):
        tracking_store.client(store[0])
