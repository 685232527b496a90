"""``train.lr_stages``: constant-rate stages that restart from the best validation weights with a fresh
optimizer (seqmix.training.lr_stages; the rotations paper's three-stage schedule, rotations spec U4).

Guards: the restart really loads the best weights and clears the optimizer (stage 2's Adam step count starts
at zero), the finished model is the best one, and the resume contract holds across stages: a run killed at a
stage boundary or inside a stage ends bit-identical to an uninterrupted run. Before lr_stages existed the key
was ignored by the loop (one constant rate, no validation), so every test here failed."""

from __future__ import annotations

import pytest
import torch

from seqmix.io import config_hash
from seqmix.training.loop import train
from seqmix.training.lr_stages import plan_of, validation_loss


def load(path):
    return torch.load(path, weights_only=True, map_location="cpu")


def assert_state_equal(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for name in a:
        assert torch.equal(a[name], b[name]), f"{name} differs"


def assert_optimizer_equal(a: dict, b: dict) -> None:
    assert a["param_groups"] == b["param_groups"] and a["state"].keys() == b["state"].keys()
    for i in a["state"]:
        for key, va in a["state"][i].items():
            assert torch.equal(va, b["state"][i][key]), f"optimizer state {i}.{key} differs"


def leaf_cfg(steps: int = 60, schedule: str = "cosine", lr: float = 0.01, **train_extra) -> dict:
    """A small heads-paper leaf (as tests/training/test_loop.py builds): a rotation teacher, 2 heads."""
    return {
        "task": {"name": "rotation_teacher", "k": 4, "n": 8, "rho": 1.0, "test_size": 64, "test_seed": 1},
        "model": {"name": "bare", "mixer": {"name": "factorized_linear_attention", "heads": 2, "r": None}},
        "train": {
            "optimizer": "adam",
            "lr": lr,
            "schedule": schedule,
            "steps": steps,
            "batch": 16,
            "log_every": 5,
            "dtype": "float32",
            **train_extra,
        },
        "eval": {},
        "paper": "heads",
        "experiment": "exp1",
        "variant": "k4",
        "point": "H2",
        "seed": 0,
        "sweep_value": 2,
    }


STAGES = [{"steps": 30, "lr": 0.01}, {"steps": 20, "lr": 0.003}, {"steps": 10, "lr": 0.001}]


def staged_cfg(**extra) -> dict:
    return leaf_cfg(
        steps=60, checkpoint_every=10, schedule="constant", lr=0.01, lr_stages=STAGES, validate_every=10, **extra
    )


def test_plan_starts_and_config_errors():
    plan = plan_of(staged_cfg()["train"])
    assert plan.starts == [0, 30, 50] and plan.ends == [30, 50, 60] and plan.lrs == [0.01, 0.003, 0.001]
    assert plan.opens_stage(0) is None and plan.opens_stage(30) == 1 and plan.opens_stage(50) == 2
    assert plan_of(leaf_cfg()["train"]) is None  # no key: the loop trains as before
    with pytest.raises(ValueError, match=r"train.lr_stages: the stages' steps sum to 60, expected train.steps = 70"):
        plan_of({**staged_cfg()["train"], "steps": 70})
    with pytest.raises(ValueError, match=r"lr_stages\[0\].lr = 0.01 must equal train.lr = 0.02"):
        plan_of({**staged_cfg()["train"], "lr": 0.02})
    with pytest.raises(ValueError, match="constant rate"):
        plan_of({**staged_cfg()["train"], "schedule": "cosine"})


def test_stages_restart_from_best_with_fresh_optimizer(tmp_path):
    cfg = staged_cfg()
    result = train(cfg, tmp_path, config_hash(cfg))
    hist = result["history"]
    assert hist["val_step"] == [10, 20, 30, 40, 50, 60]
    assert hist["lr"][hist["step"].index(30)] == 0.01 and hist["lr"][hist["step"].index(35)] == 0.003
    assert hist["lr"][-1] == 0.001
    ckpt = load(tmp_path / "checkpoint.pt")
    best = ckpt["best"]
    assert (
        best["loss"] == min(hist["val_loss"]) and best["step"] == hist["val_step"][hist["val_loss"].index(best["loss"])]
    )
    assert_state_equal(load(tmp_path / "model.pt"), best["model"])  # the finished run keeps its best weights
    # the last stage began afresh at step 50: Adam's per-parameter step count is 10, not 60
    steps = {float(s["step"]) for s in ckpt["optimizer"]["state"].values()}
    assert steps == {10.0}
    assert {g["lr"] for g in ckpt["optimizer"]["param_groups"]} == {0.001}


def test_restart_loads_the_best_weights(tmp_path, monkeypatch):
    from seqmix.training import lr_stages

    seen = []
    original = lr_stages.restart_stage

    def spy(plan, stage, model, opt, sched, tcfg):
        original(plan, stage, model, opt, sched, tcfg)
        seen.append((stage, plan.best["step"], len(opt.state), {k: v.clone() for k, v in model.state_dict().items()}))
        assert_state_equal(model.state_dict(), plan.best["model"])

    monkeypatch.setattr(lr_stages, "restart_stage", spy)
    cfg = staged_cfg()
    result = train(cfg, tmp_path, config_hash(cfg))
    assert [s[0] for s in seen] == [1, 2] and all(s[2] == 0 for s in seen)
    hist = result["history"]
    for stage, best_step, _, _ in seen:
        start = [30, 50][stage - 1]
        losses = {st: v for st, v in zip(hist["val_step"], hist["val_loss"], strict=True) if st <= start}
        assert best_step == min(losses, key=losses.get)
    task, model = __import__("seqmix.training.loop", fromlist=["build"]).build(cfg)
    model.load_state_dict(seen[0][3])
    assert validation_loss(task, model, 16) == min(v for st, v in zip(hist["val_step"], hist["val_loss"]) if st <= 30)


@pytest.mark.parametrize("stop", [30, 35, 50])
def test_resume_across_stages_is_bit_identical(tmp_path, stop):
    cfg = staged_cfg()
    h = config_hash(cfg)
    fresh = train(cfg, tmp_path / "fresh", h)
    train(cfg, tmp_path / "resumed", h, stop_after=stop)
    resumed = train(cfg, tmp_path / "resumed", h)
    assert resumed["resumed_from"] == (stop // 10) * 10
    assert resumed["history"] == fresh["history"]
    assert_state_equal(load(tmp_path / "resumed" / "model.pt"), load(tmp_path / "fresh" / "model.pt"))
    a, b = load(tmp_path / "resumed" / "checkpoint.pt"), load(tmp_path / "fresh" / "checkpoint.pt")
    assert_optimizer_equal(a["optimizer"], b["optimizer"])
    assert a["best"]["step"] == b["best"]["step"] and a["best"]["loss"] == b["best"]["loss"]
    assert_state_equal(a["best"]["model"], b["best"]["model"])


def test_model_pt_remade_from_checkpoint_is_the_best(tmp_path):
    from seqmix.training.checkpoint import load_final_weights

    cfg = staged_cfg()
    train(cfg, tmp_path, config_hash(cfg))
    (tmp_path / "model.pt").write_bytes(b"damaged")
    weights = load_final_weights(tmp_path / "model.pt", 60)
    assert_state_equal(weights, load(tmp_path / "checkpoint.pt")["best"]["model"])
