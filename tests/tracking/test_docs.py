"""The README's MLflow commands: servers on loopback unless behind MLflow's basic-auth app, and the UI
command pointing at the artifact store the embedded store really uses."""

from __future__ import annotations

import re

from seqmix.tracking import store as tracking_store
from tests.conftest import ROOT


def _commands(tool: str) -> list[str]:
    """Every `mlflow <tool>` command of the README, continuation lines joined."""
    text = (ROOT / "README.md").read_text().replace("\\\n", " ")
    return [m.group(0) for m in re.finditer(rf"^(?:\S*/)?mlflow {tool}\b.*$", text, flags=re.M)]


def test_readme_servers_listen_on_loopback_unless_authenticated():
    """Guards: the README's `mlflow server --host 0.0.0.0` exposed an unauthenticated server."""
    servers = _commands("server")
    assert servers, "README.md shows no `mlflow server` command"
    for cmd in servers:
        host = re.search(r"--host (\S+)", cmd)
        assert host, f"README.md: `{cmd}` sets no --host (MLflow's default may change)"
        if host.group(1) != "127.0.0.1":
            assert "--app-name basic-auth" in cmd, f"README.md: `{cmd}` listens beyond loopback without basic-auth"
    assert any("--app-name basic-auth" in cmd for cmd in servers), "README.md: no basic-auth server for shared use"


def test_readme_ui_command_serves_the_embedded_artifact_store():
    """Guards: artifacts addressed as mlflow-artifacts:/ are only found with the matching --artifacts-destination."""
    (ui,) = _commands("ui")
    dest = tracking_store.artifact_root("results").as_posix()
    assert f"--artifacts-destination {dest}" in ui, f"README.md: `{ui}` must serve {dest}"
