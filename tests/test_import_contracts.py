"""The import contracts hold: one-way layers, the two sides, independent papers, pure theory, no circles, one
importer per heavy dependency (``[tool.importlinter]`` in pyproject.toml, checked with import-linter's
``lint-imports``); each contract can fail (one planted bad import per contract, in a copy of the tree); and
probes ask for capabilities with ``isinstance``, never by registered name or attribute strings."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

PROBE_PACKAGES = ("tasks", "diagnostics", "papers")
# name-based probing: the registered name, or an attribute looked up by a string literal
NAME_PROBES = re.compile(r"registered_name|\bhasattr\(|\bgetattr\([^,()]+,\s*[\"']")


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` over ``root/src`` with this checkout's contracts (whatever the venv's editable install
    points at)."""
    exe = Path(sys.executable).parent / "lint-imports"
    assert exe.exists(), f"{exe} missing: pip install import-linter (pinned in envs/requirements-cpu.txt)"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root / "src"), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run(
        [str(exe), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def contract_names() -> dict[str, str]:
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    return {c["id"]: c["name"] for c in contracts}


def test_import_contracts_hold():
    r = lint_imports(ROOT)
    assert r.returncode == 0, f"lint-imports failed:\n{r.stdout[-6000:]}\n{r.stderr[-2000:]}"


# One bad import per contract, chosen so that it breaks that contract (and, where the layers allow the
# import, only that one): module file under src/seqmix, the line appended to it.
PLANTED = {
    "layers": ("mixers/base.py", "import seqmix.models.bare"),
    "two-sides": ("pipeline/stages.py", "import seqmix.training.loop"),
    "papers-independent": ("papers/sessa/tables.py", "import seqmix.papers.heads.tables"),
    "theory-pure": ("papers/sessa/theory/solve.py", "import seqmix.tasks.symbolsoup"),
    "probes-through-capabilities": ("tasks/symbolsoup.py", "import seqmix.models.lm"),
    "no-circles": ("config/base.py", "import seqmix.config.loading"),
    "mlflow-in-tracking": ("claims/engine.py", "import mlflow"),
    "submitit-in-dispatch": ("pipeline/runner.py", "import submitit"),
}
# the pipeline side into the model stack, from each of its packages (each alone breaks "two-sides")
PIPELINE_INTO_MODELS = {
    "claims": ("claims/engine.py", "import seqmix.models.lm"),
    "tracking": ("tracking/runs.py", "import seqmix.mixers.ssm"),
    "report": ("report/tables.py", "import seqmix.tasks.symbolsoup"),
    "config": ("config/components.py", "import seqmix.ops.dispatch"),
    "cli": ("cli/status.py", "import seqmix.training.loop"),
}


def test_every_contract_has_a_planted_import():
    assert set(PLANTED) == set(contract_names())


def _broken_with(tmp_path: Path, module: str, line: str) -> set[str]:
    import shutil

    shutil.copytree(ROOT / "src" / "seqmix", tmp_path / "src" / "seqmix", ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / "src" / "seqmix" / module
    target.write_text(target.read_text() + f"\n{line}  # planted by tests/test_import_contracts.py\n")
    r = lint_imports(tmp_path)
    assert r.returncode != 0, f"planting {line!r} in {module} broke no contract:\n{r.stdout[-3000:]}"
    tail = " ".join(r.stdout.split("Broken contracts", 1)[-1].split())  # lint-imports wraps long names
    return {cid for cid, name in contract_names().items() if " ".join(name.split()) in tail}


@pytest.mark.parametrize("contract", sorted(PLANTED))
def test_each_contract_can_fail(tmp_path, contract):
    broken = _broken_with(tmp_path, *PLANTED[contract])
    assert contract in broken, f"{PLANTED[contract]} did not break {contract!r} (broke {sorted(broken)})"
    if contract != "layers":  # the layers allow these imports: the named contract alone catches them
        assert broken == {contract}, f"{PLANTED[contract]} broke {sorted(broken)}, expected only {contract!r}"


@pytest.mark.parametrize("package", sorted(PIPELINE_INTO_MODELS))
def test_pipeline_side_into_model_side_fails(tmp_path, package):
    assert "two-sides" in _broken_with(tmp_path, *PIPELINE_INTO_MODELS[package])


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
