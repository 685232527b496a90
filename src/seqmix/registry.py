"""Name -> constructor registries for mixers, models and tasks.

A config names components by string; ``register_*`` decorators fill the tables, and ``get_*`` fail
with the list of known names. ``load_all()`` imports every module that registers something.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

_TABLES: dict[str, dict[str, Callable]] = {"mixer": {}, "model": {}, "task": {}}

# Modules that register components; imported lazily so that `import seqmix` stays cheap.
_MODULES = (
    "seqmix.mixers.factorized",
    "seqmix.models.bare",
    "seqmix.tasks.rotation_teacher",
    "seqmix.mixers.lti_ssm",
    "seqmix.mixers.mha",
    "seqmix.tasks.lag_sensitivity",
    "seqmix.models.cascade",
    "seqmix.tasks.reachability",
    "seqmix.mixers.softmax_attention",
    "seqmix.mixers.ssm",
    "seqmix.mixers.mamba",
    "seqmix.mixers.sessa",
    "seqmix.mixers.bidirectional",
    "seqmix.models.lm",
    "seqmix.models.classifier",
    "seqmix.tasks.assoc_recall",
    "seqmix.tasks.symbolsoup",
    "seqmix.tasks.diffuse_mqar",
    "seqmix.tasks.story_lm",
)


class UnknownName(KeyError):
    def __str__(self) -> str:  # KeyError quotes its message; we want it plain
        return str(self.args[0])


def _register(kind: str, name: str):
    def deco(obj):
        table = _TABLES[kind]
        if name in table and table[name] is not obj:
            raise ValueError(f"{kind} {name!r} registered twice")
        table[name] = obj
        obj.registered_name = name
        return obj

    return deco


def register_mixer(name: str):
    return _register("mixer", name)


def register_model(name: str):
    return _register("model", name)


def register_task(name: str):
    return _register("task", name)


def load_all() -> None:
    for mod in _MODULES:
        importlib.import_module(mod)


def names(kind: str) -> list[str]:
    load_all()
    return sorted(_TABLES[kind])


def get(kind: str, name: str) -> Callable:
    load_all()
    try:
        return _TABLES[kind][name]
    except KeyError:
        raise UnknownName(f"unknown {kind} {name!r}; known: {', '.join(sorted(_TABLES[kind]))}") from None


def get_mixer(name: str) -> Callable:
    return get("mixer", name)


def get_model(name: str) -> Callable:
    return get("model", name)


def get_task(name: str) -> Callable:
    return get("task", name)
