"""Data-parallel training (DistributedDataParallel): 2 gloo processes on CPU follow the loss curve and end with
the weights of 1 process (same global batch and seed) within floating-point tolerance, for tensor batches
(heads) and structured ones (superposition: a tuple input and a dataclass target); only rank 0 writes files;
gloo is chosen for a CPU runtime and NCCL only for a CUDA one."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from seqmix.config.base import load_yaml
from seqmix.config.leaves import cell_run_config, expand_cells
from seqmix.training import distributed
from tests.conftest import ROOT

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


def _superposition_run(results: Path) -> dict:
    paper = load_yaml(ROOT / "config" / "papers" / "superposition.yaml")
    exp = paper["experiments"]["e1"]
    paper["experiments"] = {"e1": exp}
    exp["variants"] = {"sup": exp["variants"]["sup"]}
    exp["scales"]["tiny"].update(seeds=[42], cell_size=1)
    exp["scales"]["tiny"]["set"].update(
        train={"steps": 40, "batch": 64, "log_every": 5, "checkpoint_every": 40}, eval={"every": 0}
    )
    (name, cell), leaves = next(iter(expand_cells("superposition", paper, "tiny").items()))
    return cell_run_config(
        "superposition",
        name,
        cell,
        leaves,
        "tiny",
        {"results": str(results), "tracking": {"uri": "none"}, "device": "cpu"},
    )


def _launch(run: dict, tmp: Path, world: int, force_gloo: bool = True) -> list[subprocess.CompletedProcess]:
    run_path = tmp / "run.json"
    run_path.write_text(json.dumps(run))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for r in range(world):
        env = dict(os.environ, OMP_NUM_THREADS="1")
        if world > 1:
            env.update(
                RANK=str(r), WORLD_SIZE=str(world), LOCAL_RANK=str(r), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)
            )
            if force_gloo:
                env["SEQMIX_DIST_BACKEND"] = "gloo"
            else:
                env.pop("SEQMIX_DIST_BACKEND", None)
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "seqmix", "train", "--run", str(run_path), "--out", str(tmp / "cell.json")],
                env=env,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
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


def test_structured_batches_two_processes_equal_one(tmp_path):
    """The cascade's batches are ((adj, root), GraphBatch): every tensor is sharded; the backend comes from the
    runtime's device (cpu -> gloo), not from the environment."""
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir(), two.mkdir()
    runs = {d: _superposition_run(d / "results") for d in (one, two)}
    for r in _launch(runs[one], one, 1) + _launch(runs[two], two, 2, force_gloo=False):
        assert r.returncode == 0, r.stderr[-3000:]
    leaf1, leaf2 = (Path(runs[d]["leaves"][0]["out_dir"]) for d in (one, two))
    h1, h2 = (json.loads((leaf / "history.json").read_text()) for leaf in (leaf1, leaf2))
    assert h1["step"] == h2["step"] == [5, 10, 15, 20, 25, 30, 35, 40]
    assert torch.allclose(torch.tensor(h1["train_loss"]), torch.tensor(h2["train_loss"]), rtol=1e-4, atol=1e-6)
    m1, m2 = (torch.load(leaf / "model.pt", weights_only=True) for leaf in (leaf1, leaf2))
    assert m1.keys() == m2.keys() and all(torch.allclose(m1[k], m2[k], rtol=1e-4, atol=1e-5) for k in m1)
    from seqmix.training.loop import build

    _, init = build(runs[two]["leaves"][0]["config"])  # the run trained: weights moved from the init
    assert max((m2[k] - v).abs().max().item() for k, v in init.state_dict().items()) > 1e-3


@pytest.mark.parametrize("device,expected", [("cpu", "gloo"), ("cuda", "nccl"), ("cuda:1", "nccl")])
def test_backend_follows_the_runtime_device(monkeypatch, device, expected):
    chosen = []
    monkeypatch.setattr(distributed.dist, "is_initialized", lambda: False)
    monkeypatch.setattr(distributed.dist, "init_process_group", lambda backend: chosen.append(backend))
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.delenv("SEQMIX_DIST_BACKEND", raising=False)
    assert distributed.init_from_env(device) is True
    assert chosen == [expected]


def test_wrap_is_the_model_itself_when_alone():
    model = torch.nn.Linear(2, 2)
    assert distributed.wrap(model) is model
    assert torch.equal(distributed.mean(torch.tensor(3.0)), torch.tensor(3.0))


def test_shard_slices_structured_batches():
    from seqmix.ops.graphs import GraphBatch

    b = GraphBatch(torch.arange(8).reshape(4, 2), torch.arange(4), torch.zeros(4, 3), torch.arange(4))
    parts = [distributed.shard(((b.adj, b.root), b), r, 2) for r in range(2)]
    assert torch.equal(parts[1][0][0], b.adj[2:]) and torch.equal(parts[1][1].V, b.V[2:])
    assert isinstance(parts[0][1], GraphBatch) and len(parts[0][1]) == 2


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
