"""`snakemake --lint` is clean, with no waiver: every shell rule declares its software (one conda environment,
envs/seqmix.yaml) and takes the interpreter that starts the CLI as a param, not from a global.

Guards: the lint listed two lints per shell rule (162 at 81 rules): "Specify a conda environment or container
for each rule" and "Shell command directly uses variable SEQMIX_CLI from outside of the rule". The param must
stay out of Snakemake's params rerun trigger (moving the checkout or its venv re-runs nothing), the environment
file must list what the package needs, and its post-deploy script installs seqmix only from a checkout."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys

import pytest
import tomllib
import yaml
from packaging.requirements import Requirement

from tests.conftest import ROOT, copy_workflow, snakemake_local

ENV_FILE = ROOT / "envs" / "seqmix.yaml"
POST_DEPLOY = ROOT / "envs" / "seqmix.post-deploy.sh"
# no job imports snakemake: it is the package's dependency for the user's shell, not the rules'
NOT_IN_RULE_ENV = {"snakemake"}


def test_lint_is_clean():
    r = subprocess.run(
        [sys.executable, "-m", "snakemake", "--workflow-profile", "profiles/local", "--config", "scale=tiny", "--lint"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    log = r.stdout + r.stderr
    lints = re.findall(r"^\s+\* (.+?):?$", log, flags=re.M)
    assert r.returncode == 0 and not lints, f"exit {r.returncode}; lints: {sorted(set(lints))}\n{log[-3000:]}"
    assert "Congratulations, your workflow is in a good condition!" in log


def _requirements(lines) -> dict[str, tuple[str, str]]:
    reqs = [Requirement(line) for line in lines]
    return {r.name.lower(): (str(r.specifier), str(r.marker or "")) for r in reqs}


def test_rule_environment_lists_the_package_dependencies():
    """Guards drift: the environment the rules run in under `--sdm conda` has each runtime dependency of
    pyproject.toml, with the same version bounds and markers, and nothing else from pip."""
    env = yaml.safe_load(ENV_FILE.read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    assert "pip" in env["dependencies"] and any(str(d).startswith("python=") for d in env["dependencies"])
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    wanted = {k: v for k, v in _requirements(project).items() if k not in NOT_IN_RULE_ENV}
    assert _requirements(pip) == wanted


def test_every_shell_rule_names_the_environment_and_the_cli_param():
    text = "\n".join(p.read_text() for p in (ROOT / "workflow" / "rules").glob("*.smk"))
    shells = re.findall(r"^\s+shell:\s*\n\s+(.+)$", text, flags=re.M)
    envs = re.findall(r"^\s+conda:\s*\n\s+(.+)$", text, flags=re.M)
    clis = re.findall(r"^\s+cli=get_seqmix_cli,$", text, flags=re.M)
    assert len(shells) >= 9 and all(s.startswith('"{params.cli} ') for s in shells), shells
    assert envs == ['"../../envs/seqmix.yaml"'] * len(shells) and len(clis) == len(shells)


def test_post_deploy_installs_only_from_the_checkout(tmp_path):
    """Snakemake runs the script from its working directory: anywhere but the checkout's root it stops with a
    message (before pip), instead of installing whatever package lies there."""
    r = subprocess.run(["bash", str(POST_DEPLOY)], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "is not the seqmix checkout" in r.stderr, r.stderr
    assert POST_DEPLOY.stat().st_mode & 0o111, "Snakemake runs it by its shebang"


def _metadata(workdir, output: str) -> dict:
    key = base64.urlsafe_b64encode(output.encode()).decode()
    return json.loads((workdir / ".snakemake" / "metadata" / key).read_text())


@pytest.mark.integration  # one job of the DAG; 25-50 s measured on the shared 2-core box
def test_interpreter_is_in_the_command_but_not_a_rerun_trigger(tmp_path):
    """A job's recorded shell command starts with the interpreter that runs Snakemake (a printed command runs as
    printed), while its recorded params, which Snakemake compares to re-run jobs whose params changed, do not
    hold it: the `cli` param is derived from the job's settings (get_seqmix_cli takes `threads`)."""
    wf = copy_workflow(tmp_path)
    target = "results/tiny/heads/theory/summary.csv"
    r = snakemake_local(wf, target, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    meta = _metadata(wf, target)
    assert meta["rule"] == "heads_theory"
    assert meta["shellcmd"].startswith(f"{sys.executable} -m seqmix artefact "), meta["shellcmd"]
    assert meta["params"] and not any(sys.executable in p or "-m seqmix" in p for p in meta["params"]), meta
    assert os.path.getsize(wf / target) > 0
