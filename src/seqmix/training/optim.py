"""Optimizers and schedules from the `train:` block of a leaf config."""
from __future__ import annotations

import math

import torch


def build_optimizer(params, cfg: dict) -> torch.optim.Optimizer:
    name = cfg["optimizer"]
    lr = cfg["lr"]
    wd = cfg.get("weight_decay", 0.0)
    betas = tuple(cfg.get("betas", (0.9, 0.999)))
    if name == "adam":
        return torch.optim.Adam(params, lr=lr, betas=betas, weight_decay=wd)
    if name == "adamw":
        return torch.optim.AdamW(params, lr=lr, betas=betas, weight_decay=wd)
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, weight_decay=wd)
    raise ValueError(f"unknown optimizer {name!r}")


def lr_factor(step: int, total: int, schedule: str, warmup: int = 0) -> float:
    """Multiplier of the base lr after ``step`` optimizer steps (cosine decays to 0 at ``total``)."""
    if warmup and step < warmup:
        return (step + 1) / warmup
    if schedule == "constant":
        return 1.0
    if schedule in ("cosine", "warmup_cosine"):
        progress = min(1.0, (step - warmup) / max(1, total - warmup))
        return 0.5 * (1.0 + math.cos(math.pi * progress))
    raise ValueError(f"unknown schedule {schedule!r}")


def build_scheduler(opt: torch.optim.Optimizer, cfg: dict) -> torch.optim.lr_scheduler.LambdaLR:
    total, schedule, warmup = cfg["steps"], cfg.get("schedule", "constant"), cfg.get("warmup_steps", 0)
    return torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, total, schedule, warmup))
