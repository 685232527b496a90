"""A migrated SQLite MLflow store per test, copied from one made per session."""

from __future__ import annotations

import shutil

import pytest

from seqmix.tracking import store as tracking_store


@pytest.fixture(scope="session")
def template_db(tmp_path_factory):
    """One migrated SQLite store, copied per test (creating one runs every MLflow migration: ~10 s)."""
    path = tmp_path_factory.mktemp("mlflow") / "template.db"
    tracking_store.client(f"sqlite:///{path}").search_experiments()
    return path


@pytest.fixture
def store(tmp_path, template_db):
    results = tmp_path / "results"
    results.mkdir()
    shutil.copy(template_db, results / "mlflow.db")
    uri = f"sqlite:///{results / 'mlflow.db'}"
    return uri, results
