"""A warm worker for the DAG's local jobs: one process imports torch, pandas, matplotlib and the model stack
once, then forks a child per job, so a job pays milliseconds of start-up instead of seconds.

Why: on the tiny DAG (342 jobs) process start-up (interpreter and imports) was 23% of the job-seconds and the
artefact jobs spent most of their time importing, while training was 18%. Grouping a paper's artefacts into one
process would have cost the per-artefact reruns; a fork per job keeps every rule, input and output as it is.

How it is wired:

- the Snakefile's ``onstart`` (only when there are jobs to run, never on a dry run, and only with the local
  executor) calls :func:`start`, which spawns ``python -m seqmix.pipeline.warm serve SOCKET`` and sets
  ``SEQMIX_WARM=<host>:<socket>`` in Snakemake's environment, which every job's shell inherits; ``onsuccess``
  and ``onerror`` call :func:`stop`;
- ``python -m seqmix ...`` (``seqmix/__main__.py``) first calls :func:`try_run`: it hands its argv, working
  directory, environment and its stdin/stdout/stderr file descriptors (SCM_RIGHTS) to the server and waits for
  the exit status; the job's output goes to the same files as a cold job's, and its exit status is the same;
- the server forks a handler per job, the handler forks the job in a new session, and kills that session when
  the client goes away (Snakemake cancelled the job), so no job outlives its rule.

A job falls back to running cold (the ordinary ``python -m seqmix``) whenever the server is not there: not
started, another host, inside a SLURM job (SLURM_JOB_ID: the job must run inside its allocation), or
``SEQMIX_WARM=0``. The server refuses to serve (and exits) if its imports started a thread, since a fork of a
threaded process can deadlock. Only the standard library is imported by the client path.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import sys
import time

SOCKET_ENV = "SEQMIX_WARM"  # "<host>:<socket path>", or "0" to disable
T0_ENV = "SEQMIX_CLIENT_T0"  # the client's start (epoch seconds): a forked job's start-up counts from it
_HEADER = struct.Struct("!I")
COLD = b"cold"  # the server's answer when it will not run the job: the client runs it itself
# what the server imports before it serves: everything the jobs import at their start or on their first work
PRELOAD = (
    "numpy",
    "pandas",
    "torch",
    "torch._dynamo",  # imported by the first torch.optim optimizer a job builds: about 1.7 s a train job
    "matplotlib.pyplot",
    "scipy.linalg",
    "scipy.signal",
    "scipy.special",
    "seqmix.cli.main",
)


def _process_start_epoch() -> float:
    """This process's start (epoch seconds, Linux /proc), else now."""
    try:
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return time.time() - (uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return time.time()


def _address() -> str | None:
    """The socket path to use from this process, or None when a job must run cold."""
    value = os.environ.get(SOCKET_ENV, "")
    if not value or value == "0" or os.environ.get("SLURM_JOB_ID"):
        return None
    host, _, path = value.partition(":")
    return path if path and host == socket.gethostname() else None


def try_run(argv: list[str], entry: str = "seqmix.cli.main:main") -> int | None:
    """Run ``entry(argv)`` (``module:function``, by default the seqmix CLI) in the warm server and return its exit
    status; None when there is no server (the caller then runs the command itself)."""
    path = _address()
    if path is None:
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(5)
    try:
        conn.connect(path)
    except OSError:
        conn.close()
        return None
    request = json.dumps(
        {"argv": argv, "entry": entry, "cwd": os.getcwd(), "env": dict(os.environ), "t0": _process_start_epoch()}
    ).encode()
    try:
        socket.send_fds(conn, [_HEADER.pack(len(request)) + request], [0, 1, 2])
    except OSError:
        conn.close()
        return None  # the server went away before it took the job: nothing ran, so run it here
    conn.settimeout(None)
    reply = b""
    try:
        while chunk := conn.recv(64):
            reply += chunk
    except ConnectionResetError:
        # the server died with the job queued (not yet taken) or running: run it here; outputs are written
        # atomically, so a half-run job leaves nothing a cold run would trip on
        print(f"seqmix: the warm worker at {path} went away; running the job in this process", file=sys.stderr)
        return None
    finally:
        conn.close()
    if reply == COLD:
        return None
    try:
        return int(reply.decode())
    except ValueError:
        print(f"seqmix: the warm worker at {path} ended the job without a status", file=sys.stderr)
        return 1


# ---- the server -------------------------------------------------------------------------------------------


def _python_threads() -> int:
    """Python threads of this process. Native pools (OpenBLAS, OpenMP) register fork handlers and are safe to
    fork, as every DataLoader worker shows; a Python thread holding a lock is not."""
    import threading

    return threading.active_count()


def _receive(conn: socket.socket) -> tuple[dict, list[int]]:
    data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 20, 3)
    (size,) = _HEADER.unpack_from(data)
    body = data[_HEADER.size :]
    while len(body) < size:
        chunk = conn.recv(size - len(body))
        if not chunk:
            raise ConnectionError("the client went away mid-request")
        body += chunk
    return json.loads(body), fds


def _run_job(request: dict, fds: list[int]) -> None:
    """In the forked job: become the client's process (fds, directory, environment) and run the command."""
    os.setsid()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    os.environ[T0_ENV] = repr(request["t0"])
    sys.argv = ["seqmix", *request["argv"]]
    import numpy as np

    np.random.seed()  # a fresh process's global numpy state, not the server's
    code = 0
    try:
        import importlib

        module, _, function = request["entry"].partition(":")
        getattr(importlib.import_module(module), function)(request["argv"])
    except SystemExit as e:
        if e.code is None:
            code = 0
        elif isinstance(e.code, int):
            code = e.code
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except BaseException:  # the job's traceback goes to its log, as a cold job's would
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # a closed stream must not hide the exit status
                pass
    os._exit(code)


def _handle(conn: socket.socket) -> None:
    """In the handler: fork the job, report its exit status, kill it if the client goes away."""
    import select

    request, fds = _receive(conn)
    pid = os.fork()
    if pid == 0:
        conn.close()
        _run_job(request, fds)
    for fd in fds:
        os.close(fd)
    pidfd = os.pidfd_open(pid)
    ready, _, _ = select.select([conn, pidfd], [], [])
    if pidfd not in ready:  # the client closed its end: Snakemake cancelled the job
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    _, status = os.waitpid(pid, 0)
    try:
        conn.sendall(str(os.waitstatus_to_exitcode(status) % 256).encode())
    except OSError:
        pass
    os._exit(0)


def _send_cold(server: socket.socket) -> None:
    """Tell the jobs already queued to run themselves, and close."""
    server.setblocking(False)
    while True:
        try:
            conn, _ = server.accept()
        except OSError:
            break
        with conn:
            conn.sendall(COLD)
    server.close()


def serve(path: str, parent: int) -> None:
    """Listen on ``path`` (first, so early jobs queue instead of running cold), import :data:`PRELOAD`, then fork
    a handler per connection until ``parent`` (Snakemake) exits or the socket file is removed."""
    import importlib

    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(128)
    os.environ.setdefault("MPLBACKEND", "Agg")
    # a job sets its own torch threads (seqmix.pipeline.runner.setup); numpy's BLAS pool, sized at import, stays
    # at one thread, as in the tests (one thread per process is fastest for the tiny models)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        for name in PRELOAD:
            importlib.import_module(name)
        from seqmix import registry
        from seqmix.tracking import store

        registry.load_all()
        store.preload()
        from seqmix.config.loading import discover_papers

        registry.import_papers(discover_papers("."))
        refusal = f"{_python_threads()} Python threads after the imports" if _python_threads() != 1 else ""
    except Exception as e:  # any failure here means: no warm worker, every job runs cold
        refusal = f"the imports failed ({type(e).__name__}: {e})"
    if refusal:
        print(f"seqmix warm worker: {refusal}; jobs run cold", file=sys.stderr)
        os.unlink(path)
        _send_cold(server)
        return
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # handlers are reaped by the kernel
    server.settimeout(1.0)
    while os.getppid() == parent and os.path.exists(path):
        try:
            conn, _ = server.accept()
        except TimeoutError:
            continue
        conn.settimeout(None)
        if os.fork() == 0:
            server.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the handler waits for its job itself
            _handle(conn)
        conn.close()
    server.close()


def start(directory: str) -> str | None:
    """Spawn the server with its socket in ``directory`` (short: a Unix socket path has ~100 bytes) and set
    :data:`SOCKET_ENV` for the jobs; returns the socket path, or None when disabled by ``SEQMIX_WARM=0``."""
    import subprocess

    if os.environ.get(SOCKET_ENV) == "0":
        return None
    path = os.path.join(directory, f"seqmix-warm-{os.getpid()}.sock")  # one Snakemake process, one server
    subprocess.Popen(
        [sys.executable, "-m", "seqmix.pipeline.warm", "serve", path, str(os.getpid())],
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    os.environ[SOCKET_ENV] = f"{socket.gethostname()}:{path}"
    return path


def stop() -> None:
    """Remove the socket (the server exits within a second; running jobs finish) and unset the variable."""
    value = os.environ.pop(SOCKET_ENV, "")
    path = value.partition(":")[2]
    if path:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "serve":
        serve(sys.argv[2], int(sys.argv[3]))
    else:
        raise SystemExit("usage: python -m seqmix.pipeline.warm serve SOCKET PARENT_PID")
