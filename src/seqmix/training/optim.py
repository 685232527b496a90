"""Optimizers and schedules from the `train:` block of a leaf config, with one parameter-group mechanism.

Groups (``param_groups``):
- by default a parameter is decayed (``train.weight_decay``) unless it is a bias or any other 1-d tensor, a
  norm's parameter, or an embedding table: those get weight decay 0;
- a module may declare per-parameter hints with a method ``optim_hints() -> {local name: hint}``, a hint
  being a dict of ``weight_decay`` (absolute), ``lr`` (absolute), ``lr_mult`` (times the base lr) and
  ``lr_max`` (a cap on the result). B2S6 declares its A / Delta / B-bias learning rates this way (b2s6 spec
  §2.9). The hints of an outer module win over those of an inner one.
- a leaf config may override them with ``train.param_hints: {fnmatch pattern over parameter names: hint}``
  (same keys; e.g. the b2s6 spec §2.9 sweep of the Delta learning rate, ``{"*.w": {"lr": 1e-4}}``; lr 0
  freezes). A config hint wins over every module hint; one that sets a learning rate replaces the module's
  lr / lr_mult / lr_max. A pattern that matches no trainable parameter is an error (a typo would otherwise
  train with the defaults silently). Without the key the groups are exactly those of the module hints.
Parameters with equal (lr, weight_decay) share a group, in the order they first appear in
``model.named_parameters()``, so optimizer state dicts are stable across runs.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Iterable

import torch
from torch import nn

NO_DECAY_MODULES = (
    nn.LayerNorm,
    nn.GroupNorm,
    nn.Embedding,
    nn.RMSNorm,
    nn.BatchNorm1d,
    nn.BatchNorm2d,
    nn.InstanceNorm1d,
)
HINT_KEYS = {"lr", "lr_mult", "lr_max", "weight_decay"}


def _is_norm(module: nn.Module) -> bool:
    return isinstance(module, NO_DECAY_MODULES) or "norm" in type(module).__name__.lower()


def collect_hints(model: nn.Module) -> dict[int, dict]:
    """{id(parameter): hint} from every module's ``optim_hints()`` (outer modules override inner ones)."""
    hints: dict[int, dict] = {}
    modules = list(model.named_modules())
    for prefix, module in reversed(modules):  # inner first, so outer modules win
        declare = getattr(module, "optim_hints", None)
        if not callable(declare):
            continue
        params = dict(module.named_parameters())
        for name, hint in declare().items():
            if name not in params:
                raise ValueError(
                    f"{type(module).__name__}.optim_hints names {name!r}, not a parameter of "
                    f"{prefix or 'the model'} (has: {', '.join(params)})"
                )
            unknown = set(hint) - HINT_KEYS
            if unknown:
                raise ValueError(
                    f"{type(module).__name__}.optim_hints[{name!r}]: unknown keys {sorted(unknown)}; "
                    f"allowed: {sorted(HINT_KEYS)}"
                )
            hints[id(params[name])] = {**hints.get(id(params[name]), {}), **hint}
    return hints


LR_KEYS = {"lr", "lr_mult", "lr_max"}


def apply_config_hints(model: nn.Module, hints: dict[int, dict], config_hints: dict | None) -> dict[int, dict]:
    """``hints`` updated by ``train.param_hints`` ({pattern: hint}, see the module docstring)."""
    out = dict(hints)
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    for pattern, hint in (config_hints or {}).items():
        unknown = set(hint) - HINT_KEYS
        if unknown:
            raise ValueError(
                f"train.param_hints[{pattern!r}]: unknown keys {sorted(unknown)}; allowed: {sorted(HINT_KEYS)}"
            )
        matched = [p for n, p in named if fnmatch.fnmatchcase(n, pattern)]
        if not matched:
            raise ValueError(
                f"train.param_hints[{pattern!r}]: matches no trainable parameter name "
                f"(e.g. {', '.join(n for n, _ in named[:4])})"
            )
        for p in matched:
            base = out.get(id(p), {})
            if LR_KEYS & set(hint):
                base = {k: v for k, v in base.items() if k not in LR_KEYS}
            out[id(p)] = {**base, **hint}
    return out


def _no_decay_ids(model: nn.Module) -> set[int]:
    ids = {id(p) for p in model.parameters() if p.dim() < 2}
    for module in model.modules():
        if _is_norm(module):
            ids.update(id(p) for p in module.parameters(recurse=False))
    return ids


def param_groups(
    model: nn.Module, lr: float, weight_decay: float = 0.0, config_hints: dict | None = None
) -> list[dict]:
    """Optimizer groups of ``model`` (see the module docstring); each carries a readable ``name``.
    ``config_hints``: the leaf's ``train.param_hints`` ({pattern: hint}) or None."""
    hints, no_decay = apply_config_hints(model, collect_hints(model), config_hints), _no_decay_ids(model)
    groups: dict[tuple[float, float], dict] = {}
    for name, p in model.named_parameters():  # shared (tied) parameters appear once
        if not p.requires_grad:
            continue
        hint = hints.get(id(p), {})
        p_lr = hint.get("lr", lr * hint.get("lr_mult", 1.0))
        if "lr_max" in hint:
            p_lr = min(p_lr, hint["lr_max"])
        p_wd = hint.get("weight_decay", 0.0 if id(p) in no_decay else weight_decay)
        g = groups.setdefault((p_lr, p_wd), {"params": [], "lr": p_lr, "weight_decay": p_wd, "names": []})
        g["params"].append(p)
        g["names"].append(name)
    return [
        {
            "params": g["params"],
            "lr": g["lr"],
            "weight_decay": g["weight_decay"],
            "name": ",".join(g["names"][:3]) + (f",+{len(g['names']) - 3}" if len(g["names"]) > 3 else ""),
        }
        for g in groups.values()
    ]


def build_optimizer(params: nn.Module | Iterable, cfg: dict) -> torch.optim.Optimizer:
    """The optimizer of a `train:` block over a model (grouped by ``param_groups``) or a parameter list."""
    name = cfg["optimizer"]
    lr = cfg["lr"]
    wd = cfg.get("weight_decay", 0.0)
    betas = tuple(cfg.get("betas", (0.9, 0.999)))
    if isinstance(params, nn.Module):
        params = param_groups(params, lr, wd, cfg.get("param_hints"))
    if name == "adam":
        return torch.optim.Adam(params, lr=lr, betas=betas, weight_decay=wd)
    if name == "adamw":
        return torch.optim.AdamW(params, lr=lr, betas=betas, weight_decay=wd)
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, weight_decay=wd)
    raise ValueError(f"unknown optimizer {name!r}")


def lr_factor(step: int, total: int, schedule: str, warmup: int = 0, min_ratio: float = 0.0) -> float:
    """Multiplier of the base lr after ``step`` optimizer steps (cosine decays to ``min_ratio`` at ``total``:
    0 by default, 0.1 in the Mamba / based LM recipes, b2s6 spec E9)."""
    if warmup and step < warmup:
        return (step + 1) / warmup
    if schedule == "constant":
        return 1.0
    if schedule in ("cosine", "warmup_cosine"):
        progress = min(1.0, (step - warmup) / max(1, total - warmup))
        return min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))
    raise ValueError(f"unknown schedule {schedule!r}")


def build_scheduler(opt: torch.optim.Optimizer, cfg: dict) -> torch.optim.lr_scheduler.LambdaLR:
    total, schedule, warmup = cfg["steps"], cfg.get("schedule", "constant"), cfg.get("warmup_steps", 0)
    floor = cfg.get("min_lr_ratio", 0.0)
    return torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, total, schedule, warmup, floor))
