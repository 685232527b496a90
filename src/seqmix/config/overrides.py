"""One-run overrides of a cell's leaf configs, for a quick try: ``seqmix train ... --set train.lr=3e-4``.

Each ``--set key.path=value`` names a key of a leaf config's ``task``, ``model``, ``train`` or ``eval`` block;
the value is read as YAML (``3e-4``, which YAML 1.1 reads as a string, is read as a number). The key path must
be one the config schema knows: ``train.*`` the paper schema's ``train`` block, ``task.*``/``model.*`` the
options schema generated from the components the leaf names (``model.mixer.*``: the mixer's, recursively),
and the untyped ``eval`` block only keys the leaf already has; the rules between options that the components
declare (``leaf_rules``) must hold in the new leaf. An unknown key, a bad value or a broken rule is a
``ConfigError`` naming ``--set``, the key path and what was expected, raised before anything runs.

The overridden run is a new run config: every leaf gets its new config and hash and an output directory
beside the command's ``--out`` (never the DAG's leaf, whose markers and checkpoint stay as they were), and
the config records ``overrides``, which the stages log as an MLflow param.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import yaml

from ..io import config_hash
from .base import ConfigError, get_path, load_schema, set_path

WHERE = "--set"  # what a ConfigError names as the file
SECTIONS = ("task", "model", "train", "eval")


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """{"train.lr": 0.0003, ...} from ``["train.lr=3e-4", ...]`` (a later item for the same key wins)."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        parts = key.split(".")
        if not sep or len(parts) < 2 or not all(parts):
            raise ConfigError(WHERE, item, "expected key.path=value, e.g. train.lr=3e-4")
        if parts[0] not in SECTIONS:
            raise ConfigError(WHERE, key, f"a key path starts with one of {', '.join(SECTIONS)}")
        out[key] = _scalar(key, raw)
    return out


def _scalar(key: str, raw: str) -> Any:
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError as e:
        raise ConfigError(WHERE, key, f"{raw!r} is not a YAML value: {getattr(e, 'problem', e)}") from None
    if isinstance(value, str):  # YAML 1.1 needs a dot in a float ('3e-4' is a string there)
        for number in (int, float):
            try:
                value = number(value)
                break
            except ValueError:
                pass
    _check_finite(key, value)
    return value


def _check_finite(key: str, value: Any) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(WHERE, key, f"expected a finite number, got {value!r}")
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_finite(f"{key}[{i}]", v)
    if isinstance(value, dict):
        for k, v in value.items():
            _check_finite(f"{key}.{k}", v)


def describe(overrides: dict[str, Any]) -> str:
    """The MLflow param value: ``train.lr=0.0003,train.steps=10`` (sorted by key)."""
    return ",".join(f"{k}={overrides[k]}" for k in sorted(overrides))


# ----------------------------------------------------------------------------- schema of one leaf


def _component_schema(kind: str, block: Any, where: str) -> dict:
    """The generated options schema of the component a block names, with ``name`` and each option that is
    itself a named component (a model's ``mixer``) resolved to that component's schema."""
    from .. import registry
    from . import catalogue

    if not isinstance(block, dict) or "name" not in block:
        return {"type": "object"}
    try:
        comp = catalogue.get(kind, block["name"])
    except registry.UnknownName as e:
        raise ConfigError(WHERE, f"{where}.name", str(e)) from None
    schema = copy.deepcopy(comp.schema)
    schema["properties"]["name"] = {"type": "string"}
    for opt, inner_kind in comp.component_options.items():
        if isinstance(block.get(opt), dict) and "name" in block[opt]:
            schema["properties"][opt] = _component_schema(inner_kind, block[opt], f"{where}.{opt}")
    return schema


def leaf_schema(cfg: dict) -> dict:
    """{section: schema} for a leaf config: the paper schema's ``train_partial`` and ``eval``, the components'
    generated option schemas for ``task`` and ``model``."""
    defs = load_schema("paper")["$defs"]
    return {
        "task": _component_schema("task", cfg.get("task"), "task"),
        "model": _component_schema("model", cfg.get("model"), "model"),
        "train": {"$defs": defs, **defs["train_partial"]},  # $defs: its $refs resolve as in the paper schema
        "eval": defs["overrides"]["properties"]["eval"],
    }


def _check_known(key: str, schemas: dict, before: dict) -> None:
    """The key path exists in the schema (typed blocks) or in the leaf as it was (untyped blocks)."""
    parts = key.split(".")
    schema: dict | None = schemas[parts[0]]
    node: Any = before.get(parts[0])
    for depth, part in enumerate(parts[1:], 1):
        under = ".".join(parts[:depth])
        props = (schema or {}).get("properties")
        if props is not None:
            if part not in props:
                raise ConfigError(WHERE, key, f"unknown key {part!r} under {under}; known: {', '.join(sorted(props))}")
            schema = props[part]
        elif isinstance(node, dict) and part in node:
            schema = None  # untyped: the leaf's own keys are the known ones
        else:
            known = ", ".join(sorted(node)) if isinstance(node, dict) else "none"
            raise ConfigError(WHERE, key, f"unknown key {part!r} under {under} (untyped there; the leaf has: {known})")
        node = node.get(part) if isinstance(node, dict) else None


def apply_to_leaf(cfg: dict, overrides: dict[str, Any]) -> dict:
    """A copy of one leaf config with the overrides set, validated as the config loader validates it."""
    from . import catalogue
    from .base import validate
    from .components import validate_options

    new = copy.deepcopy(cfg)
    for key, value in overrides.items():
        set_path(new, key, copy.deepcopy(value))
    schemas = leaf_schema(new)
    for key in overrides:
        _check_known(key, schemas, cfg)
    validate(new.get("train", {}), schemas["train"], WHERE, "train")
    for kind in ("task", "model"):
        block = new.get(kind)
        if isinstance(block, dict) and "name" in block:
            validate_options(Path(WHERE), kind, catalogue.get(kind, block["name"]), block)
    _check_rules(new)
    _check_data(cfg, new)
    return new


def _check_rules(leaf: dict) -> None:
    """The rules between options (heads dividing the width, a length within its maximum: config.leaf_rules) hold
    in the overridden leaf as in every leaf the DAG checked."""
    from .leaf_check import components
    from .leaf_rules import violations

    found = next(violations(leaf, components(leaf)), None)
    if found:
        raise ConfigError(WHERE, *found)


def _check_data(before: dict, after: dict) -> None:
    """An override that makes the leaf's data larger than the limit is refused before the job (the DAG checked
    the leaf as it was against its own limit, so an override that does not grow the data is not refused)."""
    from . import catalogue
    from .leaf_check import data_bytes, data_over_limit
    from .memory import ENV, default_limit

    block = after.get("task")
    if not (isinstance(block, dict) and "name" in block):
        return
    task = catalogue.get("task", block["name"])
    found = data_over_limit(task, after, default_limit(), f"${ENV} in GB")
    if found and data_bytes(task, after) > data_bytes(task, before):
        raise ConfigError(WHERE, *found)


def apply_to_run(run: dict, overrides: dict[str, Any], leaves_root: str | Path) -> dict:
    """A cell's run config with every leaf overridden: new config, hash and output directory
    (``<leaves_root>/<leaf id>``), and ``overrides`` recorded at the top."""
    if get_path(run, "results") and _inside(leaves_root, run["results"]):
        raise ConfigError(
            WHERE,
            "--out",
            f"an overridden run writes beside --out, which is inside the DAG's results ({run['results']}); "
            "give a directory outside it",
        )
    new = copy.deepcopy(run)
    for leaf in new["leaves"]:
        leaf["config"] = apply_to_leaf(leaf["config"], overrides)
        leaf["hash"] = config_hash(leaf["config"])
        leaf["out_dir"] = str(Path(leaves_root) / leaf["id"])
    new["overrides"] = dict(sorted(overrides.items()))
    return new


def _inside(path: str | Path, root: str | Path) -> bool:
    return Path(path).resolve().is_relative_to(Path(root).resolve())


def write_overridden_run(run_path: str, out_path: str, items: list[str]) -> str:
    """Write ``<dir of out_path>/run.json``, the run config with ``items`` applied; returns its path (what the
    stage then runs, locally or on the cluster)."""
    from ..io import read_json, write_json

    overrides = parse_overrides(items)
    out_dir = Path(out_path).resolve().parent
    run = apply_to_run(read_json(run_path), overrides, out_dir)
    path = out_dir / "run.json"
    write_json(path, run)
    return str(path)
