"""What every task provides, and the counter-seeded generator that makes batches reproducible."""
from __future__ import annotations

import hashlib

import torch


def counter_generator(*counters: int | str) -> torch.Generator:
    """A CPU generator seeded by a hash of the counters, e.g. (seed, step, rank).

    Drawing batch ``step`` never depends on how many batches were drawn before, so a resumed run sees
    exactly the batches an uninterrupted run would have seen.
    """
    digest = hashlib.sha256(":".join(str(c) for c in counters).encode()).digest()
    g = torch.Generator(device="cpu")
    g.manual_seed(int.from_bytes(digest[:8], "little") & ((1 << 63) - 1))
    return g


class Task:
    """Base class. Subclasses set ``d_in``, ``d_out``, ``seq_len`` and implement ``batch`` and ``loss``."""

    d_in: int
    d_out: int
    seq_len: int

    def batch(self, seed: int, step: int, rank: int, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError

    def test_set(self) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError

    def loss(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return torch.mean((pred - target) ** 2)
