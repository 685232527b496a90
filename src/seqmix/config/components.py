"""Validation of a paper's component blocks (task, model, mixer) against the registered components' schemas,
which are generated from their declared options (seqmix.options)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from . import catalogue
from .base import ConfigError, get_path, set_path, validate


def component_params(obj: Any) -> dict:
    """Parameter schema of a registered component (a catalogue entry or its class), generated from its
    declared options (seqmix.options)."""
    return catalogue.entry(obj).schema


def validate_component_blocks(paper_file: Path, exp_name: str, exp: dict) -> None:
    prefix = f"experiments.{exp_name}"
    base = _check_block(paper_file, prefix, "base", exp.get("base", {}), {"mixer": None})
    for v, vspec in exp.get("variants", {}).items():
        own = _check_block(paper_file, prefix, f"variants.{v}", vspec or {}, base)
        for s, sset in ((vspec or {}).get("scales") or {}).items():
            _check_block(paper_file, prefix, f"variants.{v}.scales.{s}", sset, own)
    for s, sc in exp.get("scales", {}).items():
        _check_block(paper_file, prefix, f"scales.{s}.set", sc.get("set", {}), base)
    validate_sweep(paper_file, exp_name, exp, base)


def _check_block(paper_file: Path, prefix: str, where: str, block: dict, classes: dict) -> dict:
    """Resolve the components this block names (a variant may name its own task, model or mixer) and
    validate its parameters against them; returns the components in force below this block (catalogue
    entries: validation imports no component module)."""
    from .. import registry

    classes = dict(classes)
    for kind, keypath in (("task", "task.name"), ("model", "model.name"), ("mixer", "model.mixer.name")):
        name = get_path(block, keypath)
        if name is not None:
            try:
                classes[kind] = catalogue.get(kind, name)
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
        validate(_without_name(m), _partial(component_params(classes["model"])), paper_file, f"{prefix}.{where}.model")
        if isinstance(mixer, dict) and classes.get("mixer") is not None:
            validate_options(paper_file, f"{prefix}.{where}.model.mixer", classes["mixer"], mixer)
    return classes


# A sweep value is also a path component: the point '<name><value>' names a directory under results/.
_SAFE_POINT = re.compile(r"[A-Za-z0-9_+-][A-Za-z0-9_.+-]*")


def validate_sweep(paper_file: Path, exp_name: str, exp: dict, base_classes: dict) -> None:
    """Each sweep value (``sweep.values`` and every scale's ``sweep_values``) must be a safe path component,
    name a point no other value names ('H1' from 1 and from '1'), and fit the option it is written to
    (``sweep.path``), validated like a block of the base's components."""
    sweep = exp.get("sweep")
    if not sweep:
        return
    lists = [("sweep.values", sweep["values"])]
    lists += [
        (f"scales.{s}.sweep_values", sc["sweep_values"]) for s, sc in exp["scales"].items() if "sweep_values" in sc
    ]
    for where, values in lists:
        points: dict[str, int] = {}
        for i, value in enumerate(values):
            keypath = f"experiments.{exp_name}.{where}[{i}]"
            text = str(value)
            if isinstance(value, (dict, list)) or not _SAFE_POINT.fullmatch(text) or ".." in text:
                raise ConfigError(
                    paper_file,
                    keypath,
                    f"{value!r} becomes the path component {sweep['name'] + text!r} under results/: expected "
                    "letters, digits, '_', '.', '+' or '-' (no '/', '..', spaces, control characters, empty)",
                )
            point = f"{sweep['name']}{text}"
            if point in points:
                raise ConfigError(paper_file, keypath, f"names the point {point!r} as [{points[point]}] does")
            points[point] = i
            _check_sweep_value(paper_file, keypath, sweep["path"], value, base_classes)


def _check_sweep_value(paper_file: Path, keypath: str, dotted: str, value: Any, classes: dict) -> None:
    from .base import load_schema

    block: dict = {}
    set_path(block, dotted, value)
    top = dotted.split(".")[0]
    try:
        if top in ("task", "model"):
            _check_block(paper_file, "sweep", "value", block, classes)
        else:  # train/eval: the paper schema's own definitions
            defs = load_schema("paper")["$defs"]
            ref = "train_partial" if top == "train" else "eval"
            validate(block[top], {"$defs": defs, "$ref": f"#/$defs/{ref}"}, paper_file, top)
    except ConfigError as e:
        raise ConfigError(paper_file, keypath, f"written to {dotted}: {e.message}") from None


def validate_options(paper_file: Path, where: str, cls: type, block: dict) -> None:
    """A component's options against its schema, then every option that is itself a component spec (the
    mixer a ``bidirectional`` mixer runs both ways) against that component's schema, recursively. ``cls``:
    a catalogue entry or a registered class."""
    from .. import registry

    validate(_without_name(block), _partial(component_params(cls)), paper_file, where)
    for opt, kind in catalogue.entry(cls).component_options.items():
        spec = block.get(opt)
        if not isinstance(spec, dict) or "name" not in spec:
            continue  # a partial override: the class it refines is not named here
        try:
            inner = catalogue.get(kind, spec["name"])
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
