"""Validation of the merged leaves: what a job is actually given, checked before any job.

``components.validate_component_blocks`` checks each config block against the components in force where it
is written; a leaf is the deep merge of the base, the variant, the scale's ``set`` and the variant's
per-scale block (``leaves.leaf_config``), so an option can be valid in its block and wrong in the leaf: a
variant that names another mixer still inherits the base's other mixer options (``heads: 2`` of an attention
base leaking into an S6 variant). Here every leaf of the scale is checked against the options schema of the
task, model and mixer it names (the generated schema of ``seqmix.options``, cached per class), and every
task an experiment uses must implement the experiment's stages (``seqmix.training.work.StageWork.lacks``,
reached through the registry), the data a leaf's task states it needs (``Task.memory``) must fit the data
limit (``seqmix.config.memory``), and the rules between options that the components declare (heads dividing
the width, a length within its maximum: ``seqmix.config.leaf_rules``) must hold. Errors name the paper file, the
experiment and variant, and the bad key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..results import DEFAULT_STAGES
from . import catalogue, memory
from .base import ConfigError, get_path, validate
from .compatibility import incompatibility
from .leaf_rules import violations
from .leaves import expand_leaves, leaf_config, scale_variants

_SCHEMAS: dict[tuple[str, str], dict] = {}


def _schema(comp: catalogue.Component) -> dict:
    """The options schema of ``comp`` without ``required`` (the model fills sizes and model facts), once per
    component: the DAG parse checks every leaf."""
    key = (comp.kind, comp.name)
    if key not in _SCHEMAS:
        schema = dict(comp.schema)
        schema.pop("required", None)
        _SCHEMAS[key] = schema
    return _SCHEMAS[key]


def components(c: dict) -> dict:
    """{kind: catalogue entry} of the task, model and mixer a leaf config names (unknown names left out)."""
    from .. import registry

    out = {}
    for kind, keypath in (("task", "task.name"), ("model", "model.name"), ("mixer", "model.mixer.name")):
        name = get_path(c, keypath)
        if name is not None:
            try:
                out[kind] = catalogue.get(kind, name)
            except registry.UnknownName:
                pass
    return out


def skip_incompatible(paper_file: Path, cfg: dict, scale: str) -> None:
    """Drop, from every experiment with ``incompatible: skip``, the variants whose task, model and mixer cannot
    run together at ``scale`` (``compatibility.incompatibility``), and list them in ``cfg["excluded"]``
    ({experiment, variant, reason}); an experiment left with no variant is a config error."""
    excluded = cfg.setdefault("excluded", [])
    for exp_name, exp in (cfg.get("experiments") or {}).items():
        if exp.get("incompatible") != "skip":
            continue
        for variant in scale_variants(exp, scale):
            c = components(leaf_config(exp, variant, scale))
            why = incompatibility(c.get("task"), c.get("model"), c.get("mixer"))
            if why:
                excluded.append({"experiment": exp_name, "variant": variant, "reason": why})
                del exp["variants"][variant]
                for sc in exp["scales"].values():
                    if variant in (sc.get("variants") or []):
                        sc["variants"].remove(variant)
        if exp["scales"][scale].get("variants") == [] or not exp["variants"]:
            raise ConfigError(paper_file, f"experiments.{exp_name}", f"every variant is incompatible at {scale!r}")


def validate_leaves(paper_file: Path, cfg: dict, scale: str, data_limit: memory.Limit | None = None) -> None:
    """Every leaf of ``cfg`` at ``scale`` (one per experiment, variant and sweep point: seeds share a config)
    against its components' schemas, the experiment's stages and ``data_limit`` (None: the data are not
    checked; the DAG passes ``memory.limit_of`` its global config); ConfigError naming where the bad key came
    from."""
    seen: set = set()
    for leaf in expand_leaves(cfg["paper"], cfg, scale):
        key = (leaf.experiment, leaf.variant, leaf.point)
        if key in seen:
            continue
        seen.add(key)
        exp = cfg["experiments"][leaf.experiment]
        _check_leaf(paper_file, exp, leaf, scale, data_limit)


def _check_leaf(paper_file: Path, exp: dict, leaf: Any, scale: str, limit: memory.Limit | None) -> None:
    from .. import registry

    c = leaf.config
    where = f"experiments.{leaf.experiment}.variants.{leaf.variant}"
    at = f"the merged leaf of variant {leaf.variant!r} ({where}) at scale {scale!r}" + (
        f", sweep point {leaf.point!r}" if leaf.point != "-" else ""
    )

    def fail(keypath: str, problem: str) -> None:
        origin = _origin(exp, leaf.variant, scale, keypath)
        hint = ""
        kind = keypath.split(".")[0] if not keypath.startswith("model.mixer") else "model.mixer"
        if (
            origin
            and origin.startswith("base.")
            and get_path((exp["variants"].get(leaf.variant) or {}), f"{kind}.name")
        ):
            hint = (
                f"; it comes from experiments.{leaf.experiment}.{origin}, merged into a variant that names its own "
                f"{kind.split('.')[-1]} ({kind}.name: {get_path(c, kind + '.name')!r}): a variant replacing a "
                "component's name still inherits the base's other options of that block, so set this option "
                "per variant instead of in the base"
            )
        elif origin:
            hint = f"; set at experiments.{leaf.experiment}.{origin}"
        raise ConfigError(paper_file, where, f"{at}: {keypath}: {problem}{hint}")

    classes = {}
    for kind, keypath in (("task", "task.name"), ("model", "model.name"), ("mixer", "model.mixer.name")):
        name = get_path(c, keypath)
        if name is None:
            continue
        try:
            classes[kind] = catalogue.get(kind, name)
        except registry.UnknownName as e:
            fail(keypath, str(e))
    if "task" in classes:
        _check_options(classes["task"], c.get("task") or {}, "task", fail)
        found = data_over_limit(classes["task"], c, limit)
        if found:
            fail(*found)
    if "model" in classes:
        model = {k: v for k, v in (c.get("model") or {}).items() if k != "mixer"}
        _check_options(classes["model"], model, "model", fail)
    if "mixer" in classes:
        _check_options(classes["mixer"], get_path(c, "model.mixer"), "model.mixer", fail)
    for keypath, problem in violations(c, classes):
        fail(keypath, problem)
    why = incompatibility(classes.get("task"), classes.get("model"), classes.get("mixer"))
    if why:
        fail("model.mixer.name", f"{why} (experiments may set `incompatible: skip` to drop such variants)")
    task_cls = classes.get("task")
    if task_cls is not None:
        for stage in exp.get("stages") or DEFAULT_STAGES:
            why = task_cls.lacks.get(stage)
            if why:
                fail(
                    "task.name",
                    f"the task {get_path(c, 'task.name')!r} ({task_cls.qualname}) cannot run the stage {stage!r} "
                    f"that experiments.{leaf.experiment}.stages lists: {why}",
                )


RAISE_WITH = "limits.max_data_gb in config/config.yaml"


def data_over_limit(
    task: catalogue.Component, leaf: dict, limit: memory.Limit | None, raise_with: str = RAISE_WITH
) -> tuple[str, str] | None:
    """(key path, message) when the data the leaf's ``task`` states it needs exceed ``limit``; else None."""
    who = f"the task {task.name!r} ({task.qualname})"
    return memory.over_limit(task.memory, task_options(task, leaf), leaf, limit, who, raise_with)


def data_bytes(task: catalogue.Component, leaf: dict) -> int:
    """The bytes of the data the leaf's ``task`` states it needs (its known Task.memory terms)."""
    return memory.total(task.memory, task_options(task, leaf), leaf)


def task_options(task: catalogue.Component, leaf: dict) -> dict:
    """The task's options in ``leaf``: its defaults, then the leaf's task block."""
    block = leaf.get("task") if isinstance(leaf.get("task"), dict) else {}
    options = {k: p["default"] for k, p in task.schema["properties"].items() if "default" in p}
    options.update({k: v for k, v in block.items() if k != "name"})
    return options


def _check_options(cls: catalogue.Component, block: dict, keypath: str, fail) -> None:
    from .. import registry

    if not isinstance(block, dict):
        return
    schema = _schema(cls)
    allowed = schema["properties"]
    for k in block:
        if k != "name" and k not in allowed:
            fail(
                f"{keypath}.{k}",
                f"{cls.qualname} (registered as {cls.name!r}) has no option {k!r}; "
                f"its options: {', '.join(sorted(allowed)) or 'none'}",
            )
    try:
        validate({k: v for k, v in block.items() if k != "name"}, schema, "leaf", keypath)
    except ConfigError as e:
        fail(e.keypath, e.message)
    for opt, kind in cls.component_options.items():
        spec = block.get(opt)
        if isinstance(spec, dict) and "name" in spec:
            try:
                inner = catalogue.get(kind, spec["name"])
            except registry.UnknownName as e:
                fail(f"{keypath}.{opt}.name", str(e))
            _check_options(inner, spec, f"{keypath}.{opt}", fail)


def _origin(exp: dict, variant: str, scale: str, keypath: str) -> str | None:
    """Which block of the experiment sets ``keypath`` in the leaf (the last one merged wins), as a key path
    relative to the experiment; None when none does (a sweep value, or a default)."""
    sweep = exp.get("sweep")
    if sweep and (keypath == sweep["path"] or keypath.startswith(sweep["path"] + ".")):
        return "sweep.path"
    vspec = exp["variants"].get(variant) or {}
    blocks = [
        (f"variants.{variant}.scales.{scale}", (vspec.get("scales") or {}).get(scale) or {}),
        (f"scales.{scale}.set", exp["scales"][scale].get("set") or {}),
        (f"variants.{variant}", vspec),
        ("base", exp.get("base") or {}),
    ]
    for name, block in blocks:
        if get_path(block, keypath, _MISSING) is not _MISSING:
            return f"{name}.{keypath}"
    return None


_MISSING = object()
