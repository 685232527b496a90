"""Data-parallel training under torch.distributed with DistributedDataParallel: NCCL for CUDA models, gloo on CPU.

Ranks slice the same global batch (a pure function of (seed, step)) into equal contiguous shards; DDP
averages their gradients during backward, so with the same global batch and seed, N processes follow the
loss curve of one process up to floating-point reordering. Only rank 0 writes files.

Launch: submitit with one task per GPU (``tasks_per_node`` in the dispatch resources) sets the
environment through ``submitit.helpers.TorchDistributedEnvironment``; by hand, set RANK, WORLD_SIZE,
MASTER_ADDR and MASTER_PORT (as torchrun does) and ``init_from_env`` joins the group.
``SEQMIX_DIST_BACKEND`` forces a backend (gloo|nccl).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import torch
import torch.distributed as dist


def init_from_env(device: str = "cpu") -> bool:
    """Join the process group described by the environment; False when running alone.

    ``device`` is the runtime's device type ("cpu" or "cuda"): NCCL only for CUDA, gloo otherwise."""
    if dist.is_available() and dist.is_initialized():
        return True
    if "SLURM_JOB_ID" in os.environ and int(os.environ.get("SLURM_NTASKS", "1")) > 1 and "RANK" not in os.environ:
        import submitit

        submitit.helpers.TorchDistributedEnvironment().export(set_cuda_visible_devices=False)
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return False
    backend = os.environ.get("SEQMIX_DIST_BACKEND") or ("nccl" if str(device).startswith("cuda") else "gloo")
    dist.init_process_group(backend=backend)
    return True


def world_size() -> int:
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def rank() -> int:
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


def shard(batch: Any, r: int, world: int) -> Any:
    """Rank r's contiguous slice (dim 0) of a global batch: a tensor, or tuples/lists/dicts/dataclasses of
    tensors that share their first dimension; the batch must divide evenly."""
    if isinstance(batch, torch.Tensor):
        if batch.dim() == 0:
            return batch
        if batch.shape[0] % world:
            raise ValueError(f"global batch {batch.shape[0]} does not divide over {world} ranks")
        n = batch.shape[0] // world
        return batch[r * n : (r + 1) * n]
    if isinstance(batch, (tuple, list)):
        return type(batch)(shard(b, r, world) for b in batch)
    if isinstance(batch, dict):
        return {k: shard(v, r, world) for k, v in batch.items()}
    if dataclasses.is_dataclass(batch) and not isinstance(batch, type):
        return dataclasses.replace(
            batch, **{f.name: shard(getattr(batch, f.name), r, world) for f in dataclasses.fields(batch) if f.init}
        )
    return batch


def wrap(model: torch.nn.Module) -> torch.nn.Module:
    """The module the training loop runs forward/backward through: DDP across ranks, the model alone.

    ``find_unused_parameters``: some mixers leave parameters out of a forward (mode-dependent branches)."""
    if world_size() <= 1:
        return model
    from torch.nn.parallel import DistributedDataParallel

    device = next(model.parameters()).device
    ids = [device.index] if device.type == "cuda" else None
    return DistributedDataParallel(model, device_ids=ids, find_unused_parameters=True)


def mean(t: torch.Tensor) -> torch.Tensor:
    """The mean of a (scalar) tensor over ranks; itself when alone."""
    if world_size() <= 1:
        return t.detach()
    t = t.detach().clone()
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return t / world_size()
