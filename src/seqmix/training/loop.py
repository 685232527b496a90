"""The one training loop.

Resume contract (DESIGN.md): batch ``step`` is a pure function of (seed, step, rank), so a checkpoint
holds only model, optimizer, scheduler, step and the loss history, all loadable with
``weights_only=True``. A run killed after checkpoint k and started again logs "resumed from step k"
and ends bit-identical to an uninterrupted run (same thread count).
"""
from __future__ import annotations

import logging
import math
import time
from pathlib import Path
from typing import Callable

import torch

from ..io import torch_save
from ..models import build_model
from ..registry import get_task
from .optim import build_optimizer, build_scheduler

log = logging.getLogger("seqmix.train")

DTYPES = {"float32": torch.float32, "float64": torch.float64}


class NonFiniteError(FloatingPointError):
    """A NaN/Inf appeared; the message names the step and the tensor."""


def build_task(cfg: dict):
    task_cfg = dict(cfg["task"])
    cls = get_task(task_cfg.pop("name"))
    return cls(dtype=DTYPES[cfg["train"].get("dtype", "float32")], **task_cfg)


def build(cfg: dict):
    """(task, model) for a leaf config; the model init is seeded by the leaf's seed alone."""
    task = build_task(cfg)
    torch.manual_seed(int(cfg["seed"]))
    model = build_model(cfg["model"], task).to(DTYPES[cfg["train"].get("dtype", "float32")])
    return task, model


def _first_nonfinite(named: dict[str, torch.Tensor | None]) -> str | None:
    for name, t in named.items():
        if t is not None and not torch.isfinite(t).all():
            return name
    return None


def check_finite(step: int, loss: torch.Tensor, model: torch.nn.Module, where: str) -> None:
    if where == "loss":
        if not torch.isfinite(loss):
            param = _first_nonfinite(dict(model.named_parameters()))
            extra = f"; first non-finite parameter: {param}" if param else ""
            raise NonFiniteError(f"step {step}: tensor 'loss' is {loss.item()}{extra}")
    else:
        grad = _first_nonfinite({f"{n}.grad": p.grad for n, p in model.named_parameters()})
        if grad:
            raise NonFiniteError(f"step {step}: tensor '{grad}' has non-finite values")


def train(cfg: dict, out_dir: str | Path, config_hash: str,
          on_log: Callable[[int, dict], None] | None = None,
          stop_after: int | None = None) -> dict:
    """Train one leaf. Writes ``checkpoint.pt`` every ``checkpoint_every`` steps and ``model.pt`` at the end.

    Returns {"history": {"step": [...], "train_loss": [...], "lr": [...]}, "steps": int, "resumed_from": int | None,
    "seconds": float}. ``on_log(step, metrics)`` is called at every logged step (live tracking).
    In-training evaluation: when the leaf config has ``eval.every`` and the task a ``diagnostics(model)``
    method, its metrics are recorded at step 0, every ``eval.every`` steps and at the end, under
    ``history["diagnostics"]`` = {"step": [...], name: [...]} (and passed to ``on_log``).
    ``stop_after`` ends early after that many steps (tests use it; a normal run never sets it).
    Data-parallel (torch.distributed initialised): every rank draws the same global batch and trains on
    its shard; gradients and the logged loss are averaged over ranks; only rank 0 writes files.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tcfg = cfg["train"]
    steps, batch = tcfg["steps"], tcfg["batch"]
    ckpt_every = tcfg.get("checkpoint_every", steps)
    log_every = tcfg.get("log_every", max(1, steps // 20))
    seed = int(cfg["seed"])

    from . import distributed

    world, rank = distributed.world_size(), distributed.rank()
    task, model = build(cfg)
    opt = build_optimizer(model.parameters(), tcfg)
    sched = build_scheduler(opt, tcfg)
    history: dict[str, list] = {"step": [], "train_loss": [], "lr": []}
    start, resumed_from = 0, None

    ckpt_path = out / "checkpoint.pt"
    if ckpt_path.exists():
        ckpt = torch.load(ckpt_path, weights_only=True, map_location="cpu")
        if ckpt.get("config_hash") == config_hash:
            model.load_state_dict(ckpt["model"])
            opt.load_state_dict(ckpt["optimizer"])
            sched.load_state_dict(ckpt["scheduler"])
            history = ckpt["history"]
            start = resumed_from = int(ckpt["step"])
            log.info("%s: resumed from step %d", out, start)
        else:
            log.info("%s: checkpoint belongs to another config (%s); starting afresh", out, ckpt.get("config_hash"))

    diag_every = (cfg.get("eval") or {}).get("every") if hasattr(task, "diagnostics") else None

    def diagnose(done: int) -> None:
        diag = history.setdefault("diagnostics", {"step": []})
        if diag["step"] and diag["step"][-1] >= done:
            return
        row = {k: float(v) for k, v in task.diagnostics(model).items()}
        diag["step"].append(done)
        for name, value in row.items():
            diag.setdefault(name, []).append(value)
        if on_log:
            on_log(done, {f"diag/{k}": v for k, v in row.items() if math.isfinite(v)})

    t0 = time.perf_counter()
    model.train()
    if diag_every and start == 0:
        diagnose(0)
    for step in range(start, steps):
        if stop_after is not None and step >= stop_after:
            break
        x, y = task.batch(seed, step, 0, batch)  # the global batch: the same on every rank
        if world > 1:
            x, y = distributed.shard(x, rank, world), distributed.shard(y, rank, world)
        loss = task.loss(model(x), y)
        check_finite(step, loss, model, "loss")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if world > 1:
            distributed.average_gradients(model)
            loss = distributed.mean(loss)
        check_finite(step, loss, model, "grad")
        if tcfg.get("grad_clip"):
            torch.nn.utils.clip_grad_norm_(model.parameters(), tcfg["grad_clip"])
        opt.step()
        sched.step()
        done = step + 1
        if done % log_every == 0 or done == steps:
            history["step"].append(done)
            row = {"train_loss": float(loss.item()), "lr": float(sched.get_last_lr()[0])}
            for name, value in row.items():
                history[name].append(value)
            if on_log:
                on_log(done, row)
        if diag_every and (done % diag_every == 0 or done == steps):
            diagnose(done)
        if rank == 0 and (done % ckpt_every == 0 or done == steps):
            ran = done - start
            per = (time.perf_counter() - t0) / max(ran, 1)
            log.info("%s: step %d/%d, loss %.4g, %.2f ms/step, about %.0f s left", out, done, steps,
                     float(loss.item()), 1e3 * per, per * (steps - done))
            torch_save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                        "scheduler": sched.state_dict(), "step": done, "history": history,
                        "config_hash": config_hash}, ckpt_path)
    if rank == 0:
        torch_save(model.state_dict(), out / "model.pt")
    return {"history": history, "steps": steps, "resumed_from": resumed_from,
            "seconds": time.perf_counter() - t0}


def load_trained(cfg: dict, out_dir: str | Path):
    """(task, model) with the trained weights of a finished leaf."""
    task, model = build(cfg)
    model.load_state_dict(torch.load(Path(out_dir) / "model.pt", weights_only=True, map_location="cpu"))
    model.eval()
    return task, model
