"""No deprecation warning of ours when the package is built or imported.

Guards: `license = {text = "MIT"}` (the table form) made setuptools warn at every build that it is deprecated
and will be an error; the license is an SPDX expression with its file in `license-files` (PEP 639), and the
wheel says so. The import of the package and its CLI raises no DeprecationWarning even when those are errors."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile

import pytest

from tests.conftest import ROOT

BUILD = "import sys, setuptools.build_meta as b; print(b.build_wheel(sys.argv[1]))"


def _build(tree, out):
    """The PEP 517 build pip runs (setuptools' backend, here without build isolation), every warning shown."""
    return subprocess.run(
        [sys.executable, "-W", "always", "-c", BUILD, str(out)],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def tree(tmp_path):
    """What a wheel is built from (the checkout's pyproject, README, LICENSE and package), in a scratch copy."""
    dst = tmp_path / "tree"
    dst.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, dst / name)
    shutil.copytree(ROOT / "src", dst / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    return dst


def test_wheel_builds_without_deprecation_warnings(tree, tmp_path):
    pytest.importorskip("setuptools", minversion="77")  # the SPDX string needs it (pyproject's build-system)
    r = _build(tree, tmp_path / "out")
    log = r.stdout + r.stderr
    assert r.returncode == 0, log[-3000:]
    assert "deprecat" not in log.lower(), [line for line in log.splitlines() if "eprecat" in line]
    with zipfile.ZipFile(tmp_path / "out" / r.stdout.strip().splitlines()[-1]) as whl:
        info = next(n for n in whl.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = whl.read(info).decode()
        assert "License-Expression: MIT" in metadata and "License-File: LICENSE" in metadata
        assert any(n.endswith(".dist-info/licenses/LICENSE") for n in whl.namelist())


def test_the_table_form_would_warn(tree, tmp_path):
    """The check above can see the warning: the same build with the license as a table prints it."""
    pytest.importorskip("setuptools", minversion="77")
    pyproject = tree / "pyproject.toml"
    text = pyproject.read_text()
    assert 'license = "MIT"' in text
    text = re.sub(r"^license-files = .*\n", "", text, flags=re.M)
    pyproject.write_text(text.replace('license = "MIT"', 'license = {text = "MIT"}', 1))
    r = _build(tree, tmp_path / "out")
    assert "deprecat" in (r.stdout + r.stderr).lower(), (r.stdout + r.stderr)[-3000:]


def test_import_raises_no_deprecation_warning():
    r = subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning", "-c", "import seqmix, seqmix.cli.main"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
