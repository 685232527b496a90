"""The config's foundation: the error every config problem raises (file, key path, expectation), YAML
loading, JSON-schema validation with readable messages, and dotted-path helpers. Imports nothing of seqmix
but ``credentials`` (which imports nothing), so every config module (claims, components, artefacts, leaves)
can build on it without circles."""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from .credentials import redact

SCHEMA_DIR_DEFAULT = Path(__file__).resolve().parents[3] / "workflow" / "schemas"


class ConfigError(ValueError):
    """A config problem, reported as '<file>: <key.path>: <what was expected>'. The message never shows a
    URI's password: a schema error quotes the value it refuses, and every config error reaches the logs."""

    def __init__(self, file: str | Path, keypath: str, message: str):
        message = redact(message)
        self.file, self.keypath, self.message = str(file), keypath, message
        super().__init__(f"{file}: {keypath or '<top>'}: {message}")


# ----------------------------------------------------------------------------- YAML + schema


# libyaml's loader when PyYAML was built with it (8x faster on the 296 KB the DAG parse reads; the same
# documents, nodes and marks), else the pure-Python one
_SAFE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(path: str | Path, *, loader_class: Any = None) -> Any:
    """The YAML document of ``path``; a syntax error or a key given twice in one mapping (which PyYAML
    silently resolves to the last one: a copy-pasted experiment would replace the first) is a ConfigError
    naming the line. ``loader_class`` overrides the loader (tests compare the C and the pure one)."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(path, "", "file does not exist")
    try:
        with open(path) as f:
            loader = (loader_class or _SAFE_LOADER)(f)
            try:
                node = loader.get_single_node()
                if node is None:
                    return None
                _reject_duplicate_keys(path, node, [])
                return loader.construct_document(node)
            finally:
                loader.dispose()
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "?"
        raise ConfigError(path, "", f"malformed YAML at {where}: {getattr(e, 'problem', e)}") from None


# YAML aliases (superposition reuses experiment blocks with &base / *base) are expanded by every walker of a
# config; a 500-byte file of nested aliases ("billion laughs") expands to ~10^9 nodes and stalled every
# Snakemake start. The largest real config expands to under 10^5 nodes.
MAX_EXPANDED_NODES = 1_000_000


def _reject_duplicate_keys(path: Path, node: yaml.Node, parts: list) -> None:
    """Duplicate keys are an error; so are an alias inside itself and more than MAX_EXPANDED_NODES nodes once
    aliases are expanded (both named, instead of a RecursionError or a stall)."""
    budget = [MAX_EXPANDED_NODES]
    _walk_keys(path, node, parts, budget, set())


def _walk_keys(path: Path, node: yaml.Node, parts: list, budget: list, open_nodes: set) -> None:
    budget[0] -= 1
    if budget[0] < 0:
        raise ConfigError(
            path, "", f"the YAML expands to more than {MAX_EXPANDED_NODES:,} nodes through its aliases (&/*): refused"
        )
    if id(node) in open_nodes:
        raise ConfigError(
            path, _keypath(parts), f"an alias at line {node.start_mark.line + 1} contains itself (recursive YAML)"
        )
    if isinstance(node, yaml.SequenceNode):
        open_nodes.add(id(node))
        for i, item in enumerate(node.value):
            _walk_keys(path, item, [*parts, i], budget, open_nodes)
        open_nodes.discard(id(node))
    elif isinstance(node, yaml.MappingNode):
        open_nodes.add(id(node))
        first: dict = {}
        for key, value in node.value:
            name = key.value if isinstance(key, yaml.ScalarNode) else None
            if name is not None and name in first:
                raise ConfigError(
                    path,
                    _keypath([*parts, name]),
                    f"duplicate key {name!r} at line {key.start_mark.line + 1} (first at line {first[name]}): "
                    "expected each key once per mapping",
                )
            if name is not None:
                first[name] = key.start_mark.line + 1
            _walk_keys(path, value, [*parts, name], budget, open_nodes)
        open_nodes.discard(id(node))


def reject_non_finite(data: Any, file: str | Path, parts: tuple = ()) -> None:
    """Every number of a config must be finite: JSON schema bounds are comparisons, and every comparison
    with NaN is false, so ``lr: .nan`` would pass ``exclusiveMinimum: 0`` and fail inside the optimiser."""
    if isinstance(data, float) and not math.isfinite(data):
        raise ConfigError(file, _keypath(parts), f"expected a finite number, got {data!r}")
    if isinstance(data, dict):
        for k, v in data.items():
            reject_non_finite(v, file, (*parts, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            reject_non_finite(v, file, (*parts, i))


def _keypath(parts: Iterable[Any]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def validate(instance: Any, schema: dict, file: str | Path, prefix: str = "") -> None:
    """Validate against a JSON schema; raise ConfigError for the most relevant error."""
    import jsonschema

    validator = _strict_validator()(schema)
    errors = sorted(validator.iter_errors(instance), key=lambda e: (len(list(e.absolute_path)), str(e.message)))
    if not errors:
        return
    err = _pick_alternative(jsonschema.exceptions.best_match(errors))
    parts = list(err.absolute_path)
    expected = err.message
    disc = _discriminator(err) if err.validator == "oneOf" else None
    if disc is not None:
        # e.g. a claim check whose `kind` names no known alternative
        key, values = disc
        got = err.instance.get(key) if isinstance(err.instance, dict) else err.instance
        parts.append(key)
        expected = f"expected one of {', '.join(map(repr, values))}, got {got!r}"
    path = _keypath(parts)
    if prefix:
        path = f"{prefix}.{path}" if path else prefix
    if err.validator == "additionalProperties":
        allowed = sorted(err.schema.get("properties", {}))
        expected = f"{err.message}; allowed keys: {', '.join(allowed)}"
    elif err.validator == "type":
        expected = f"expected {err.validator_value}, got {type(err.instance).__name__} {err.instance!r}"
    raise ConfigError(file, path, expected)


@functools.cache
def _strict_validator() -> Any:
    """Draft 2020-12 with ``integer`` meaning a Python int: the draft accepts 3000.0 as an integer, which a
    step count, a seed or a size then carries into range() or a path ('seed0.0') as a float."""
    import jsonschema

    def is_int(checker, instance) -> bool:
        return isinstance(instance, int) and not isinstance(instance, bool)

    base = jsonschema.Draft202012Validator
    return jsonschema.validators.extend(base, type_checker=base.TYPE_CHECKER.redefine("integer", is_int))


def _discriminator(err: Any) -> tuple[str, list] | None:
    """The key whose ``const`` tells a oneOf's alternatives apart (a claim check's ``kind``), and its values."""
    consts = []
    for alt in err.validator_value:
        props = alt.get("properties", {}) if isinstance(alt, dict) else {}
        consts.append(next(((k, p["const"]) for k, p in props.items() if isinstance(p, dict) and "const" in p), None))
    if not consts or None in consts or len({k for k, _ in consts}) != 1:
        return None
    return consts[0][0], [v for _, v in consts]


def _pick_alternative(err: Any) -> Any:
    """A oneOf error is opaque ('... is not valid under any of the given schemas'); when the alternatives
    are told apart by a const key and the instance names one, report that alternative's own error."""
    import jsonschema

    while err.validator == "oneOf" and isinstance(err.instance, dict) and err.context:
        disc = _discriminator(err)
        if disc is None or err.instance.get(disc[0]) not in disc[1]:
            break
        idx = disc[1].index(err.instance[disc[0]])
        sub = [e for e in err.context if e.relative_schema_path and e.relative_schema_path[0] == idx]
        if not sub:
            break
        err = jsonschema.exceptions.best_match(sub)
    return err


def load_schema(name: str, schema_dir: Path | None = None) -> dict:
    """The schema ``<name>.schema.yaml``, parsed once per process and file version (a paper load asks for
    the paper schema about 7 times: 39 parses, a fifth of a DAG parse's config time); a copy, so a caller
    may change it."""
    path = (schema_dir or SCHEMA_DIR_DEFAULT) / f"{name}.schema.yaml"
    try:
        stat = path.stat()
    except FileNotFoundError:
        return load_yaml(path)  # the ConfigError naming the file
    return copy.deepcopy(_parsed_schema(path, stat.st_mtime_ns, stat.st_size))


@functools.lru_cache(maxsize=32)
def _parsed_schema(path: Path, _mtime_ns: int, _size: int) -> dict:
    return load_yaml(path)


# ----------------------------------------------------------------------------- merging


def deep_merge(base: dict, over: dict | None) -> dict:
    out = copy.deepcopy(base)
    for k, v in (over or {}).items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def set_path(d: dict, dotted: str, value: Any) -> None:
    keys = dotted.split(".")
    for k in keys[:-1]:
        d = d.setdefault(k, {})
    d[keys[-1]] = value


def get_path(d: dict, dotted: str, default: Any = None) -> Any:
    for k in dotted.split("."):
        if not isinstance(d, dict) or k not in d:
            return default
        d = d[k]
    return d
