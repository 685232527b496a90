"""The mixer contract shared by every registered mixer of the shared library.

Constructor (one for all): ``Mixer(d_model, *, layer_idx=0, seq_len=None, **options)``. The options are the
typed keyword-only parameters of ``__init__``, with their constraints beside them (``seqmix.options``); the
config schema is generated from them. ``layer_idx`` is the mixer's position in its stack: a mixer that
needs per-layer values (e.g. independent random seeds) derives them from its own options and ``layer_idx``.
``seq_len`` is the model's sequence length (None when the model has none). A mixer that maps d_in -> d_out
channels takes ``d_model`` = d_in and ``d_out`` as an option.
Forward: causal mixers map x: (B, L, d_model) -> (B, L, d_model) and output t depends on inputs 0..t only.
Mixers with a recurrent form also offer ``init_state(batch) -> state`` and ``step(x_t, state) -> (y_t, state)``
with x_t: (B, d_model); stepping through a sequence equals the parallel forward.
``backend``: which implementation of the mixer's op ran ("reference" here; the selective-scan units report
"lean" on CPU, a Triton kernel "triton"); ``seqmix.ops.backends.backend_report`` collects it per layer.
"""

from __future__ import annotations

from torch import nn

from .. import registry
from ..options import option_names

# Facts of the model a mixer may declare as an option (e.g. per-token tables need the vocabulary size);
# the model fills them unless the config sets them.
MODEL_FACTS = ("vocab_size",)


def build_mixer(
    name: str,
    d_model: int,
    *,
    layer_idx: int = 0,
    seq_len: int | None = None,
    model_facts: dict | None = None,
    **options,
) -> nn.Module:
    """An instance of the mixer registered as ``name`` with width ``d_model`` (layer ``layer_idx`` of its
    stack). ``model_facts`` ({"vocab_size": V}) fill the options of those names that the mixer declares."""
    cls = registry.get_mixer(name)
    known = option_names(cls)
    unknown = sorted(set(options) - set(known) - set(getattr(cls, "fixed_options", {})))
    if unknown:
        raise ValueError(f"mixer {name!r}: unknown option(s) {unknown}; options: {', '.join(known)}")
    for k, v in (model_facts or {}).items():
        if k in MODEL_FACTS and k in known and v is not None:
            options.setdefault(k, v)
    return cls(d_model, layer_idx=layer_idx, seq_len=seq_len, **options)


def register_preset(name: str, base: type, doc: str, class_name: str, **preset) -> type:
    """Register ``base`` with some options fixed as the mixer ``name`` (e.g. ``rope`` = SoftmaxAttention with
    position="rope"): the fixed options leave the generated schema, and passing one raises ValueError."""

    class Variant(base):
        fixed_options = dict(preset)

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
