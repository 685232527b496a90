"""The warm worker (seqmix.pipeline.warm): a job run through it sees its own argv, directory, environment and
file descriptors and returns its exit status; it falls back to a cold run when no server may serve it; a job
whose client goes away is killed."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from seqmix.pipeline import warm
from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="the warm worker needs Linux pidfds")


@pytest.fixture(scope="module")
def server_path():
    """One warm server for the module (socket in a short temporary directory), torn down after it."""
    import tempfile

    sockdir = Path(tempfile.mkdtemp(prefix="wt", dir="/tmp"))
    path = sockdir / "s.sock"
    proc = subprocess.Popen(
        [sys.executable, "-m", "seqmix.pipeline.warm", "serve", str(path), str(os.getpid())],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "src")])},
    )
    for _ in range(600):
        if path.exists():
            break
        time.sleep(0.05)
    yield path
    path.unlink(missing_ok=True)
    proc.wait(timeout=30)
    sockdir.rmdir()


@pytest.fixture
def server(server_path, monkeypatch):
    monkeypatch.setenv(warm.SOCKET_ENV, f"{socket.gethostname()}:{server_path}")
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    return server_path


def run_client(entry: str, argv: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """A client process (as `python -m seqmix` is): try_run, printing 'COLD' when no server took the job."""
    code = (
        "import sys; from seqmix.pipeline import warm; "
        f"r = warm.try_run({argv!r}, entry={entry!r}); print('COLD') if r is None else sys.exit(r)"
    )
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120, env=env or os.environ
    )


def test_job_sees_its_own_process_state(server, tmp_path):
    env = {**os.environ, "WARM_TEST_VAR": "from-the-client"}
    out = run_client("tests.pipeline.warm_target:report", ["3", "x y"], tmp_path, env)
    assert out.returncode == 3, out.stderr
    assert f"argv=['3', 'x y'] cwd={tmp_path} var=from-the-client" in out.stdout
    assert "to stderr" in out.stderr
    assert "COLD" not in out.stdout
    # the job ran in another process than the client's interpreter would (a fork of the server)
    job_pid = int(out.stdout.rsplit("pid=", 1)[1])
    assert job_pid != os.getpid()
    assert run_client("tests.pipeline.warm_target:report", ["0"], tmp_path).returncode == 0


def test_a_crash_is_a_failed_job_with_its_traceback(server, tmp_path):
    out = run_client("tests.pipeline.warm_target:crash", [], tmp_path)
    assert out.returncode == 1
    assert "RuntimeError: the job failed" in out.stderr


def test_the_seqmix_cli_runs_warm(server, tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "seqmix", "list", "mixers"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "s6" in out.stdout


def test_a_job_dies_with_its_client(server, tmp_path):
    pidfile = tmp_path / "job.pid"
    code = (
        f"from seqmix.pipeline import warm; warm.try_run([{str(pidfile)!r}], entry='tests.pipeline.warm_target:linger')"
    )
    client = subprocess.Popen([sys.executable, "-c", code], cwd=tmp_path)
    for _ in range(600):
        if pidfile.exists() and pidfile.read_text():
            break
        time.sleep(0.05)
    job = int(pidfile.read_text())
    client.send_signal(signal.SIGTERM)  # what Snakemake does to a cancelled job
    client.wait(timeout=30)
    for _ in range(200):
        try:
            os.kill(job, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"job {job} outlived its client")
    assert pidfile.read_text() == str(job)


@pytest.mark.parametrize(
    "value,slurm",
    [("", None), ("0", None), ("another-host:/tmp/x.sock", None), ("HOST:/nonexistent/x.sock", None), ("HOST:", "7")],
)
def test_no_server_means_a_cold_run(monkeypatch, value, slurm):
    monkeypatch.setenv(warm.SOCKET_ENV, value.replace("HOST", socket.gethostname()))
    if slurm:
        monkeypatch.setenv("SLURM_JOB_ID", slurm)
    else:
        monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    assert warm.try_run(["list"]) is None


def test_inside_a_slurm_job_the_server_is_not_used(server, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "12")  # the job must run inside its allocation, not on the submit host
    assert warm.try_run(["0"], entry="tests.pipeline.warm_target:report") is None


def test_stop_removes_the_socket_and_the_server_exits(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.delenv(warm.SOCKET_ENV, raising=False)
    sockdir = tempfile.mkdtemp(prefix="wt", dir="/tmp")
    path = warm.start(sockdir)
    assert os.environ[warm.SOCKET_ENV].endswith(path)
    for _ in range(600):
        if Path(path).exists():
            break
        time.sleep(0.05)
    warm.stop()
    assert warm.SOCKET_ENV not in os.environ
    assert not Path(path).exists()
    monkeypatch.setenv(warm.SOCKET_ENV, "0")
    assert warm.start(sockdir) is None
    os.rmdir(sockdir)
