"""Fixtures of the config tests."""

from __future__ import annotations

import shutil

import pytest


@pytest.fixture
def tree(tmp_path, root):
    """tmp_path/config/config.yaml and every tmp_path/config/papers/<paper>.yaml copied from the repo, for a
    test to mutate (config.yaml lists every paper)."""
    (tmp_path / "config" / "papers").mkdir(parents=True)
    shutil.copy(root / "config" / "config.yaml", tmp_path / "config" / "config.yaml")
    for paper in (root / "config" / "papers").glob("*.yaml"):
        shutil.copy(paper, tmp_path / "config" / "papers" / paper.name)
    return tmp_path
