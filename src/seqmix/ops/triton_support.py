"""What every ``ops/<op>/triton.py`` needs before it defines a kernel: a runtime it can run on, and its
autotune configs.

A kernel module must import only where its kernels can run: on a CUDA (or ROCm) build of torch, or under
Triton's CPU interpreter (``TRITON_INTERPRET=1``, how the tests check kernels without a GPU). Elsewhere its
import raises ImportError, so the dispatcher records the kernel as declared but not registered and runs the
reference. Nothing here touches ``torch.cuda``: the build is read from ``torch.version``.
"""

from __future__ import annotations

import os

import torch


def interpreting() -> bool:
    """True when Triton runs kernels in its CPU interpreter (read when a kernel is decorated)."""
    return os.environ.get("TRITON_INTERPRET", "0").strip().lower() in ("1", "true", "yes", "on")


def require_kernel_runtime(op: str) -> None:
    """Raise ImportError unless torch is a CUDA/ROCm build or Triton interprets kernels on the CPU."""
    if torch.version.cuda is None and torch.version.hip is None and not interpreting():
        raise ImportError(
            f"op {op!r}: the triton kernel needs a CUDA or ROCm build of torch (this one is CPU-only) "
            "or TRITON_INTERPRET=1"
        )


def tuned(configs: list):
    """The autotune configs to try: all of them on a GPU, the first only in the interpreter (each extra
    config would run the whole kernel once more on the CPU)."""
    return configs[:1] if interpreting() else configs


def next_pow2(n: int) -> int:
    """The smallest power of two >= n (1 for n <= 1): tl.arange needs power-of-two extents."""
    return 1 << max(0, (int(n) - 1).bit_length())
