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


@pytest.fixture
def heads_tree(tree):
    """``tree`` with heads.yaml the only paper file, for tests that mutate config.yaml or heads.yaml: ``load_all``
    loads each paper on its own (no check reads two papers), so loading the others (about 0.4 s a load)
    would check nothing there; the shipped-config tests load them all."""
    for path in (tree / "config" / "papers").glob("*.yaml"):
        if path.name != "heads.yaml":
            path.unlink()
    return tree
