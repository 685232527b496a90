"""The import contracts hold: one-way layers, pure theory, no circles, one importer per heavy dependency
(``[tool.importlinter]`` in pyproject.toml, checked with import-linter's ``lint-imports``); and probes ask
for capabilities with ``isinstance``, never by registered name or attribute strings."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

PROBE_PACKAGES = ("tasks", "diagnostics", "papers")
# name-based probing: the registered name, or an attribute looked up by a string literal
NAME_PROBES = re.compile(r"registered_name|\bhasattr\(|\bgetattr\([^,()]+,\s*[\"']")


def test_import_contracts_hold():
    exe = Path(sys.executable).parent / "lint-imports"
    assert exe.exists(), f"{exe} missing: pip install import-linter (pinned in envs/requirements-cpu.txt)"
    # analyse this checkout's sources, whatever the venv's editable install points at
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run(
        [str(exe), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, f"lint-imports failed:\n{r.stdout[-6000:]}\n{r.stderr[-2000:]}"


def test_probes_check_capabilities_not_names():
    hits = []
    for pkg in PROBE_PACKAGES:
        for path in sorted((ROOT / "src" / "seqmix" / pkg).rglob("*.py")):
            for i, line in enumerate(path.read_text().splitlines(), 1):
                if NAME_PROBES.search(line):
                    hits.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not hits, (
        "probe by name or attribute string; declare a Protocol in seqmix/capabilities.py and use "
        "isinstance:\n" + "\n".join(hits)
    )
