"""The bare model: one mixer, nothing else (no embedding, norm or residual).

The heads paper's students and teachers are single mixers, so its experiments use this model.
"""

from __future__ import annotations

from torch import nn

from .. import registry
from ..mixers.base import build_mixer
from ..options import MixerSpec


@registry.register_model("bare")
class BareMixer(nn.Module):
    def __init__(self, d_in: int, d_out: int, seq_len: int, *, mixer: MixerSpec):
        """Sizes come from the task (``Task.model_inputs``); ``mixer`` is the config's {"name": ..., options}."""
        super().__init__()
        opts = dict(mixer)
        name = opts.pop("name")
        if d_out != d_in:  # a mixer without a d_out option rejects it by name
            opts["d_out"] = d_out
        self.mixer = build_mixer(name, d_in, seq_len=seq_len, **opts)

    def sole_mixer(self) -> nn.Module:
        """The mixer this model consists of (capabilities.SoleMixer)."""
        return self.mixer

    def forward(self, x):
        return self.mixer(x)
