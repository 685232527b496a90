"""The bare model: one mixer, nothing else (no embedding, norm or residual).

The heads paper's students and teachers are single mixers, so its experiments use this model.
"""
from __future__ import annotations

from torch import nn

from .. import registry


@registry.register_model("bare")
class BareMixer(nn.Module):
    config_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {"mixer": {"type": "object", "required": ["name"]}},
    }

    def __init__(self, task, mixer: dict):
        super().__init__()
        opts = dict(mixer)
        cls = registry.get_mixer(opts.pop("name"))
        self.mixer = cls(d_in=task.d_in, d_out=task.d_out, seq_len=task.seq_len, **opts)

    def forward(self, x):
        return self.mixer(x)
