"""Shared test fixtures. Tests run from the repo root with the package installed (make test)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Tiny torch models: one thread per process is fastest and keeps results bit-reproducible.
os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT
