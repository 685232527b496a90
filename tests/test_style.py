"""The code style `make test` enforces: ruff (lint and format) over the Python, snakefmt over the workflow.

Settings live in pyproject.toml ([tool.ruff], [tool.snakefmt]). Fix with
``ruff check --fix src tests benchmarks && ruff format src tests benchmarks && snakefmt Snakefile workflow/rules``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def run(tool: str, *args: str) -> subprocess.CompletedProcess:
    exe = BIN / tool
    if not exe.exists():
        pytest.fail(f"{exe} is missing: `make test` installs it from envs/requirements-cpu.txt")
    return subprocess.run([str(exe), *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(
    "tool,args",
    [
        ("ruff", ("check", "src", "tests", "benchmarks")),
        ("ruff", ("format", "--check", "src", "tests", "benchmarks")),
        ("snakefmt", ("--check", "Snakefile", "workflow/rules")),
    ],
    ids=["ruff-lint", "ruff-format", "snakefmt"],
)
def test_style(tool, args):
    out = run(tool, *args)
    assert out.returncode == 0, f"{tool} {' '.join(args)} failed:\n{out.stdout}\n{out.stderr}"
