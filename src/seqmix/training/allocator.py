"""glibc malloc settings for job processes: large per-step CPU tensors without the page-fault cost.

By default glibc serves allocations above a (dynamic, at most 32 MiB) threshold with fresh ``mmap``s and
gives freed heap tops back to the kernel beyond the trim threshold, so a training step that allocates and
frees the same large tensors every step (the B2S6 scan at n = 16: (B, L, d, n) complex states) pays a page
fault per 4 KiB page, every step. Keeping large blocks on the heap (``mmap_max=0``), never trimming below
4 GiB of free top, and growing the heap 256 MiB at a time (``top_pad``; untouched pages cost nothing) reuses
the same pages step after step: no page faults in the steady state (benchmarks/allocator.py measures it).
Setting ``trim_threshold`` alone would be worse than nothing: it freezes the dynamic mmap threshold at its
128 KiB start.

The settings are read by glibc when a process starts, so they are put in the environment of the processes
that launch jobs: the Snakemake workflow (its shell jobs inherit them) and the submitit executors.
A GLIBC_TUNABLES already in the environment that sets malloc tunables is left alone.
"""

from __future__ import annotations

import os

GLIBC_TUNABLES = "glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=4294967296:glibc.malloc.top_pad=268435456"


def tunables(current: str | None = None) -> str:
    """The GLIBC_TUNABLES value for a job: ours appended to ``current`` unless it sets malloc itself."""
    current = os.environ.get("GLIBC_TUNABLES", "") if current is None else current
    if "glibc.malloc." in current:
        return current
    return f"{current}:{GLIBC_TUNABLES}" if current else GLIBC_TUNABLES


def apply_to_environ() -> str:
    """Set GLIBC_TUNABLES in this process's environment, for the processes it starts; returns the value."""
    os.environ["GLIBC_TUNABLES"] = tunables()
    return os.environ["GLIBC_TUNABLES"]
