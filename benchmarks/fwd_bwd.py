"""One definition of a timed figure for the kernel benchmarks: the median of forward + backward runs."""

from __future__ import annotations

import statistics
import time

import torch

GPU = torch.version.cuda is not None and torch.cuda.is_available()


def sync():
    if GPU:
        torch.cuda.synchronize()


def fwd_bwd_seconds(fn, inputs, reps: int) -> float:
    """Median seconds of one forward + backward of ``fn(*inputs)`` (after one warm-up call, which also
    autotunes and compiles); float64 inputs (angle steps) get no gradient."""
    leaves = [t.detach().requires_grad_(t.dtype != torch.float64) for t in inputs]
    times = []
    for i in range(reps + 1):
        sync()
        t0 = time.perf_counter()
        out = fn(*leaves)
        out.backward(torch.ones_like(out))
        sync()
        if i:
            times.append(time.perf_counter() - t0)
        for t in leaves:
            t.grad = None
    return statistics.median(times)


def ms(t) -> str:
    return f"{t * 1e3:.2f} ms" if isinstance(t, float) else str(t)
