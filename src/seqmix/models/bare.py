"""The bare model: one mixer, nothing else (no embedding, norm or residual).

The heads paper's students and teachers are single mixers, so its experiments use this model.
"""
from __future__ import annotations

import inspect

from torch import nn

from .. import registry


@registry.register_model("bare")
class BareMixer(nn.Module):
    config_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {"mixer": {"type": "object", "required": ["name"]}},
    }

    def __init__(self, d_in: int, d_out: int, seq_len: int, mixer: dict):
        """Sizes come from the task (``Task.model_inputs``); ``mixer`` is the config's {"name": ..., options}."""
        super().__init__()
        opts = dict(mixer)
        name = opts.pop("name")
        cls = registry.get_mixer(name)
        if "d_in" in inspect.signature(cls.__init__).parameters:
            self.mixer = cls(d_in=d_in, d_out=d_out, seq_len=seq_len, **opts)
        else:  # the library's width-preserving mixers (d_model in, d_model out)
            if d_in != d_out:
                raise ValueError(f"mixer {name!r} keeps the width, but the task maps {d_in} -> {d_out} channels")
            from ..mixers.base import build_mixer

            self.mixer = build_mixer(name, d_in, seq_len, **opts)

    def sole_mixer(self) -> nn.Module:
        """The mixer this model consists of (capabilities.SoleMixer)."""
        return self.mixer

    def forward(self, x):
        return self.mixer(x)
