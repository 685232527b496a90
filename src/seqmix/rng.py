"""Counter-seeded random generators: every draw is a pure function of its counters, never of draw order."""

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
