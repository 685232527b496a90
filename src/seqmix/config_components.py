"""Validation of a paper's component blocks (task, model, mixer) against the registered components' schemas,
which are generated from their declared options (seqmix.options)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .config_base import ConfigError, get_path, validate


def component_params(obj: Any) -> dict:
    """Parameter schema of a registered component, generated from its declared options (seqmix.options)."""
    from .options import options_schema

    return options_schema(obj)


def validate_component_blocks(paper_file: Path, exp_name: str, exp: dict) -> None:
    from . import registry

    prefix = f"experiments.{exp_name}"

    def check(where: str, block: dict, classes: dict) -> dict:
        """Resolve the components this block names (a variant may name its own task, model or mixer) and
        validate its parameters against them; returns the classes in force below this block."""
        classes = dict(classes)
        names = {
            "task": get_path(block, "task.name"),
            "model": get_path(block, "model.name"),
            "mixer": get_path(block, "model.mixer.name"),
        }
        for kind, keypath in (("task", "task.name"), ("model", "model.name"), ("mixer", "model.mixer.name")):
            if names[kind] is not None:
                try:
                    classes[kind] = registry.get(kind, names[kind])
                except registry.UnknownName as e:
                    raise ConfigError(paper_file, f"{prefix}.{where}.{keypath}", str(e)) from None
        if "task" in block:
            validate(
                _without_name(block["task"]),
                _partial(component_params(classes["task"])),
                paper_file,
                f"{prefix}.{where}.task",
            )
        if "model" in block:
            m = dict(block["model"])
            mixer = m.pop("mixer", None)
            validate(
                _without_name(m), _partial(component_params(classes["model"])), paper_file, f"{prefix}.{where}.model"
            )
            if isinstance(mixer, dict) and classes.get("mixer") is not None:
                validate_options(paper_file, f"{prefix}.{where}.model.mixer", classes["mixer"], mixer)
        return classes

    base = check("base", exp.get("base", {}), {"mixer": None})
    for v, vspec in exp.get("variants", {}).items():
        own = check(f"variants.{v}", vspec or {}, base)
        for s, sset in ((vspec or {}).get("scales") or {}).items():
            check(f"variants.{v}.scales.{s}", sset, own)
    for s, sc in exp.get("scales", {}).items():
        check(f"scales.{s}.set", sc.get("set", {}), base)


def validate_options(paper_file: Path, where: str, cls: type, block: dict) -> None:
    """A component's options against its schema, then every option that is itself a component spec (the
    mixer a ``bidirectional`` mixer runs both ways) against that component's schema, recursively."""
    from . import registry
    from .options import component_options

    validate(_without_name(block), _partial(component_params(cls)), paper_file, where)
    for opt, kind in component_options(cls).items():
        spec = block.get(opt)
        if not isinstance(spec, dict) or "name" not in spec:
            continue  # a partial override: the class it refines is not named here
        try:
            inner = registry.get(kind, spec["name"])
        except registry.UnknownName as e:
            raise ConfigError(paper_file, f"{where}.{opt}.name", str(e)) from None
        validate_options(paper_file, f"{where}.{opt}", inner, spec)


def _without_name(block: dict) -> dict:
    if not isinstance(block, dict):
        return block
    return {k: v for k, v in block.items() if k != "name"}


def _partial(schema: dict) -> dict:
    s = dict(schema)
    s.pop("required", None)
    return s
