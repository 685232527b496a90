"""Data-parallel training under torch.distributed: one process per GPU (NCCL), gloo on CPU.

Ranks slice the same global batch (a pure function of (seed, step)) into equal contiguous shards and
average their gradients, so with the same global batch and seed, N processes follow the loss curve of
one process up to floating-point reordering. Only rank 0 writes files.

Launch: submitit with one task per GPU (``tasks_per_node`` in the dispatch resources) sets the
environment through ``submitit.helpers.TorchDistributedEnvironment``; by hand, set RANK, WORLD_SIZE,
MASTER_ADDR and MASTER_PORT (as torchrun does) and ``init_from_env`` joins the group.
"""
from __future__ import annotations

import os

import torch
import torch.distributed as dist


def init_from_env() -> bool:
    """Join the process group described by the environment; False when running alone."""
    if dist.is_available() and dist.is_initialized():
        return True
    if "SLURM_JOB_ID" in os.environ and int(os.environ.get("SLURM_NTASKS", "1")) > 1 and "RANK" not in os.environ:
        import submitit

        submitit.helpers.TorchDistributedEnvironment().export(set_cuda_visible_devices=False)
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return False
    backend = "nccl" if torch.cuda.is_available() and os.environ.get("SEQMIX_DIST_BACKEND") != "gloo" else "gloo"
    dist.init_process_group(backend=backend)
    return True


def world_size() -> int:
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def rank() -> int:
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


def shard(t: torch.Tensor, r: int, world: int) -> torch.Tensor:
    """Rank r's contiguous slice of a global batch (dim 0); the batch must divide evenly."""
    if t.shape[0] % world:
        raise ValueError(f"global batch {t.shape[0]} does not divide over {world} ranks")
    n = t.shape[0] // world
    return t[r * n:(r + 1) * n]


def average_gradients(model: torch.nn.Module) -> None:
    world = world_size()
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)
            p.grad /= world


def mean(t: torch.Tensor) -> torch.Tensor:
    t = t.detach().clone()
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return t / world_size()
