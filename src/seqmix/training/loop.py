"""The one training loop.

Resume contract (DESIGN.md): batch ``step`` is a pure function of (seed, step, rank), so a checkpoint
holds only model, optimizer, scheduler, step and the loss history, all loadable with
``weights_only=True``. A run killed after checkpoint k and started again logs "resumed from step k"
and ends bit-identical to an uninterrupted run (same thread count). Checkpoints are checksummed and the
previous good one is kept (``checkpoint.py``): a corrupt one is discarded with a warning and training
resumes from the one before, else from scratch, still bit-identical.

Per step the host waits on the device once: the loss and the total gradient norm are checked for
non-finite values together (``StepGuard``); which tensor went bad is looked up only after a failure.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from pathlib import Path

import torch

from ..io import torch_save
from ..models import build_model
from ..models.sizing import count_parameters
from ..registry import get_task
from . import lr_stages
from .checkpoint import load_checkpoint, load_final_weights, save_checkpoint
from .guard import StepGuard
from .optim import build_optimizer, build_scheduler
from .progress import StepBar, leaf_label
from .runtime import Runtime, cpu_batches, keep_inputs_on_device

log = logging.getLogger("seqmix.train")

DTYPES = {"float32": torch.float32, "float64": torch.float64}


def build_task(cfg: dict):
    task_cfg = dict(cfg["task"])
    cls = get_task(task_cfg.pop("name"))
    return cls(dtype=DTYPES[cfg["train"].get("dtype", "float32")], **task_cfg)


def build(cfg: dict, runtime: Runtime | None = None):
    """(task, model) for a leaf config, the model on the runtime's device (CPU by default). The init is
    seeded by the leaf's seed alone and runs on the CPU, so every device starts from the same weights."""
    task = build_task(cfg)
    torch.manual_seed(int(cfg["seed"]))
    model = build_model(cfg["model"], task)
    return task, (runtime or Runtime()).place(model, DTYPES[cfg["train"].get("dtype", "float32")])


def _load_checkpoint(path: Path, config_hash: str, runtime: Runtime, model, opt, sched) -> dict | None:
    """The checkpoint's step and history when it belongs to this config (model/optimizer/scheduler loaded);
    the newest checkpoint that verifies is used (``checkpoint.load_checkpoint``)."""
    ckpt = load_checkpoint(path, map_location=runtime.torch_device)
    if ckpt is None:
        return None
    if ckpt.get("config_hash") != config_hash:
        log.info("%s: checkpoint belongs to another config (%s); starting afresh", path.parent, ckpt.get("config_hash"))
        return None
    model.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["optimizer"])
    sched.load_state_dict(ckpt["scheduler"])
    log.info("%s: resumed from step %d", path.parent, int(ckpt["step"]))
    return {"step": int(ckpt["step"]), "history": ckpt["history"], "best": ckpt.get("best")}


class _Diagnostics:
    """In-training evaluation (``eval.every``), the task's one probe ``Task.diagnostics``: recorded in
    ``history["diagnostics"]``, timed, and off when ``eval.every`` is 0/null or the task does not override it."""

    def __init__(self, cfg: dict, task, model, history: dict, on_log, runtime: Runtime):
        every = (cfg.get("eval") or {}).get("every")
        self.every = int(every) if every and task.probes_in_training() else 0
        self.task, self.model, self.history, self.on_log, self.runtime = task, model, history, on_log, runtime
        self.seconds, self.calls = 0.0, 0

    def __call__(self, done: int, steps: int) -> None:
        if not self.every or not (done % self.every == 0 or done == steps):
            return
        diag = self.history.setdefault("diagnostics", {"step": []})
        if diag["step"] and diag["step"][-1] >= done:
            return
        t0 = time.perf_counter()
        with cpu_batches(self.model, self.runtime):  # tasks build their probes on the CPU
            row = {k: float(v) for k, v in self.task.diagnostics(self.model).items()}
        diag["step"].append(done)
        for name, value in row.items():
            diag.setdefault(name, []).append(value)
        if self.on_log:
            self.on_log(done, {f"diag/{k}": v for k, v in row.items() if math.isfinite(v)})
        self.seconds += time.perf_counter() - t0
        self.calls += 1


def train(
    cfg: dict,
    out_dir: str | Path,
    config_hash: str,
    on_log: Callable[[int, dict], None] | None = None,
    stop_after: int | None = None,
    runtime: Runtime | None = None,
    on_backend: Callable[[dict[str, str]], None] | None = None,
) -> dict:
    """Train one leaf. Writes ``checkpoint.pt`` every ``checkpoint_every`` steps and ``model.pt`` at the end.

    Returns {"history": {"step": [...], "train_loss": [...], "lr": [...], "grad_norm_<label>": [...] (with
    train.grad_norms)}, "steps": int, "n_params": int (trainable, a tied head once), "resumed_from": int | None,
    "seconds": float, "backends": {module: backend},
    "diagnostics": {"calls": int, "seconds": float}}.
    ``on_log(step, metrics)`` is called at every logged step (live tracking); ``on_backend(report)`` once,
    after the first step, with the backend each layer ran (``seqmix.ops.backends.backend_report``).
    In-training evaluation: see ``_Diagnostics``. ``stop_after`` ends early after that many steps (tests).
    Data-parallel (torch.distributed initialised): every rank draws the same global batch and trains on its
    shard under DistributedDataParallel; the logged loss is averaged over ranks; only rank 0 writes files.
    """
    from . import distributed

    rt = runtime or Runtime()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tcfg = cfg["train"]
    steps = tcfg["steps"]
    plan = lr_stages.plan_of(tcfg)  # None unless train.lr_stages (stages restarting from the best weights)
    task, model = build(cfg, rt)
    opt = build_optimizer(model, tcfg)
    sched = build_scheduler(opt, tcfg)
    history: dict[str, list] = {"step": [], "train_loss": [], "lr": []}
    resumed = _load_checkpoint(out / "checkpoint.pt", config_hash, rt, model, opt, sched)
    if resumed:
        history = resumed["history"]
        if plan and resumed["best"] is not None:
            lr_stages.restore(plan, resumed)
    start = resumed["step"] if resumed else 0
    diagnose = _Diagnostics(cfg, task, model, history, on_log, rt)
    t0 = time.perf_counter()
    model.train()
    if start == 0:
        diagnose(0, steps)
    backends = _run_steps(
        cfg,
        rt,
        task,
        model,
        opt,
        sched,
        history,
        out,
        config_hash,
        start,
        stop_after,
        diagnose,
        on_log,
        on_backend,
        plan,
    )
    backends = backends or _report_backends(model, on_backend)  # no step ran (a finished run resumed)
    if plan and plan.best["model"] is not None and (stop_after is None or stop_after >= steps):
        model.load_state_dict(plan.best["model"])  # the finished run keeps its best validation weights
    if distributed.rank() == 0:
        torch_save(model.state_dict(), out / "model.pt", checksum=True)
    return {
        "history": history,
        "steps": steps,
        "resumed_from": resumed["step"] if resumed else None,
        "seconds": time.perf_counter() - t0,
        "backends": backends,
        "diagnostics": {"calls": diagnose.calls, "seconds": round(diagnose.seconds, 4)},
        # where the data came from, as the task saw it where it trained (a GPU box may hold other files)
        "data_source": getattr(task, "data_source", None),
        "n_params": count_parameters(model),
    }


def _report_backends(model: torch.nn.Module, on_backend) -> dict[str, str]:
    from ..ops.backends import backend_report

    report = backend_report(model)
    if on_backend:
        on_backend(report)
    return report


def _run_steps(
    cfg,
    rt: Runtime,
    task,
    model,
    opt,
    sched,
    history,
    out: Path,
    config_hash: str,
    start: int,
    stop_after,
    diagnose: _Diagnostics,
    on_log,
    on_backend,
    plan: lr_stages.StagePlan | None = None,
) -> dict[str, str] | None:
    """The steps from ``start``; returns the backend report made after the first step (None if none ran).
    With a stage ``plan``: the restart at each stage's first step and the validations (``lr_stages``)."""
    from . import distributed

    tcfg, seed = cfg["train"], int(cfg["seed"])
    steps, batch = tcfg["steps"], tcfg["batch"]
    ckpt_every = tcfg.get("checkpoint_every", steps)
    log_every = tcfg.get("log_every", max(1, steps // 20))
    world, rank = distributed.world_size(), distributed.rank()
    net = rt.forward_fn(distributed.wrap(model))
    guard = StepGuard(model, tcfg.get("grad_clip"))
    watched = _watched_parameters(model, tcfg.get("grad_norms") or {})
    t0 = time.perf_counter()
    backends = None
    bar = StepBar(steps, start, leaf_label(out), enabled=None if rank == 0 else False)
    for step in range(start, steps):
        if stop_after is not None and step >= stop_after:
            break
        if plan:
            lr_stages.before_step(plan, step, model, opt, sched, tcfg)
        x, y = task.batch(seed, step, 0, batch)  # the global batch: the same on every rank
        if world > 1:
            x, y = distributed.shard(x, rank, world), distributed.shard(y, rank, world)
        x, y = rt.to(x), rt.to(y)
        with rt.autocast():
            loss = task.loss(net(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        guard.check(step, loss)  # one host sync: loss and total gradient norm together
        opt.step()
        sched.step()
        if backends is None:  # the backends are known once a step has run on the device
            backends = _report_backends(model, on_backend)
            log.info("%s: backends %s", out, backends)
        done = step + 1
        if done % log_every == 0 or done == steps:
            value = float(distributed.mean(loss).item())
            history["step"].append(done)
            row = {"train_loss": value, "lr": float(sched.get_last_lr()[0]), **_grad_norms(watched)}
            for name, v in row.items():
                history.setdefault(name, []).append(v)
            if on_log:
                on_log(done, row)
        diagnose(done, steps)
        if plan:
            lr_stages.after_step(plan, task, model, batch, done, history, on_log)
        bar.update()
        if rank == 0 and (done % ckpt_every == 0 or done == steps):
            per = (time.perf_counter() - t0) / max(done - start, 1)
            log.info(
                "%s: step %d/%d, loss %.4g, %.2f ms/step, about %.0f s left",
                out,
                done,
                steps,
                float(loss.item()),
                1e3 * per,
                per * (steps - done),
            )
            save_checkpoint(
                {
                    "model": model.state_dict(),
                    "optimizer": opt.state_dict(),
                    "scheduler": sched.state_dict(),
                    "step": done,
                    "history": history,
                    "config_hash": config_hash,
                    **({"best": plan.best} if plan else {}),
                },
                out / "checkpoint.pt",
            )
    bar.close()
    return backends


def _watched_parameters(model: torch.nn.Module, patterns: dict[str, str]) -> dict[str, list[torch.nn.Parameter]]:
    """``train.grad_norms`` {label: fnmatch pattern over parameter names} -> {label: parameters}; a pattern
    that matches nothing is an error naming the parameters there are (a typo would log nothing)."""
    import fnmatch

    names = dict(model.named_parameters())
    out = {}
    for label, pattern in patterns.items():
        out[label] = [p for n, p in names.items() if fnmatch.fnmatchcase(n, pattern)]
        if not out[label]:
            raise ValueError(
                f"train.grad_norms.{label}: {pattern!r} matches no parameter; there are {', '.join(names)}"
            )
    return out


def _grad_norms(watched: dict[str, list[torch.nn.Parameter]]) -> dict[str, float]:
    """{grad_norm_<label>: the 2-norm of the gradients of that label's parameters at this step} (0 for
    parameters that receive no gradient, e.g. frozen ones): the spec's per-step Delta-gradient trace."""
    out = {}
    for label, params in watched.items():
        grads = [p.grad.detach().flatten() for p in params if p.grad is not None]
        out[f"grad_norm_{label}"] = float(torch.linalg.vector_norm(torch.cat(grads))) if grads else 0.0
    return out


def load_trained(cfg: dict, out_dir: str | Path, runtime: Runtime | None = None):
    """(task, model) with the trained weights of a finished leaf, on the runtime's device; a model on a GPU
    takes the task's CPU batches (its inputs are moved in, its outputs back out). A damaged ``model.pt`` is
    remade from the final checkpoint (``checkpoint.load_final_weights``)."""
    rt = runtime or Runtime()
    task, model = build(cfg, rt)
    weights = load_final_weights(Path(out_dir) / "model.pt", int(cfg["train"]["steps"]), rt.torch_device)
    model.load_state_dict(weights)
    model.eval()
    keep_inputs_on_device(model, rt)
    return task, model
