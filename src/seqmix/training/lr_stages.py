"""Learning-rate stages that restart from the best validation checkpoint (``train.lr_stages``).

A run with ``train.lr_stages: [{steps: 2000, lr: 1e-3}, {steps: 1000, lr: 3e-4}, ...]`` trains stage s at the
constant rate ``lr`` for its ``steps``; when stage s >= 1 begins, the weights with the lowest validation loss
seen so far are loaded back and the optimizer starts afresh (its moments and step counts cleared: a new
AdamW), as in the rotations paper's three-stage schedule (rotations spec E1, U4). Validation is the task's
loss on its ``test_set()`` every ``train.validate_every`` steps and at the end of every stage; the finished
run's ``model.pt`` holds the best weights (spec U16). A config without ``lr_stages`` trains as before.

Resume contract: the checkpoint also holds ``best`` (the best weights, their loss and step), so a run killed
after any checkpoint, also one at a stage boundary, ends bit-identical to an uninterrupted one: the reset at
a boundary happens at the top of the step that opens the stage, after the checkpoint of the step before.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from .optim import param_groups

KEY = "lr_stages"


@dataclass
class StagePlan:
    """The stages of a `train:` block: ``starts[s]`` is the first optimizer step of stage s."""

    lrs: list[float]
    starts: list[int]
    ends: list[int]
    validate_every: int
    best: dict = field(default_factory=lambda: {"loss": math.inf, "step": 0, "model": None})

    def opens_stage(self, step: int) -> int | None:
        """The stage index s >= 1 whose first step is ``step`` (a restart), else None."""
        return self.starts.index(step) if step in self.starts[1:] else None

    def validates(self, done: int) -> bool:
        return done % self.validate_every == 0 or done in self.ends


def plan_of(tcfg: dict, where: str = "train") -> StagePlan | None:
    """The plan of ``tcfg`` (None without ``lr_stages``); config errors name the key and what was expected."""
    stages = tcfg.get(KEY)
    if not stages:
        return None
    steps = [int(s["steps"]) for s in stages]
    lrs = [float(s["lr"]) for s in stages]
    if sum(steps) != int(tcfg["steps"]):
        raise ValueError(
            f"{where}.{KEY}: the stages' steps sum to {sum(steps)}, expected {where}.steps = {tcfg['steps']}"
        )
    if lrs[0] != float(tcfg["lr"]):
        raise ValueError(
            f"{where}.{KEY}[0].lr = {lrs[0]} must equal {where}.lr = {tcfg['lr']} (the first stage's rate)"
        )
    if tcfg.get("schedule", "constant") != "constant" or tcfg.get("warmup_steps", 0):
        raise ValueError(f"{where}.{KEY}: each stage runs at a constant rate; expected schedule 'constant', no warmup")
    starts = [sum(steps[:i]) for i in range(len(steps))]
    ends = [a + n for a, n in zip(starts, steps, strict=True)]
    every = int(tcfg.get("validate_every") or min(steps))
    return StagePlan(lrs, starts, ends, every)


def validation_loss(task, model: torch.nn.Module, batch: int) -> float:
    """Mean of the task's loss over its test set, in batches of ``batch``, dropout off, no gradients."""
    was_training = model.training
    model.eval()
    x, y = task.test_set()
    device = next(model.parameters()).device
    total, count = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(x), batch):
            xb, yb = x[i : i + batch].to(device), y[i : i + batch].to(device)
            total += float(task.loss(model(xb), yb)) * len(xb)
            count += len(xb)
    model.train(was_training)
    return total / count


def record_validation(plan: StagePlan, task, model, batch: int, done: int, history: dict) -> None:
    """Validate after step ``done`` and keep the weights when they are the best so far (a copy)."""
    loss = validation_loss(task, model, batch)
    history.setdefault("val_step", []).append(done)
    history.setdefault("val_loss", []).append(loss)
    if loss < plan.best["loss"]:
        state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        plan.best = {"loss": loss, "step": done, "model": state}


def restart_stage(plan: StagePlan, stage: int, model, opt, sched, tcfg: dict) -> None:
    """Open ``stage``: the best weights back into the model, a fresh optimizer state at the stage's rate."""
    if plan.best["model"] is not None:
        model.load_state_dict(plan.best["model"])
    fresh = param_groups(model, plan.lrs[stage], tcfg.get("weight_decay", 0.0))
    if [len(g["params"]) for g in fresh] != [len(g["params"]) for g in opt.param_groups]:
        raise RuntimeError(f"{KEY}: stage {stage}: the optimizer's parameter groups changed with the rate")
    opt.state.clear()  # AdamW's moments and step counts: what a newly built optimizer has
    for group, new in zip(opt.param_groups, fresh, strict=True):
        group["lr"] = group["initial_lr"] = new["lr"]
    sched.base_lrs = [g["lr"] for g in opt.param_groups]


def restore(plan: StagePlan, ckpt: dict) -> None:
    plan.best = dict(ckpt["best"])


def before_step(plan: StagePlan, step: int, model, opt, sched, tcfg: dict) -> None:
    """At the first step of a stage s >= 1: the restart (``restart_stage``); otherwise nothing."""
    stage = plan.opens_stage(step)
    if stage is not None:
        restart_stage(plan, stage, model, opt, sched, tcfg)


def after_step(plan: StagePlan, task, model, batch: int, done: int, history: dict, on_log=None) -> None:
    """When a validation is due after step ``done``: validate, keep the best, log ``val_loss``."""
    if plan.validates(done):
        record_validation(plan, task, model, batch, done, history)
        if on_log:
            on_log(done, {"val_loss": history["val_loss"][-1]})
