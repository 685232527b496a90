"""What config validation needs of the registered components, without importing them: each component's
generated options schema (seqmix.options), its options that name other components and, for tasks, the summary
columns each stage declares.

Building it imports every component module (torch with them: about 1.2 s at the DAG parse of every
`snakemake` call). So it is built once per version of the sources and kept as JSON in the user cache
(``$SEQMIX_CACHE_DIR``, else ``$XDG_CACHE_HOME/seqmix``, else ``~/.cache/seqmix``), under a key that hashes
every ``.py`` file of the seqmix package, the Python version and the entry points of the component groups
(plugins). An edited source, another interpreter or another plugin set gives another key, so a stale
catalogue is never read. A name the catalogue lacks (a plugin registered in this process only) is looked up
in the registry itself, which also words the unknown-name error."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_PACKAGE = Path(__file__).resolve().parents[1]  # src/seqmix


@dataclass(frozen=True)
class Component:
    """A registered component as config validation sees it."""

    kind: str
    name: str
    schema: dict  # options_schema(cls)
    component_options: dict = field(default_factory=dict)  # {option: component kind} (MixerSpec options)
    summary_columns: dict = field(default_factory=dict)  # tasks: {stage: [column, ...]}
    qualname: str = ""  # the class, for messages
    lacks: dict = field(default_factory=dict)  # tasks: {stage: what the task lacks to run it, or None}
    capabilities: dict = field(default_factory=dict)  # the declared class attributes of CAPABILITIES
    memory: dict = field(default_factory=dict)  # tasks: {what: bytes expression} (Task.memory, config.memory)
    rules: dict = field(default_factory=dict)  # the declared rules between options (rules_of, config.leaf_rules)


_memo: dict[str, dict] = {}  # key -> {kind: {name: Component}}, per process
_key: list[str] = []  # the source key, computed once per process (hashing the sources takes a few ms)


def cache_dir() -> Path:
    if os.environ.get("SEQMIX_CACHE_DIR"):
        return Path(os.environ["SEQMIX_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "seqmix"


def source_key() -> str:
    """The hash of what the catalogue is generated from: seqmix's sources, the interpreter, the plugins."""
    import importlib.metadata

    from ..registry import ENTRY_POINT_GROUPS

    h = hashlib.sha256(f"{sys.version_info[:3]}".encode())
    for f in sorted(_PACKAGE.rglob("*.py")):
        h.update(str(f.relative_to(_PACKAGE)).encode() + b"\0" + f.read_bytes() + b"\0")
    for group in sorted(ENTRY_POINT_GROUPS.values()):
        eps = sorted((ep.name, ep.value) for ep in importlib.metadata.entry_points(group=group))
        h.update(json.dumps([group, eps]).encode())
    return h.hexdigest()[:20]


def _build() -> dict:
    """Imports every component (and torch): the catalogue as JSON-able data."""
    from .. import registry
    from ..options import component_options, options_schema

    registry.load_all()
    out: dict = {}
    for kind, table in registry._TABLES.items():
        out[kind] = {
            name: {
                "schema": options_schema(cls),
                "component_options": component_options(cls),
                "summary_columns": {k: list(v) for k, v in (getattr(cls, "summary_columns", None) or {}).items()},
                "qualname": cls.__qualname__,
                "lacks": _lacks(kind, cls),
                "capabilities": capabilities_of(kind, cls),
                "memory": memory_of(kind, cls),
                "rules": rules_of(kind, cls),
            }
            for name, cls in sorted(table.items())
        }
    return json.loads(json.dumps(out))  # what a reader of the cached file gets


# What a class declares about which others it works with (config.compatibility reads them): a mixer whether it
# is causal (Mixer.causal) and whether its parameters are tied to the training length (fixed_length: per-position
# tables); a model whether its mixers must be causal (requires_causal_mixer: next-token prediction); a task
# whether it evaluates beyond the training length (evaluates_longer: length extrapolation).
CAPABILITIES = {
    "mixer": {"causal": True, "fixed_length": False},
    "model": {"requires_causal_mixer": False},
    "task": {"evaluates_longer": False},
}


def capabilities_of(kind: str, cls: Any) -> dict:
    return {k: bool(getattr(cls, k, default)) for k, default in CAPABILITIES.get(kind, {}).items()}


def memory_of(kind: str, cls: Any) -> dict:
    return dict(getattr(cls, "memory", None) or {}) if kind == "task" else {}


# Rules between options that a class declares (config.leaf_rules checks them on every leaf and says what each
# means): ``divides`` and ``at_most``, {option: expression}, for any component; ``mixer_width`` and
# ``sets_mixer_options`` for models. An expression reads the class's options, ``d_model`` (a mixer's width) and the
# leaf's key paths under ROOTS.
RELATIONS = ("divides", "at_most")
WIDTH = "d_model"  # a mixer's width, as its constructor calls it
ROOTS = ("task", "model", "train", "eval")


def rules_of(kind: str, cls: Any) -> dict:
    """The rules ``cls`` declares, as JSON-able data; TypeError naming the attribute when one names an option the
    class does not have (a misspelt rule would otherwise never be checked)."""
    from ..options import option_names
    from .memory import names_of

    options = set(option_names(cls)) | set(getattr(cls, "fixed_options", None) or {})
    listed = ", ".join(sorted(options)) or "none"
    out: dict = {}
    for relation in RELATIONS:
        rules = dict(getattr(cls, relation, None) or {})
        for option, expression in rules.items():
            where = f"{cls.__qualname__}.{relation}[{option!r}]"
            if option not in options:
                raise TypeError(f"{where}: {option!r} is not an option of {cls.__qualname__} ({listed})")
            for name in names_of(expression):
                root, dot, _ = name.partition(".")
                if (dot and root not in ROOTS) or (
                    not dot and name not in options and (kind, name) != ("mixer", WIDTH)
                ):
                    width = f", nor {WIDTH} (its width)" if kind == "mixer" else ""
                    raise TypeError(
                        f"{where}: {name!r} in {expression!r} is neither an option of {cls.__qualname__} ({listed})"
                        f"{width} nor a key path under {', '.join(ROOTS)}"
                    )
        if rules:
            out[relation] = rules
    fixed = {k: v for k, v in (getattr(cls, "fixed_options", None) or {}).items() if isinstance(v, (str, int, float))}
    if fixed and any(r in out for r in RELATIONS):  # a preset's fixed options are values its rules read
        out["fixed"] = fixed
    if kind == "model":
        width = getattr(cls, "mixer_width", None)
        sets = {k: list(v) for k, v in (getattr(cls, "sets_mixer_options", None) or {}).items()}
        for attr, names in (("mixer_width", [width] if width else []), ("sets_mixer_options", list(sets))):
            for name in names:
                if name not in options:
                    raise TypeError(f"{cls.__qualname__}.{attr}: {name!r} is not an option ({listed})")
        out.update({"mixer_width": width} if width else {}, **({"sets_mixer_options": sets} if sets else {}))
    return out


def _lacks(kind: str, cls: Any) -> dict:
    """For a task: per stage, what it lacks to run it (seqmix.training.work.StageWork.lacks), else None."""
    if kind != "task":
        return {}
    from .. import registry
    from ..results import STAGES

    work = registry.worker("stages")
    return {stage: work.lacks(cls, stage) for stage in STAGES}


def _load() -> dict:
    if not _key:
        _key.append(source_key())
    key = _key[0]
    if key in _memo:
        return _memo[key]
    path = cache_dir() / f"components-{key}.json"
    data = None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        pass
    if not isinstance(data, dict):
        data = _build()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data, sort_keys=True))
            os.replace(tmp, path)  # atomic: a parallel reader sees the old file or the whole new one
        except OSError:
            pass  # a read-only cache: validate from the registry every time
    table = {
        kind: {name: Component(kind, name, **entry) for name, entry in names.items()} for kind, names in data.items()
    }
    _memo[key] = table
    return table


def get(kind: str, name: str) -> Component:
    """The component ``name`` of ``kind``; registry.UnknownName (with the known names) when none is."""
    hit = _load().get(kind, {}).get(name)
    if hit is not None:
        return hit
    return of_class(kind, name, _registry_get(kind, name))


def _registry_get(kind: str, name: str) -> Any:
    from .. import registry

    return registry.get(kind, name)


def of_class(kind: str, name: str, cls: Any) -> Component:
    """The catalogue entry of a class at hand (tests and plugins registered in this process)."""
    from ..options import component_options, options_schema

    cols = getattr(cls, "summary_columns", None) or {}
    return Component(
        kind,
        name,
        options_schema(cls),
        component_options(cls),
        {k: list(v) for k, v in cols.items()},
        cls.__qualname__,
        _lacks(kind, cls),
        capabilities_of(kind, cls),
        memory_of(kind, cls),
        rules_of(kind, cls),
    )


def entry(obj: Any) -> Component:
    """A Component as is, a registered class as its Component."""
    if isinstance(obj, Component):
        return obj
    return of_class("", getattr(obj, "registered_name", getattr(obj, "__name__", "?")), obj)
