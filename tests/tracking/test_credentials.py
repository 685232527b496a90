"""``seqmix mlflow-init|mlflow-sync --uri`` with a password in the URI (typed by hand; the DAG's config refuses
one): neither the marker JSON they write nor their log holds it (issue 26, item 8). On main both JSONs had
``"uri"`` verbatim, and MLflow's error, which quotes the request URL, reached the log as it was.

A stand-in server answers the health check and drops every API request, so MLflow fails with the URL in its
message; nothing else is needed (a sync with no buffers makes no API call).
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import socket
import subprocess
import sys
import threading

SECRET = "s3cret"


class _HealthOnly(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.rstrip("/") == "/health":
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"OK")
        else:  # a dropped connection: MLflow's error then names the URL it requested
            self.close_connection = True

    do_POST = do_GET

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def health_only_server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _HealthOnly)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv.server_address[1]
    finally:
        srv.shutdown()
        srv.server_close()


def _seqmix(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, MLFLOW_HTTP_REQUEST_MAX_RETRIES="0")  # one attempt: the test needs the error only
    return subprocess.run([sys.executable, "-m", "seqmix", *args], capture_output=True, text=True, timeout=180, env=env)


def test_mlflow_init_writes_and_logs_the_uri_without_its_password(tmp_path):
    out = tmp_path / "init.json"
    with health_only_server() as port:
        uri = f"http://ann:{SECRET}@127.0.0.1:{port}"
        proc = _seqmix("mlflow-init", "--uri", uri, "--results", str(tmp_path), "--papers", "heads", "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    marker = json.loads(out.read_text())
    assert marker["uri"] == f"http://ann:***@127.0.0.1:{port}" and marker["reachable"] is False
    # MLflow's failure (quoting the request URL) reached the log, without the password
    assert f"http://ann:***@127.0.0.1:{port}/api/" in proc.stderr, proc.stderr[-2000:]
    assert SECRET not in proc.stderr + proc.stdout + out.read_text()


def test_mlflow_sync_writes_the_uri_without_its_password(tmp_path):
    """Also guards the health check: urllib took 'ann:s3cret@127.0.0.1' for the host name, so a URI with a
    login was always 'unreachable'."""
    out = tmp_path / "sync.json"
    with health_only_server() as port:
        uri = f"http://ann:{SECRET}@127.0.0.1:{port}"
        proc = _seqmix("mlflow-sync", "--uri", uri, "--results", str(tmp_path), "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    counts = json.loads(out.read_text())
    assert counts["uri"] == f"http://ann:***@127.0.0.1:{port}" and counts["buffers"] == 0
    assert SECRET not in proc.stderr + proc.stdout + out.read_text()


def test_mlflow_sync_with_the_server_down_names_it_without_the_password(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    out = tmp_path / "sync.json"
    proc = _seqmix("mlflow-sync", "--uri", f"https://ann:{SECRET}@127.0.0.1:{port}", "--results", str(tmp_path),
                   "--out", str(out))  # fmt: skip
    assert proc.returncode != 0 and not out.exists()
    assert f"mlflow_sync: could not reach https://ann:***@127.0.0.1:{port}" in proc.stderr, proc.stderr[-2000:]
    assert SECRET not in proc.stderr + proc.stdout
