"""The measured speed table the dispatcher reads (``speed_table.json`` beside this file): per card, per op,
the forward + backward speedup of each fast backend over the op's reference, the smallest over the op's
benchmark shapes. Written only by ``python benchmarks/kernels.py --table`` from a run on that card (never by
hand); the dispatcher turns a backend on automatically only where its figure here is above 1.

    {"cards": {"NVIDIA H200": {"date": "...", "source": "...", "ops": {"ssd": {"fused": 2.3, "triton": 0.47}}}}}
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import torch

TABLE = Path(__file__).with_name("speed_table.json")


@functools.cache
def load(path: Path = TABLE) -> dict:
    """The table's ``cards`` mapping (empty when the file is missing: nothing is automatic on CUDA)."""
    if not path.exists():
        return {}
    return json.loads(path.read_text()).get("cards", {})


def card_name(device: torch.device | str) -> str | None:
    """The CUDA card's name for ``device``; None without a usable CUDA device (torch.cuda is not touched on a
    CPU-only build)."""
    device = torch.device(device)
    if device.type != "cuda" or not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_name(device.index if device.index is not None else torch.cuda.current_device())


def speedups(op: str, card: str | None, cards: dict | None = None) -> dict[str, float]:
    """backend -> measured speedup over the reference for ``op`` on ``card``; a card not in the table (or None)
    reads the first card listed, the nearest thing to a measurement we have."""
    cards = load() if cards is None else cards
    if not cards:
        return {}
    entry = cards.get(card) if card is not None else None
    entry = entry if entry is not None else next(iter(cards.values()))
    return dict(entry.get("ops", {}).get(op, {}))
