"""A password in a tracking URI never reaches a message, a log or a file (issue 26, item 8).

``tracking.uri: http://user:password@host`` is refused at config load, but on main the refusal itself printed
the password: a value from Snakemake's ``--config`` is echoed by ``blame_command_line`` as the whole
``tracking`` block, and Snakemake writes that message to its log. A schema error quoting a refused URI did
the same. Each path below feeds the password ``s3cret`` and looks for it in everything written.
"""

from __future__ import annotations

import json

import pytest

from seqmix.config.artefacts import claims_spec
from seqmix.config.base import ConfigError, load_yaml
from seqmix.config.credentials import redact, redact_tracking, without_userinfo
from seqmix.config.leaves import Leaf, cell_run_config
from seqmix.config.loading import blame_command_line, load_all
from tests.conftest import copy_workflow, snakemake_local

SECRET = "s3cret"
URI = f"http://ann:{SECRET}@mlflow.lab:5000"


@pytest.mark.parametrize(
    "text, shown",
    [
        (URI, "http://ann:***@mlflow.lab:5000"),
        (f"{URI}/api/2.0/x?y=1", "http://ann:***@mlflow.lab:5000/api/2.0/x?y=1"),
        # an unescaped '@' in the password belongs to it (urllib.parse splits at the last '@')
        ("https://ann:p@ss@host/x", "https://ann:***@host/x"),
        ("https://ghp_token123@host", "https://***@host"),  # a lone userinfo is often a token: hidden whole
        (f"failed: '{URI}' does not match", "failed: 'http://ann:***@mlflow.lab:5000' does not match"),
        (json.dumps({"uri": URI, "b": 1}), json.dumps({"uri": "http://ann:***@mlflow.lab:5000", "b": 1})),
        ("a http://a:1@h and https://b:2@k end", "a http://a:***@h and https://b:***@k end"),
        ("sqlite:////abs/results/mlflow.db", "sqlite:////abs/results/mlflow.db"),
        ("http://mlflow.lab:5000/path@v2", "http://mlflow.lab:5000/path@v2"),  # an '@' after the host is no login
        ("mail ann@lab.org about it", "mail ann@lab.org about it"),
    ],
)
def test_redact_hides_the_password_and_keeps_the_rest(text, shown):
    assert redact(text) == shown
    assert redact(shown) == shown  # idempotent: a message redacted twice stays the same


def test_the_health_probe_url_has_no_login_and_the_run_config_block_none():
    assert without_userinfo(f"{URI}/") == "http://mlflow.lab:5000/"
    block = {"uri": URI, "system_metrics": True}
    assert redact_tracking(block) == {"uri": "http://ann:***@mlflow.lab:5000", "system_metrics": True}
    assert block["uri"] == URI  # the caller's block is left alone


def _with_command_line_tracking(tree, tracking: dict) -> tuple[dict, str]:
    """The global config as Snakemake merges it for ``--config tracking={...}`` (the file's, then the value)."""
    file = str(tree / "config" / "config.yaml")
    config = load_yaml(file)
    config["tracking"] = {**config["tracking"], **tracking}
    return config, file


def test_a_command_line_uri_with_a_password_is_refused_without_showing_it(tree):
    """Guards: `--config tracking={uri: http://ann:s3cret@...}` was refused with a message that printed the
    whole tracking block, password included (and Snakemake logged it)."""
    config, file = _with_command_line_tracking(tree, {"uri": URI})
    with pytest.raises(ConfigError) as e:
        load_all(config, root=tree, config_file=file)
    msg = blame_command_line(e.value, config, file)
    assert msg.startswith("--config tracking=") and "(command line, over " in msg, msg
    assert "ann:***@mlflow.lab" in msg and "MLFLOW_TRACKING_PASSWORD" in msg, msg
    assert SECRET not in msg and SECRET not in str(e.value)


def test_a_schema_error_quoting_a_uri_hides_its_password(tree):
    """Guards: a URI the schema's pattern refuses was quoted whole in the error ('ftp://ann:s3cret@...' does
    not match ...), on the command line and in the file alike."""
    config, file = _with_command_line_tracking(tree, {"uri": f"ftp://ann:{SECRET}@lab/x"})
    with pytest.raises(ConfigError) as e:
        load_all(config, root=tree, config_file=file)
    assert e.value.keypath == "tracking.uri" and "does not match" in e.value.message
    assert "ftp://ann:***@lab/x" in e.value.message and SECRET not in str(e.value)
    assert SECRET not in blame_command_line(e.value, config, file)


def test_run_configs_never_carry_the_password(tmp_path):
    """The run configs the DAG writes beside the results (a cell's, the claims step's) name the URI without
    its password, should one get past the config check (MLflow takes credentials from the environment)."""
    cfg = {"task": {"name": "rotation_teacher"}, "seed": 0}
    leaf = Leaf("heads", "exp1", "k2", "H1", 0, cfg)
    settings = {"results": str(tmp_path), "tracking": {"uri": URI}}
    run = cell_run_config("heads", "exp1", "k2-0", [leaf], "tiny", settings)
    assert run["tracking"]["uri"] == "http://ann:***@mlflow.lab:5000"
    paper = {"experiments": {"exp1": {}}, "claims": []}
    spec = claims_spec("heads", paper, "tiny", tmp_path, {"uri": URI})
    assert SECRET not in json.dumps(run) + json.dumps(spec)
    assert settings["tracking"]["uri"] == URI


def test_snakemake_refuses_a_command_line_password_and_logs_none_of_it(tmp_path):
    """The whole path: `snakemake --config tracking={uri: ...}` stops before any job with the --config value
    named, and neither its console (which showed the password on main) nor anything it leaves under
    .snakemake/ holds the password."""
    work = copy_workflow(tmp_path)
    proc = snakemake_local(work, "-n", "--config", f"tracking={{uri: {URI}}}", timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert "--config tracking=" in out and "ann:***@mlflow.lab" in out, out
    logs = [p.read_text(errors="replace") for p in (work / ".snakemake").rglob("*") if p.is_file()]
    assert SECRET not in out and not any(SECRET in text for text in logs)
