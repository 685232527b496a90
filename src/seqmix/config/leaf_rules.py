"""Rules between a leaf's options that no single option's schema can state, checked on every merged leaf before
any job (``leaf_check``) and on a leaf that ``--set`` changed (``overrides``). Each failed a job before.

The components declare them as class attributes, which the component catalogue records (``declared``, called
when the catalogue is built (``catalogue.rules_of``), so the DAG parse reads them without importing torch):

- ``divides = {option: expression}``: the option's value divides the expression's; a multi-head mixer declares
  ``{"heads": "d_model"}``, Mamba2 ``{"headdim": "expand * d_model", ...}``.
- ``at_most = {option: expression}``: the option's value is at most the expression's; ListOps declares
  ``{"min_len": "max_len"}``, the rotations LM the evaluation length its validation stream holds.
- ``mixer_width = "<option>"`` (models): the model option that is its mixers' width, read as ``d_model`` in a
  mixer's expressions (a mixer option spec nested in a mixer, ``bidirectional``'s, is built at that width too).
  A model without one (the bare model: its width is the task's) leaves ``d_model`` unknown, and so does
  ``target_params``, with which ``models.build_model`` picks the width itself among those the mixer accepts.
- ``sets_mixer_options = {model option: [mixer option, ...]}`` (models): while the model option is true the model
  sets those mixer options itself (the b2s6 probe's ``square_blocks`` sets ``blocks``): its own check, not the
  leaf's.

An expression is ``config.memory``'s arithmetic over the component's options (the leaf's values, else their
defaults), ``d_model`` in a mixer's, and the leaf's key paths (``task.max_len``, ``train.batch``). A rule whose
expression reads a null value, or gives None (``... if source == 'synthetic' else None``), is not checked: the
value is known only once the job reads its data. Besides the declared rules, one rule holds for every leaf: the
warmup of a schedule fits in its training steps.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

from . import catalogue, memory
from .base import get_path
from .catalogue import RELATIONS, WIDTH

CHOSEN_WIDTH = "target_params"  # with it set, models.build_model chooses the width (models.option_groups.Stack)
_MISSING = object()


# ----------------------------------------------------------------------------- a leaf


def violations(leaf: dict, components: dict) -> Iterator[tuple[str, str]]:
    """(key path to blame, message) for each rule the merged ``leaf`` breaks; ``components`` are the catalogue
    entries of the task, model and mixer it names ({kind: catalogue.Component}, unknown names left out)."""
    yield from _warmup(leaf)
    task, model, mixer = (components.get(k) for k in ("task", "model", "mixer"))
    if task is not None:
        yield from _check(task, leaf.get("task"), "task", leaf)
    if model is not None:
        block = {k: v for k, v in (leaf.get("model") or {}).items() if k != "mixer"}
        yield from _check(model, block, "model", leaf)
    if mixer is not None:
        width, set_by_model = _mixer_context(model, leaf)
        yield from _check_mixer(mixer, get_path(leaf, "model.mixer"), "model.mixer", leaf, width, set_by_model)


def _warmup(leaf: dict) -> Iterator[tuple[str, str]]:
    """A schedule whose warmup outlasts training never reaches its peak."""
    train = leaf.get("train") or {}
    steps, warmup = train.get("steps"), train.get("warmup_steps")
    if isinstance(steps, int) and isinstance(warmup, int) and warmup > steps:
        yield "train.warmup_steps", f"{warmup} warmup steps exceed the {steps} training steps"


def _mixer_context(model: Any, leaf: dict) -> tuple[tuple[Any, str] | None, set]:
    """((the mixers' width, the key path it comes from) or None when unknown, the mixer options the model sets)."""
    if model is None:
        return None, set()
    rules, block = model.rules, leaf.get("model") or {}
    set_by_model = {
        o for flag, opts in (rules.get("sets_mixer_options") or {}).items() if block.get(flag) for o in opts
    }
    name = rules.get("mixer_width")
    if not name or block.get(CHOSEN_WIDTH) is not None:
        return None, set_by_model
    value = block.get(name, _defaults(model).get(name))
    return ((value, f"model.{name}") if value is not None else None), set_by_model


def _check_mixer(mixer, block, keypath: str, leaf: dict, width, set_by_model: set) -> Iterator[tuple[str, str]]:
    from .. import registry

    if not isinstance(block, dict):
        return
    yield from _check(mixer, block, keypath, leaf, width, set_by_model)
    for opt in mixer.component_options:
        spec = block.get(opt)
        if isinstance(spec, dict) and "name" in spec:
            try:
                inner = catalogue.get(mixer.component_options[opt], spec["name"])
            except registry.UnknownName:
                continue  # named by the options check
            yield from _check_mixer(inner, spec, f"{keypath}.{opt}", leaf, width, set())


def _defaults(comp: Any) -> dict:
    return {k: p["default"] for k, p in comp.schema.get("properties", {}).items() if "default" in p}


def _check(comp, block, keypath: str, leaf: dict, width=None, skip: set = frozenset()) -> Iterator[tuple[str, str]]:
    """The rules ``comp`` declares, on its ``block`` of the leaf (at ``keypath``); ``width``: (the mixers'
    width, its key path) or None, ``skip``: options the model sets itself."""
    if not isinstance(block, dict):
        return
    fixed = comp.rules.get("fixed") or {}
    options = {**_defaults(comp), **fixed, **{k: v for k, v in block.items() if k != "name"}}
    # name -> (value, key path) of what an expression reads (a preset's fixed option is no key of the leaf)
    names = {k: (v, f"fixed by {comp.name!r}") for k, v in fixed.items() if k not in block}
    names = {**{k: (v, f"{keypath}.{k}") for k, v in options.items()}, **names}
    if comp.kind == "mixer":
        names[WIDTH] = width or (None, "")
    for relation in RELATIONS:
        for option, expression in (comp.rules.get(relation) or {}).items():
            value = options.get(option)
            if option in skip or not _number(value) or (relation == "divides" and value == 0):
                continue
            read: dict[str, tuple[Any, str]] = {}
            try:
                bound = memory.evaluate(expression, functools.partial(_read, names, leaf, read))
            except memory.Unknown:
                continue
            if _number(bound) and ((bound % value != 0) if relation == "divides" else (value > bound)):
                message = _message(comp, relation, option, value, expression, bound, read)
                yield _blame(f"{keypath}.{option}", read, leaf), message


def _read(names: dict, leaf: dict, read: dict, name: str) -> Any:
    """The value of a name in an expression (a dotted one is the leaf's key path), recorded in ``read``."""
    read[name] = (get_path(leaf, name), name) if "." in name else names.get(name, (None, ""))
    return read[name][0]


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _blame(key: str, read: dict, leaf: dict) -> str:
    """The option's key path when the leaf sets it, else the first key path of the expression that it sets (the
    option is then its default: the value to change is the other one); else the option's."""
    for candidate in [key, *(k for _, k in read.values() if k)]:
        if get_path(leaf, candidate, _MISSING) is not _MISSING:
            return candidate
    return key


def _message(comp, relation: str, option: str, value, expression: str, bound, read: dict) -> str:
    values = ", ".join(f"{n} = {_fmt(v)} ({k})" if k else f"{n} = {_fmt(v)}" for n, (v, k) in read.items())
    if expression.strip() not in read:  # a single name is its own value
        values = f"{expression} = {_fmt(bound)}, with {values}"
    verb = "must divide" if relation == "divides" else "exceeds its maximum"
    return (
        f"{option} = {value} {verb} {values}: a rule of {comp.qualname} (registered as {comp.name!r}, its "
        f"`{relation}`); change either value"
    )


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() else f"{v:.6g}"
    return repr(v) if isinstance(v, str) else str(v)
