"""Backend selection shared by every op package (ops/<op>/__init__.py).

Each op offers a ``reference`` backend (pure torch, CPU-capable, the oracle) and may later offer
``triton``. ``choose`` returns the backend name for a call: a requested backend that is not available
raises (no silent fallback, DESIGN.md "Ops and kernels"); with no request, a Triton kernel is chosen on
CUDA tensors when one is registered and imports, else the reference.
"""
from __future__ import annotations

from typing import Callable, Mapping

import torch

BACKEND_NAMES = ("reference", "triton")


def choose(op: str, backends: Mapping[str, Callable], tensor: torch.Tensor, requested: str | None) -> str:
    """Name of the backend to run ``op`` on ``tensor``'s device; ``requested`` None means automatic."""
    if requested is not None:
        if requested not in BACKEND_NAMES:
            raise ValueError(f"backend must be one of {BACKEND_NAMES}, got {requested!r}")
        if requested not in backends:
            raise ValueError(f"op {op!r} has no {requested!r} backend; available: {sorted(backends)}")
        if requested == "triton" and not tensor.is_cuda:
            raise ValueError(f"op {op!r}: the triton backend needs CUDA tensors")
        return requested
    if "triton" in backends and tensor.is_cuda:
        return "triton"
    return "reference"
