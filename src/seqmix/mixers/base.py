"""The mixer contract shared by every registered mixer of the shared library: :class:`Mixer` (its docstring
is the contract, clause by clause; ``tests/mixers/test_contract.py`` enforces each clause for every registered
mixer in tests named ``test_clause_<N>_...``, and only what the clauses state), plus ``build_mixer`` and
``register_preset``."""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

import torch
from torch import nn

from .. import registry
from ..options import option_names


class Mixer(Protocol):
    """The contract of a registered mixer; tests/mixers/test_contract.py checks every clause below.

    1. Constructor: ``Mixer(d_model, *, layer_idx=0, seq_len=None, **options)``. ``d_model`` is the only
       positional parameter; ``layer_idx`` and ``seq_len`` are keyword-only (a preset made by
       ``register_preset`` forwards them); every option is a typed keyword-only parameter with its constraints
       beside it (``seqmix.options``), and the config schema is generated from them. ``layer_idx`` is the
       mixer's position in its stack (per-layer values, e.g. random seeds, derive from it); ``seq_len`` is the
       model's sequence length (None when the model has none). A mixer mapping d_in -> d_out channels takes
       ``d_model`` = d_in and ``d_out`` as an option. Built from the defaults its signature declares, plus
       its required options (those without a default) as ``example_options`` gives them, at width 64, it
       runs. An option value it cannot be built with (a head count that does not divide the width, a state
       size of 0) is a ValueError naming that option.
    2. ``example_options``: a dict class attribute, small options that build it at width 8 and length 6 (the
       contract test) and learn at width 32 (the learning test); valid against the generated schema, and
       giving every required option. ``benchmarks/mixers.py`` takes its required options from it. None of
       the three keeps a hand list, so a new mixer needs no edit of theirs.
    3. ``causal``: a bool class attribute. A causal mixer's output at t depends on inputs 0..t only, and on
       input t itself; a non-causal one (``bidirectional``) sees the whole sequence: its first output
       depends on the last input.
    4. ``forward(x)``: x (B, L, d_model) -> (B, L, d_model), of x's dtype (float32 and float64), finite, and
       differentiable (float64 gradcheck), at any length L (up to ``seq_len`` when given); a class whose
       parameters are tied to the training length declares ``fixed_length = True`` and takes L = ``seq_len``
       only. An input whose last dimension is not ``d_model`` is a ValueError that states the expected width
       (``check_input`` below writes one).
    5. ``backend``: a str attribute (or property, or ``ops.dispatch.BackendOf`` descriptor) naming what runs
       on the mixer's device: "reference" (plain torch: an op's reference backend, or no op at all), "lean",
       "fused" or "triton" (an op's other backends, ``seqmix.ops.dispatch``), or "torch-reference" (what
       ``backend_report`` says of a module that declares none; plain-torch mixers may declare it so that
       their run tags stay the same). A mixer whose ops run on different backends joins their names,
       sorted, with "+". On CPU it is never "fused" or "triton" (the automatic choice there is lean or
       reference). ``seqmix.ops.backends.backend_report`` collects it per layer, under the mixer's path.
    6. Step mode, optional (``seqmix.capabilities.StepMode``): a causal mixer with a recurrent form offers
       ``init_state(batch, dtype=torch.float32, device=None) -> state`` (StepMode's signature) and
       ``step(x_t, state) -> (y_t, state)`` with x_t, y_t: (B, d_model); stepping through a sequence from
       ``init_state`` equals the parallel forward. A mixer has both methods or neither.

    Beside the contract, a mixer whose constructor refuses some widths or option pairs declares the rule
    (``divides = {"heads": "d_model"}``), so the config check refuses such a leaf before any job
    (``seqmix.config.leaf_rules``).
    """

    example_options: ClassVar[dict]
    causal: ClassVar[bool]
    backend: Any  # str, or a property / ``ops.dispatch.BackendOf`` descriptor giving one

    def __init__(self, d_model: int, *, layer_idx: int = 0, seq_len: int | None = None, **options: Any) -> None: ...

    def forward(self, x: torch.Tensor) -> torch.Tensor: ...


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
