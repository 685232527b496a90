"""The training loop: reproducible batches, checkpoint/resume, the NaN guard, schedules, cell skipping.

The resume contract (DESIGN.md): batch ``step`` is a pure function of (seed, step, rank), so a checkpoint
holds only model, optimizer, scheduler, step and loss history (``torch.load(weights_only=True)``), and a
run killed after checkpoint k and started again logs "resumed from step k" and ends bit-identical to an
uninterrupted run with the same thread count.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from seqmix.config.base import load_yaml
from seqmix.config.leaves import Leaf, cell_run_config, expand_leaves
from seqmix.io import config_hash, read_json, write_json
from seqmix.pipeline.stages import leaf_key, run_stage
from seqmix.rng import counter_generator
from seqmix.tasks.rotation_teacher import RotationTeacher
from seqmix.training import loop
from seqmix.training.guard import NonFiniteError
from seqmix.training.loop import build, train
from seqmix.training.optim import build_optimizer, build_scheduler, lr_factor

CKPT_KEYS = {"model", "optimizer", "scheduler", "step", "history", "config_hash"}


# ----------------------------------------------------------------------------- helpers


def leaf_cfg(
    k: int = 4,
    n: int = 8,
    heads: int = 2,
    steps: int = 60,
    batch: int = 16,
    checkpoint_every: int = 20,
    log_every: int = 5,
    optimizer: str = "adam",
    lr: float = 0.01,
    schedule: str = "cosine",
    seed: int = 0,
    test_size: int = 64,
    **train_extra,
) -> dict:
    """A leaf config shaped like the ones ``seqmix.config.leaves.expand_leaves`` makes from config/papers/heads.yaml."""
    return {
        "task": {"name": "rotation_teacher", "k": k, "n": n, "rho": 1.0, "test_size": test_size, "test_seed": 1},
        "model": {"name": "bare", "mixer": {"name": "factorized_linear_attention", "heads": heads, "r": None}},
        "train": {
            "optimizer": optimizer,
            "lr": lr,
            "schedule": schedule,
            "steps": steps,
            "batch": batch,
            "checkpoint_every": checkpoint_every,
            "log_every": log_every,
            "dtype": "float32",
            **train_extra,
        },
        "eval": {},
        "paper": "heads",
        "experiment": "exp1",
        "variant": f"k{k}",
        "point": f"H{heads}",
        "seed": seed,
        "sweep_value": heads,
    }


def make_leaf(cfg: dict) -> Leaf:
    return Leaf(cfg["paper"], cfg["experiment"], cfg["variant"], cfg["point"], cfg["seed"], cfg)


def run_config(results: Path, cfgs: list[dict], cell: str = "k4-0") -> dict:
    return cell_run_config(
        "heads",
        "exp1",
        cell,
        [make_leaf(c) for c in cfgs],
        "tiny",
        {"results": str(results), "tracking": {"uri": "none"}},
    )


def load(path: Path):
    return torch.load(path, weights_only=True, map_location="cpu")


def assert_state_equal(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for name in a:
        assert a[name].dtype == b[name].dtype, name
        assert torch.equal(a[name], b[name]), f"{name} differs"


def assert_optimizer_equal(a: dict, b: dict) -> None:
    assert a["param_groups"] == b["param_groups"]
    assert a["state"].keys() == b["state"].keys()
    for i in a["state"]:
        assert a["state"][i].keys() == b["state"][i].keys()
        for key, va in a["state"][i].items():
            assert torch.equal(va, b["state"][i][key]), f"optimizer state {i}.{key} differs"


def test_leaf_cfg_has_the_shape_of_an_expanded_leaf(root):
    """The hand-built helper mirrors what expand_leaves makes from the heads paper at scale tiny."""
    paper = load_yaml(root / "config" / "papers" / "heads.yaml")
    real = expand_leaves("heads", paper, "tiny")[0].config
    mine = leaf_cfg()
    assert set(mine) == set(real)
    assert set(mine["task"]) == set(real["task"])
    assert set(mine["model"]["mixer"]) == set(real["model"]["mixer"])
    assert set(mine["train"]) <= set(real["train"]) | {"warmup_steps", "grad_clip"}
    # a real tiny leaf trains through the same loop (a few steps only)
    task, model = build(real)
    x, y = task.batch(real["seed"], 0, 0, 4)
    assert model(x).shape == y.shape


# ----------------------------------------------------------------------------- batches


def test_batch_is_a_pure_function_of_seed_step_rank():
    task = RotationTeacher(k=4, n=8, test_size=16, test_seed=1)
    x1, y1 = task.batch(0, 5, 0, 16)
    torch.manual_seed(123)  # the global RNG plays no part
    torch.randn(100)
    x2, y2 = task.batch(0, 5, 0, 16)
    assert torch.equal(x1, x2) and torch.equal(y1, y2)
    assert x1.shape == (16, 8, 4) and x1.dtype == torch.float32
    assert torch.allclose(y1, task.targets(x1))


def test_batch_is_independent_of_call_order():
    a = RotationTeacher(k=4, n=8)
    b = RotationTeacher(k=4, n=8)
    first = {s: a.batch(3, s, 0, 8)[0] for s in (0, 1, 2, 7)}
    second = {s: b.batch(3, s, 0, 8)[0] for s in (7, 2, 0, 1)}
    for s in first:
        assert torch.equal(first[s], second[s])


def test_batch_leaves_global_rng_alone():
    task = RotationTeacher(k=4, n=8)
    state = torch.get_rng_state()
    task.batch(0, 0, 0, 8)
    task.test_set()
    assert torch.equal(state, torch.get_rng_state())


@pytest.mark.parametrize("other", [(1, 5, 0), (0, 6, 0), (0, 5, 1)], ids=["seed", "step", "rank"])
def test_different_seed_step_or_rank_give_different_batches(other):
    task = RotationTeacher(k=4, n=8)
    x, _ = task.batch(0, 5, 0, 16)
    x_other, _ = task.batch(*other, 16)
    assert not torch.equal(x, x_other)


def test_counter_generator_is_deterministic():
    a = torch.randn(10, generator=counter_generator("t", 1, 2, 3))
    b = torch.randn(10, generator=counter_generator("t", 1, 2, 3))
    c = torch.randn(10, generator=counter_generator("t", 1, 2, 4))
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_test_set_is_independent_of_training_seed():
    x1, y1 = RotationTeacher(k=4, n=8, test_size=32, test_seed=7).test_set()
    x2, y2 = RotationTeacher(k=4, n=8, test_size=32, test_seed=7).test_set()
    x3, _ = RotationTeacher(k=4, n=8, test_size=32, test_seed=8).test_set()
    assert torch.equal(x1, x2) and torch.equal(y1, y2) and not torch.equal(x1, x3)


# ----------------------------------------------------------------------------- determinism and checkpoints


def test_same_config_and_seed_give_the_same_numbers(tmp_path):
    cfg = leaf_cfg()
    h = config_hash(cfg)
    r1 = train(cfg, tmp_path / "a", h)
    r2 = train(cfg, tmp_path / "b", h)
    assert r1["history"] == r2["history"]
    assert r1["resumed_from"] is None and r2["resumed_from"] is None
    assert_state_equal(load(tmp_path / "a" / "model.pt"), load(tmp_path / "b" / "model.pt"))
    # a different seed is a different run
    other = leaf_cfg(seed=1)
    r3 = train(other, tmp_path / "c", config_hash(other))
    assert r3["history"]["train_loss"] != r1["history"]["train_loss"]


def test_history_logs_every_log_every_steps(tmp_path):
    cfg = leaf_cfg(steps=23, log_every=5, checkpoint_every=10)
    r = train(cfg, tmp_path, config_hash(cfg))
    assert r["history"]["step"] == [5, 10, 15, 20, 23]
    assert len(r["history"]["train_loss"]) == len(r["history"]["lr"]) == 5
    assert all(math.isfinite(v) for v in r["history"]["train_loss"])
    assert r["steps"] == 23


def test_checkpoint_contents_load_with_weights_only(tmp_path):
    cfg = leaf_cfg()
    h = config_hash(cfg)
    result = train(cfg, tmp_path, h)
    ckpt = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    assert set(ckpt) == CKPT_KEYS
    assert ckpt["step"] == cfg["train"]["steps"]
    assert ckpt["config_hash"] == h
    assert ckpt["history"] == result["history"]
    assert_state_equal(ckpt["model"], load(tmp_path / "model.pt"))
    _, model = build(cfg)
    assert set(ckpt["model"]) == set(model.state_dict())
    opt = build_optimizer(model.parameters(), cfg["train"])
    opt.load_state_dict(ckpt["optimizer"])
    sched = build_scheduler(opt, cfg["train"])
    sched.load_state_dict(ckpt["scheduler"])
    assert sched.last_epoch == cfg["train"]["steps"]
    assert not list(tmp_path.glob("*.tmp-*")), "a finished run leaves no temporary files"


def test_intermediate_checkpoint_holds_its_step(tmp_path):
    cfg = leaf_cfg(steps=60, checkpoint_every=20)
    train(cfg, tmp_path, config_hash(cfg), stop_after=30)
    ckpt = load(tmp_path / "checkpoint.pt")
    assert ckpt["step"] == 20
    assert ckpt["history"]["step"] == [5, 10, 15, 20]


def test_in_process_resume_is_bit_identical(tmp_path, caplog):
    cfg = leaf_cfg(steps=60, checkpoint_every=20)
    h = config_hash(cfg)
    part = train(cfg, tmp_path / "resumed", h, stop_after=30)
    assert part["resumed_from"] is None
    assert load(tmp_path / "resumed" / "checkpoint.pt")["step"] == 20
    with caplog.at_level("INFO", logger="seqmix.train"):
        resumed = train(cfg, tmp_path / "resumed", h)
    assert resumed["resumed_from"] == 20
    assert "resumed from step 20" in caplog.text
    fresh = train(cfg, tmp_path / "fresh", h)
    assert fresh["resumed_from"] is None
    assert resumed["history"] == fresh["history"]
    assert_state_equal(load(tmp_path / "resumed" / "model.pt"), load(tmp_path / "fresh" / "model.pt"))
    a, b = load(tmp_path / "resumed" / "checkpoint.pt"), load(tmp_path / "fresh" / "checkpoint.pt")
    assert a["step"] == b["step"] == 60
    assert_optimizer_equal(a["optimizer"], b["optimizer"])
    assert a["scheduler"] == b["scheduler"]


@pytest.mark.parametrize(
    "extra",
    [{}, {"schedule": "warmup_cosine", "warmup_steps": 8, "grad_clip": 0.5, "optimizer": "adamw"}],
    ids=["adam_cosine", "adamw_warmup_clip"],
)
def test_a_resumed_runs_checkpoint_has_the_bytes_of_an_uninterrupted_ones(tmp_path, extra):
    """Guards: the values were equal but the files were not. torch.save pickles a string once and refers back
    to it by object identity; after a resume the optimizer's and the history's keys were the strings unpickled
    from the checkpoint, not the interned ones an uninterrupted run uses, so the pickle (and its checksum,
    and the serialization id derived from it) differed."""
    cfg = leaf_cfg(steps=40, checkpoint_every=10, **extra)
    h = config_hash(cfg)
    train(cfg, tmp_path / "resumed", h, stop_after=25)
    assert train(cfg, tmp_path / "resumed", h)["resumed_from"] == 20
    train(cfg, tmp_path / "fresh", h)
    for name in ("checkpoint.pt", "checkpoint.prev.pt", "model.pt"):
        a, b = (tmp_path / "resumed" / name).read_bytes(), (tmp_path / "fresh" / name).read_bytes()
        assert a == b, f"{name}: {len(a)} and {len(b)} bytes differ"


def test_resume_with_warmup_and_grad_clip_is_bit_identical(tmp_path):
    cfg = leaf_cfg(
        steps=40,
        checkpoint_every=10,
        schedule="warmup_cosine",
        warmup_steps=8,
        grad_clip=0.5,
        optimizer="adamw",
        weight_decay=0.01,
    )
    h = config_hash(cfg)
    train(cfg, tmp_path / "resumed", h, stop_after=15)
    resumed = train(cfg, tmp_path / "resumed", h)
    fresh = train(cfg, tmp_path / "fresh", h)
    assert resumed["resumed_from"] == 10
    assert resumed["history"] == fresh["history"]
    assert_state_equal(load(tmp_path / "resumed" / "model.pt"), load(tmp_path / "fresh" / "model.pt"))


def test_checkpoint_of_another_config_is_ignored(tmp_path, caplog):
    old = leaf_cfg(steps=60, lr=0.02)
    train(old, tmp_path / "leaf", config_hash(old), stop_after=30)
    assert load(tmp_path / "leaf" / "checkpoint.pt")["step"] == 20
    new = leaf_cfg(steps=60)
    h = config_hash(new)
    assert h != config_hash(old)
    with caplog.at_level("INFO", logger="seqmix.train"):
        r = train(new, tmp_path / "leaf", h)
    assert r["resumed_from"] is None
    assert "resumed from" not in caplog.text
    fresh = train(new, tmp_path / "fresh", h)
    assert r["history"] == fresh["history"]
    assert_state_equal(load(tmp_path / "leaf" / "model.pt"), load(tmp_path / "fresh" / "model.pt"))
    assert load(tmp_path / "leaf" / "checkpoint.pt")["config_hash"] == h


def test_resuming_a_finished_run_changes_nothing(tmp_path):
    cfg = leaf_cfg()
    h = config_hash(cfg)
    first = train(cfg, tmp_path, h)
    before = load(tmp_path / "model.pt")
    again = train(cfg, tmp_path, h)
    assert again["resumed_from"] == cfg["train"]["steps"]
    assert again["history"] == first["history"]
    assert_state_equal(before, load(tmp_path / "model.pt"))


# ----------------------------------------------------------------------------- NaN / Inf guard


def test_nan_loss_names_step_and_tensor(tmp_path, monkeypatch):
    calls = {"n": 0}
    real_loss = RotationTeacher.loss

    def loss(self, pred, target):
        value = real_loss(self, pred, target)
        calls["n"] += 1
        return value * float("nan") if calls["n"] == 4 else value  # the 4th call is step 3

    monkeypatch.setattr(RotationTeacher, "loss", loss)
    cfg = leaf_cfg(steps=60, checkpoint_every=2)
    with pytest.raises(NonFiniteError, match=r"step 3\b.*'loss'") as exc:
        train(cfg, tmp_path, config_hash(cfg))
    assert "nan" in str(exc.value)
    # it stopped there: no step-3 update was checkpointed and no final model was written
    assert load(tmp_path / "checkpoint.pt")["step"] == 2
    assert not (tmp_path / "model.pt").exists()


def test_inf_grad_names_step_and_parameter(tmp_path, monkeypatch):
    calls = {"n": 0}

    def build_with_hook(cfg, runtime=None):
        task, model = build(cfg, runtime)

        def hook(grad):
            calls["n"] += 1
            return torch.full_like(grad, float("inf")) if calls["n"] == 4 else grad  # 4th backward = step 3

        model.mixer.V.register_hook(hook)
        return task, model

    monkeypatch.setattr(loop, "build", build_with_hook)
    cfg = leaf_cfg(steps=60)
    with pytest.raises(NonFiniteError, match=r"step 3\b.*'mixer\.V\.grad'"):
        train(cfg, tmp_path, config_hash(cfg))
    assert calls["n"] == 4
    assert not (tmp_path / "model.pt").exists()


def test_absurd_learning_rate_stops_with_a_named_tensor(tmp_path):
    cfg = leaf_cfg(optimizer="sgd", lr=1e30, schedule="constant")
    with pytest.raises(NonFiniteError) as exc:
        train(cfg, tmp_path, config_hash(cfg))
    msg = str(exc.value)
    m = re.match(r"step (\d+): tensor '([\w.]+)'", msg)
    assert m, msg
    assert int(m.group(1)) < cfg["train"]["steps"]
    assert m.group(2) == "loss" or m.group(2).endswith(".grad"), msg
    assert not (tmp_path / "model.pt").exists()


def test_nonfinite_error_is_a_floating_point_error():
    assert issubclass(NonFiniteError, FloatingPointError)


# ----------------------------------------------------------------------------- learning-rate schedule


def test_cosine_schedule_endpoints():
    total = 100
    assert lr_factor(0, total, "cosine") == 1.0
    assert lr_factor(total // 2, total, "cosine") == pytest.approx(0.5)
    assert lr_factor(total, total, "cosine") == pytest.approx(0.0, abs=1e-12)
    assert lr_factor(total + 10, total, "cosine") == pytest.approx(0.0, abs=1e-12)  # clamped, never rises again
    values = [lr_factor(s, total, "cosine") for s in range(total + 1)]
    assert all(a >= b for a, b in zip(values, values[1:]))
    assert 0 < lr_factor(total - 1, total, "cosine") < 1e-3


def test_warmup_ramps_then_decays():
    total, warmup = 100, 10
    ramp = [lr_factor(s, total, "warmup_cosine", warmup) for s in range(warmup)]
    assert ramp[0] == pytest.approx(1 / warmup)
    assert ramp[-1] == pytest.approx(1.0)
    assert all(a < b for a, b in zip(ramp, ramp[1:]))
    assert lr_factor(warmup, total, "warmup_cosine", warmup) == pytest.approx(1.0)
    assert lr_factor((warmup + total) // 2, total, "warmup_cosine", warmup) == pytest.approx(0.5)
    assert lr_factor(total, total, "warmup_cosine", warmup) == pytest.approx(0.0, abs=1e-12)


def test_constant_and_unknown_schedules():
    assert lr_factor(0, 10, "constant") == lr_factor(9, 10, "constant") == 1.0
    with pytest.raises(ValueError, match="unknown schedule"):
        lr_factor(0, 10, "linear")
    with pytest.raises(ValueError, match="unknown optimizer"):
        build_optimizer([torch.nn.Parameter(torch.zeros(1))], {"optimizer": "lbfgs", "lr": 0.1})


def test_scheduler_drives_the_optimizer_lr():
    p = torch.nn.Parameter(torch.zeros(2))
    tcfg = {"optimizer": "sgd", "lr": 0.1, "schedule": "cosine", "steps": 20}
    opt = build_optimizer([p], tcfg)
    sched = build_scheduler(opt, tcfg)
    for s in range(20):
        assert opt.param_groups[0]["lr"] == pytest.approx(0.1 * lr_factor(s, 20, "cosine"))
        opt.step()
        sched.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(0.0, abs=1e-12)


def test_logged_lr_follows_the_schedule(tmp_path):
    cfg = leaf_cfg(steps=60, log_every=5)
    hist = train(cfg, tmp_path, config_hash(cfg))["history"]
    for step, lr in zip(hist["step"], hist["lr"]):
        assert lr == pytest.approx(0.01 * lr_factor(step, 60, "cosine"))
    assert hist["lr"][-1] == pytest.approx(0.0, abs=1e-12)


# ----------------------------------------------------------------------------- train_cell: skip and rebuild


def test_train_cell_rebuilds_a_leaf_with_a_stale_marker(tmp_path):
    cfg = leaf_cfg(steps=40)
    run = run_config(tmp_path / "results", [cfg])
    leaf = run["leaves"][0]
    out = Path(leaf["out_dir"])
    # a half-written leaf of another config: stale marker and a checkpoint of another hash
    stale = leaf_cfg(steps=40, lr=0.05)
    train(stale, out, config_hash(stale), stop_after=25)
    write_json(out / "train.done.json", {"id": leaf["id"], "hash": config_hash(stale), "steps": 40})
    summary = run_stage("train", run)
    marker = read_json(out / "train.done.json")
    assert marker["hash"] == leaf["hash"] == config_hash(cfg)
    assert marker["resumed_from"] is None  # the other config's checkpoint was not used
    assert marker["device"] == "cpu"  # where it trained, for tables drawn on another machine
    assert "data_source" in marker  # the task's corpus label there (None for a task without one)
    assert summary["leaves"] == [{**leaf_key(leaf), **marker}]  # the one leaf key, train included
    assert summary["leaves"][0]["model"] == "factorized_linear_attention"
    fresh = train(cfg, tmp_path / "fresh", leaf["hash"])
    assert read_json(out / "history.json") == json.loads(json.dumps(fresh["history"]))
    assert_state_equal(load(out / "model.pt"), load(tmp_path / "fresh" / "model.pt"))


def test_train_cell_resumes_a_half_written_leaf(tmp_path):
    cfg = leaf_cfg(steps=40, checkpoint_every=10)
    run = run_config(tmp_path / "results", [cfg])
    leaf = run["leaves"][0]
    out = Path(leaf["out_dir"])
    train(cfg, out, leaf["hash"], stop_after=25)  # killed after the step-20 checkpoint, no marker
    assert not (out / "train.done.json").exists()
    run_stage("train", run)
    marker = read_json(out / "train.done.json")
    assert marker["hash"] == leaf["hash"]
    assert marker["resumed_from"] == 20
    train(cfg, tmp_path / "fresh", leaf["hash"])
    assert_state_equal(load(out / "model.pt"), load(tmp_path / "fresh" / "model.pt"))


def test_train_cell_skips_a_leaf_with_a_matching_marker(tmp_path, monkeypatch):
    cfgs = [leaf_cfg(steps=20, seed=0), leaf_cfg(steps=20, seed=1)]
    run = run_config(tmp_path / "results", cfgs)
    done_leaf, todo_leaf = run["leaves"]
    done_out = Path(done_leaf["out_dir"])
    sentinel = {"id": done_leaf["id"], "hash": done_leaf["hash"], "steps": 20, "sentinel": True}
    write_json(done_out / "train.done.json", sentinel, checksum=True)  # as the stage writes them
    write_json(done_out / "history.json", {"step": [], "train_loss": []}, checksum=True)
    trained = []
    real_train = loop.train

    def spy(cfg, out_dir, config_hash, **kw):
        trained.append(str(out_dir))
        return real_train(cfg, out_dir, config_hash, **kw)

    monkeypatch.setattr(loop, "train", spy)
    summary = run_stage("train", run)
    assert trained == [todo_leaf["out_dir"]]
    assert not (done_out / "model.pt").exists()
    assert summary["leaves"][0] == {**leaf_key(done_leaf), **sentinel}
    assert summary["leaves"][1]["hash"] == todo_leaf["hash"]
    assert read_json(done_out / "train.done.json") == sentinel
    # a second pass skips both
    trained.clear()
    run_stage("train", run)
    assert trained == []


# ----------------------------------------------------------------------------- killed and resumed job (CLI)


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "seqmix", *args, "--threads", "1"]


def _env() -> dict:
    return dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")


def _run(args: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(args)} failed:\n{proc.stderr[-4000:]}"
    return proc


@pytest.mark.timeout(180)
def test_killed_training_job_resumes_bit_identically(tmp_path):
    steps, every = 2000, 400
    cfg = leaf_cfg(k=8, n=16, heads=4, steps=steps, batch=64, checkpoint_every=every, log_every=50, test_size=128)

    def setup(name: str) -> tuple[Path, Path, Path, Path]:
        d = tmp_path / name
        run = run_config(d / "results", [cfg], cell="k8-0")
        write_json(d / "run.json", run)
        return d, d / "run.json", d / "cell.train.json", Path(run["leaves"][0]["out_dir"])

    d, run_json, cell_json, leaf_dir = setup("killed")
    ckpt = leaf_dir / "checkpoint.pt"
    train_cmd = _cli("train", "--run", str(run_json), "--out", str(cell_json))

    # 1. start, wait for the first checkpoint, SIGKILL before the end
    with open(d / "killed.stderr", "w") as err:
        proc = subprocess.Popen(train_cmd, cwd=d, env=_env(), stdout=subprocess.DEVNULL, stderr=err)
        try:
            deadline = time.monotonic() + 120
            while True:
                if proc.poll() is not None:
                    pytest.fail(
                        f"training ended (rc {proc.returncode}) before it could be killed after a "
                        f"checkpoint; increase steps. stderr:\n{(d / 'killed.stderr').read_text()[-3000:]}"
                    )
                if ckpt.exists() and load(ckpt)["step"] >= every:
                    break
                if time.monotonic() > deadline:
                    pytest.fail("no checkpoint within 120 s")
                time.sleep(0.02)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the job finished before it was killed; increase steps"

    # a killed job leaves nothing that looks done
    assert not cell_json.exists()
    assert not (leaf_dir / "train.done.json").exists()
    assert not (leaf_dir / "model.pt").exists()
    assert not (leaf_dir / "history.json").exists()
    k = load(ckpt)["step"]
    assert 1 <= k < steps and k % every == 0

    # 2. the same command again resumes from step k and completes
    resumed = _run(train_cmd, cwd=d)
    assert f"resumed from step {k}" in resumed.stderr
    cell = read_json(cell_json)
    assert cell["stage"] == "train" and [leaf["resumed_from"] for leaf in cell["leaves"]] == [k]
    assert read_json(leaf_dir / "train.done.json")["hash"] == config_hash(cfg)

    # 3. an uninterrupted run of the same config elsewhere
    d2, run_json2, cell_json2, leaf_dir2 = setup("fresh")
    fresh = _run(_cli("train", "--run", str(run_json2), "--out", str(cell_json2)), cwd=d2)
    assert "resumed from" not in fresh.stderr
    assert read_json(cell_json2)["leaves"][0]["resumed_from"] is None

    # bit-identical weights, optimizer state and loss history
    assert_state_equal(load(leaf_dir / "model.pt"), load(leaf_dir2 / "model.pt"))
    a, b = load(leaf_dir / "checkpoint.pt"), load(leaf_dir2 / "checkpoint.pt")
    assert a["step"] == b["step"] == steps
    assert_optimizer_equal(a["optimizer"], b["optimizer"])
    assert (leaf_dir / "checkpoint.pt").read_bytes() == (leaf_dir2 / "checkpoint.pt").read_bytes()  # and bytes
    h1, h2 = read_json(leaf_dir / "history.json"), read_json(leaf_dir2 / "history.json")
    assert h1["step"] == h2["step"] and h1["step"][-1] == steps
    assert h1["train_loss"] == h2["train_loss"]
    assert h1["lr"] == h2["lr"]

    # 4. evaluation gives identical metrics
    for dd, rj in ((d, run_json), (d2, run_json2)):
        _run(_cli("evaluate", "--run", str(rj), "--out", str(dd / "cell.evaluate.json")), cwd=dd)
    m1, m2 = read_json(leaf_dir / "metrics.json"), read_json(leaf_dir2 / "metrics.json")
    assert m1["hash"] == m2["hash"] == config_hash(cfg)
    assert set(m1["metrics"]) >= {"test_mse", "norm_mse", "mse_opt", "mse_ratio", "sup_err", "probe_err"}
    assert m1["metrics"] == m2["metrics"]
