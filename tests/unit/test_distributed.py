"""Data-parallel training: 2 gloo processes on CPU follow the loss curve of 1 process (same global batch
and seed), and only rank 0 writes files."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from seqmix.config import cell_run_config, expand_cells, load_yaml
from seqmix.training import distributed

from conftest import ROOT

pytestmark = pytest.mark.timeout(300)


def _run(results: Path) -> dict:
    paper = load_yaml(ROOT / "config" / "papers" / "heads.yaml")
    exp = paper["experiments"]["exp1"]
    paper["experiments"] = {"exp1": exp}
    exp["variants"] = {"k4": exp["variants"]["k4"]}
    exp["scales"]["tiny"].update(seeds=[0], sweep_values=[3], cell_size=1)
    exp["scales"]["tiny"]["set"]["train"].update(steps=120, batch=32, log_every=10, checkpoint_every=60)
    (name, cell), leaves = next(iter(expand_cells("heads", paper, "tiny").items()))
    return cell_run_config("heads", name, cell, leaves, "tiny", {"results": str(results), "tracking": {"uri": "none"}})


def _launch(run: dict, tmp: Path, world: int) -> list[subprocess.CompletedProcess]:
    run_path = tmp / "run.json"
    run_path.write_text(json.dumps(run))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for r in range(world):
        env = dict(os.environ, OMP_NUM_THREADS="1")
        if world > 1:
            env.update(RANK=str(r), WORLD_SIZE=str(world), LOCAL_RANK=str(r), MASTER_ADDR="127.0.0.1",
                       MASTER_PORT=str(port), SEQMIX_DIST_BACKEND="gloo")
        procs.append(subprocess.Popen([sys.executable, "-m", "seqmix", "train", "--run", str(run_path),
                                       "--out", str(tmp / "cell.json")], env=env, stderr=subprocess.PIPE, text=True))
    out = []
    for p in procs:
        _, err = p.communicate(timeout=240)
        out.append(subprocess.CompletedProcess(p.args, p.returncode, "", err))
    return out


def test_two_gloo_processes_equal_one(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir(), two.mkdir()
    r1 = _launch(_run(one / "results"), one, 1)
    r2 = _launch(_run(two / "results"), two, 2)
    for r in r1 + r2:
        assert r.returncode == 0, r.stderr[-3000:]
    leaf1 = Path(_run(one / "results")["leaves"][0]["out_dir"])
    leaf2 = Path(_run(two / "results")["leaves"][0]["out_dir"])
    h1 = json.loads((leaf1 / "history.json").read_text())
    h2 = json.loads((leaf2 / "history.json").read_text())
    assert h1["step"] == h2["step"]
    assert torch.allclose(torch.tensor(h1["train_loss"]), torch.tensor(h2["train_loss"]), rtol=1e-4, atol=1e-6)
    m1 = torch.load(leaf1 / "model.pt", weights_only=True)
    m2 = torch.load(leaf2 / "model.pt", weights_only=True)
    assert all(torch.allclose(m1[k], m2[k], rtol=1e-4, atol=1e-5) for k in m1)
    assert json.loads((two / "cell.json").read_text())["world_size"] == 2
    # the curve is a real training curve, not a constant
    assert h2["train_loss"][-1] < 0.5 * h2["train_loss"][0]


def test_shard_slices_the_global_batch():
    x = torch.arange(12).reshape(6, 2)
    parts = [distributed.shard(x, r, 3) for r in range(3)]
    assert torch.equal(torch.cat(parts), x)
    with pytest.raises(ValueError, match="does not divide"):
        distributed.shard(x, 0, 4)


def test_alone_without_environment(monkeypatch):
    for k in ("RANK", "WORLD_SIZE", "SLURM_JOB_ID"):
        monkeypatch.delenv(k, raising=False)
    assert distributed.init_from_env() is False
    assert distributed.world_size() == 1 and distributed.rank() == 0
