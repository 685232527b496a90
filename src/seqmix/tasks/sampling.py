"""Epoch-wise sampling of a finite split as a pure function of (seed, step, rank).

Batch ``step`` of ``size`` takes positions ``step * size ... step * size + size - 1`` of the endless
concatenation of per-epoch permutations; epoch ``e``'s permutation is drawn from
``counter_generator(name, seed, e, rank)``, so every example is seen once per epoch and a resumed run sees
exactly the batches an uninterrupted one would.
"""

from __future__ import annotations

import torch

from ..rng import counter_generator


def epoch_indices(name: str, n: int, seed: int, step: int, rank: int, size: int) -> torch.Tensor:
    """(size,) int64 indices into a split of ``n`` examples."""
    if n < 1:
        raise ValueError(f"{name}: cannot sample from an empty split")
    start = step * size
    out, filled = [], 0
    while filled < size:
        epoch, offset = divmod(start + filled, n)
        perm = torch.randperm(n, generator=counter_generator(name, seed, epoch, rank))
        take = perm[offset : offset + size - filled]
        out.append(take)
        filled += len(take)
    return torch.cat(out)
