"""Installing with no extra arguments: the pinned requirement set on Linux and macOS, and the Makefile's
fallback to the PyTorch CPU index.

Guards (each fails on main): main pinned ``torch==2.13.0+cpu`` (and triton) for every platform, so macOS
could not resolve the set at all, and a Linux machine whose pip reaches only PyPI failed unless the user
passed ``TORCH_INDEX``; now markers pick a torch that exists per platform, and ``make venv`` retries once
with the CPU index. The Makefile is run for real with a fake ``python`` that records its arguments (no
network, no install)."""

from __future__ import annotations

import os
import shutil
import subprocess
from importlib.metadata import version
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ROOT / "envs" / "requirements-cpu.txt"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"

ENVS = {
    "linux": {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64"},
    "darwin": {"sys_platform": "darwin", "platform_system": "Darwin", "platform_machine": "arm64"},
}


def _requirements() -> list[Requirement]:
    lines = [line.split("#", 1)[0].strip() for line in REQUIREMENTS.read_text().splitlines()]
    return [Requirement(line) for line in lines if line]


def _selected(platform: str, name: str) -> list[Requirement]:
    env = {**ENVS[platform], "python_version": "3.11", "python_full_version": "3.11.9"}
    return [r for r in _requirements() if r.name.lower() == name and (r.marker is None or r.marker.evaluate(env))]


def test_every_line_is_an_exact_pin():
    for r in _requirements():
        (spec,) = r.specifier
        assert spec.operator == "==", f"{r}: pin exactly"


def test_linux_gets_the_cpu_build_of_the_installed_torch():
    (torch,) = _selected("linux", "torch")
    pinned = Version(next(iter(torch.specifier)).version)
    assert pinned.local == "cpu", "PyPI's Linux torch is the CUDA build: the set pins the +cpu wheel"
    assert pinned == Version(version("torch")), "the pin is the torch this environment was resolved with"
    assert _selected("linux", "triton"), "Linux keeps triton (torch's CUDA kernels use it)"


def test_macos_gets_a_release_that_exists_on_pypi():
    (torch,) = _selected("darwin", "torch")
    pinned = Version(next(iter(torch.specifier)).version)
    assert pinned.local is None, "PyPI's macOS torch has no +cpu local version"
    assert pinned.public == Version(version("torch")).public
    assert not _selected("darwin", "triton"), "triton publishes no macOS wheels"
    assert all(Version(next(iter(r.specifier)).version).local is None for r in _requirements() if r.marker is None)


FAKE_PYTHON = """\
#!/usr/bin/env bash
# records every call; `-m pip install -r` fails until the PyTorch CPU index is among its arguments
echo "$*" >> "{log}"
if [[ "$*" == *"-r "* && "$*" != *"{index}"* && -n "$FAIL_FIRST" ]]; then
  echo "ERROR: No matching distribution found for torch==2.13.0+cpu" >&2; exit 1
fi
"""


@pytest.fixture
def fake_venv(tmp_path):
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text(FAKE_PYTHON.format(log=tmp_path / "calls.log", index=CPU_INDEX))
    python.chmod(0o755)
    return venv


def _make_venv(venv: Path, fail_first: bool, *args: str) -> tuple[list[str], str]:
    env = {**os.environ, "FAIL_FIRST": "1" if fail_first else ""}
    proc = subprocess.run(
        ["make", "-C", str(ROOT), "venv", f"VENV={venv}", *args], env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert (venv / ".seqmix-installed").exists()
    return (venv.parent / "calls.log").read_text().splitlines(), proc.stderr


def test_make_falls_back_to_the_cpu_index(fake_venv):
    calls, stderr = _make_venv(fake_venv, fail_first=True)
    installs = [c for c in calls if "-r " in c]
    assert len(installs) == 2, calls
    assert CPU_INDEX not in installs[0] and f"--extra-index-url {CPU_INDEX}" in installs[1]
    assert "retrying with the PyTorch CPU index" in stderr
    assert calls[-1].endswith("--no-deps -e ."), "seqmix itself is installed after the pinned set"


def test_make_tries_once_when_pip_finds_the_wheel(fake_venv):
    """CI (offline): the CPU wheel is found through pip's own configuration, so no second attempt."""
    calls, stderr = _make_venv(fake_venv, fail_first=False)
    installs = [c for c in calls if "-r " in c]
    assert len(installs) == 1 and CPU_INDEX not in installs[0] and "retrying" not in stderr


def test_make_dry_run_shows_the_fallback():
    proc = subprocess.run(
        ["make", "-C", str(ROOT), "-n", "-B", "venv", "VENV=/nonexistent/venv"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert f"--extra-index-url {CPU_INDEX} -r envs/requirements-cpu.txt" in proc.stdout
