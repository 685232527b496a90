"""Bidirectional wrapper for LRA-style classifiers (b2s6 spec §2.5): a forward copy of a causal mixer plus a
copy (separate parameters) run on the time-flipped sequence; outputs summed.

With padded batches pass ``lengths`` (B,): only the valid prefix of each sequence is flipped, so the backward
copy starts at each sequence's own last real token and never reads padding before real tokens.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import nn

from ..options import MixerSpec
from ..registry import register_mixer
from .base import build_mixer, check_input


def flip_valid(x: torch.Tensor, lengths: torch.Tensor | None) -> torch.Tensor:
    """Reverse x: (B, L, d) along time within each sequence's first lengths[b] positions (padding stays)."""
    if lengths is None:
        return x.flip(1)
    L = x.shape[1]
    t = torch.arange(L, device=x.device)[None, :]
    n = lengths.to(x.device)[:, None]
    idx = torch.where(t < n, n - 1 - t, t)  # an involution: applying it twice restores x
    return x.gather(1, idx[..., None].expand_as(x))


@register_mixer("bidirectional")
class Bidirectional(nn.Module):
    example_options: ClassVar[dict] = {"mixer": {"name": "s4d", "d_state": 3}}  # Mixer clause 2
    causal = False

    def __init__(self, d_model: int, *, layer_idx: int = 0, seq_len: int | None = None, mixer: MixerSpec):
        super().__init__()
        opts = dict(mixer)
        name = opts.pop("name")
        self.d_model = d_model
        self.fwd = build_mixer(name, d_model, layer_idx=layer_idx, seq_len=seq_len, **opts)
        self.bwd = build_mixer(name, d_model, layer_idx=layer_idx, seq_len=seq_len, **opts)

    @property
    def backend(self) -> str:
        return getattr(self.fwd, "backend", "reference")

    def forward(self, x: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        """x: (B, L, d) -> (B, L, d); output t sees the whole (valid part of the) sequence."""
        check_input(x, self.d_model, "Bidirectional")
        return self.fwd(x) + flip_valid(self.bwd(flip_valid(x, lengths)), lengths)
