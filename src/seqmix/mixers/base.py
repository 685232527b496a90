"""The mixer contract shared by every registered mixer of the shared library.

Constructor: ``Mixer(d_model, *, <heads/state sizes>, <options>)``; every option is listed in the class's
``config_schema`` (a JSON schema for the options a config may set; d_model comes from the model).
Forward: causal mixers map x: (B, L, d_model) -> (B, L, d_model) and output t depends on inputs 0..t only.
Mixers with a recurrent form also offer ``init_state(batch) -> state`` and ``step(x_t, state) -> (y_t, state)``
with x_t: (B, d_model); stepping through a sequence equals the parallel forward.
``backend``: which implementation of the mixer's op ran ("reference" here; a Triton kernel may report
"triton"); ``seqmix.ops.backends.backend_report`` collects it per layer.

Mixers written earlier for the heads paper take ``(d_in, d_out, seq_len, ...)``; ``build_mixer`` adapts them
(d_in = d_out = d_model), so a model can build any registered mixer from a name and a width.
"""
from __future__ import annotations

import inspect

from torch import nn

from .. import registry


def build_mixer(name: str, d_model: int, seq_len: int | None = None, **options) -> nn.Module:
    """An instance of the mixer registered as ``name`` with width ``d_model``."""
    cls = registry.get_mixer(name)
    params = inspect.signature(cls.__init__).parameters
    if "d_model" in params:
        if "seq_len" in params:
            options.setdefault("seq_len", seq_len)
        return cls(d_model, **options)
    return cls(d_in=d_model, d_out=d_model, seq_len=seq_len, **options)


def register_preset(name: str, base: type, doc: str, class_name: str, **preset) -> type:
    """Register ``base`` with some options fixed as the mixer ``name`` (e.g. ``rope`` = SoftmaxAttention with
    position="rope"): the fixed options leave the config schema, and passing one raises ValueError."""

    class Variant(base):
        config_schema = {**base.config_schema, "properties": {k: v for k, v in base.config_schema["properties"].items()
                                                             if k not in preset}}

        def __init__(self, d_model: int, **kw):
            clash = set(kw) & set(preset)
            if clash:
                raise ValueError(f"mixer {name!r} fixes {sorted(clash)}")
            super().__init__(d_model, **preset, **kw)

    Variant.__name__ = Variant.__qualname__ = class_name
    Variant.__doc__ = doc
    return registry.register_mixer(name)(Variant)


def check_positive_int(**kw) -> None:
    """Raise ValueError naming the argument unless every value is a positive int."""
    for name, v in kw.items():
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")


def check_divides(name: str, value: int, of: str, total: int) -> None:
    if total % value:
        raise ValueError(f"{name}={value} must divide {of}={total}")


def check_input(x, d_model: int, who: str) -> None:
    if x.dim() != 3 or x.shape[-1] != d_model:
        raise ValueError(f"{who}: expected input (batch, length, d_model={d_model}), got {tuple(x.shape)}")
