"""The cluster tests run against a real one-node SLURM with accounting (scripts/slurm-local.sh).

- SLURM already up (`sinfo` answers): used as it is.
- SLURM installed, not running, and we are root: started for the session and stopped afterwards.
- Otherwise: skipped, with how to enable them. With SEQMIX_REQUIRE_SLURM=1 (what .ci/run sets) a
  missing SLURM is a failure, not a skip.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, copy_workflow  # noqa: F401  (re-exported to the cluster tests)

SCRIPT = ROOT / "scripts" / "slurm-local.sh"
HOW = (
    "SLURM is not available: install it once with `sudo scripts/slurm-local.sh install` "
    "(Debian/Ubuntu, root), then `make test` starts it; SEQMIX_REQUIRE_SLURM=1 makes this a failure"
)


def _sinfo_ok() -> bool:
    from seqmix.pipeline.dispatch import slurm_available

    return slurm_available()


@pytest.fixture(scope="session")
def slurm():
    required = os.environ.get("SEQMIX_REQUIRE_SLURM") == "1"
    started = False
    if not _sinfo_ok():
        if shutil.which("slurmctld") and os.geteuid() == 0:
            r = subprocess.run(["bash", str(SCRIPT), "up"], capture_output=True, text=True, timeout=180)
            if r.returncode != 0:
                pytest.fail(f"scripts/slurm-local.sh up failed:\n{r.stdout}\n{r.stderr}")
            started = True
        elif required:
            pytest.fail(HOW)
        else:
            pytest.skip(HOW)
    yield
    if started:
        subprocess.run(["bash", str(SCRIPT), "down"], capture_output=True, timeout=120)


def leaf_run_config(
    results: Path,
    *,
    k: int = 2,
    heads=(1, 2),
    steps: int = 600,
    checkpoint_every: int = 300,
    batch: int = 32,
    n: int = 16,
    uri: str = "none",
    task_extra: dict | None = None,
) -> dict:
    """A cell run-config of the heads Exp. I with the given leaves (one per H), seed 0."""
    from seqmix.config.base import load_yaml
    from seqmix.config.leaves import cell_run_config, expand_cells

    paper = load_yaml(ROOT / "config" / "papers" / "heads.yaml")
    exp = paper["experiments"]["exp1"]
    paper["experiments"] = {"exp1": exp}
    exp["variants"] = {f"k{k}": {"task": {"k": k, **(task_extra or {})}}}
    exp["scales"]["tiny"].update(seeds=[0], sweep_values=list(heads), cell_size=len(heads))
    exp["scales"]["tiny"]["set"]["task"].update(n=n)
    exp["scales"]["tiny"]["set"]["train"].update(steps=steps, checkpoint_every=checkpoint_every, batch=batch)
    (exp_name, cell), leaves = next(iter(expand_cells("heads", paper, "tiny").items()))
    return cell_run_config("heads", exp_name, cell, leaves, "tiny", {"results": str(results), "tracking": {"uri": uri}})


def dispatch_settings(folder: Path, cluster: str = "slurm", **over) -> dict:
    d = {
        "mode": "submitit",
        "cluster": cluster,
        "folder": str(folder),
        "poll_s": 0.5,
        "state_check_s": 1,
        "max_requeues": 3,
        "rules": ["train", "evaluate", "diagnose"],
        "resources": {"default": {"timeout_min": 10, "mem_gb": 1, "cpus_per_task": 1}},
    }
    d.update(over)
    return d


def write(path: Path, obj) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj))
    return path


def seqmix_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "seqmix", *args]


def small_heads_config(work: Path, dispatch: str) -> None:
    """Shrink the copied heads config to one cell of two leaves: 2-3 cluster jobs in all."""
    import re

    import yaml

    cfg = work / "config" / "config.yaml"
    text = re.sub(r"^papers: \[.*\]", "papers: [heads]", cfg.read_text(), flags=re.M)
    text = re.sub(r"^dispatch: \w+", f"dispatch: {dispatch}", text, flags=re.M)
    cfg.write_text(text.replace("poll_s: 2", "poll_s: 0.5").replace("state_check_s: 20", "state_check_s: 1"))
    p = work / "config" / "papers" / "heads.yaml"
    d = yaml.safe_load(p.read_text())
    exp = d["experiments"]["exp1"]
    exp["variants"] = {"k2": exp["variants"]["k2"]}
    exp["scales"]["tiny"].update(seeds=[0], sweep_values=[1, 2], cell_size=2)
    p.write_text(yaml.safe_dump(copy.deepcopy(d), sort_keys=False))
