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
    def __init__(self, task, *, mixer: MixerSpec):
        super().__init__()
        opts = dict(mixer)
        name = opts.pop("name")
        if task.d_out != task.d_in:  # a mixer without a d_out option rejects it by name
            opts["d_out"] = task.d_out
        self.mixer = build_mixer(name, task.d_in, seq_len=task.seq_len, **opts)

    def forward(self, x):
        return self.mixer(x)
