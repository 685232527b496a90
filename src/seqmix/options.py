"""A component's options, declared once: the typed keyword-only signature of its ``__init__``.

Constraints sit beside the type with ``typing.Annotated`` and an :class:`Opt` marker::

    def __init__(self, d_model: int, *, layer_idx: int = 0, seq_len: int | None = None,
                 heads: PosInt = 4, mode: Literal["conv", "recurrent"] = "conv",
                 rho: Annotated[float | None, Opt(exclusive_minimum=0)] = None): ...

``options_schema(cls)`` generates the JSON schema a config block is validated against (one property per
keyword-only parameter, its default recorded, parameters without a default required); the config loader and
``build_mixer`` read it, so a default or a bound is written in exactly one place.

Type mapping: bool -> boolean, int -> integer (at most INT_OPTION_MAX unless Opt says), float -> number,
str -> string, ``Literal[...]`` -> enum, ``X | None`` -> adds null, ``dict`` -> object,
``list[X]``/``tuple[X, ...]`` -> array of X, other unions -> anyOf.

Options several components share (a data set's split sizes, a model stack's width and depth) are declared once
as an :class:`OptionGroup`, a frozen dataclass, and a component takes the group as one keyword-only parameter::

    @grouped
    def __init__(self, *, source: str = "generated", splits: DataSplits = DataSplits(train_size=8192)): ...

The group's fields are the component's options (flat in a config and in the generated schema, so a config reads
``train_size: 20`` whichever class declares it); the parameter's default instance gives this class's defaults;
``@grouped`` folds the flat keywords a caller passes into the instance.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import types
import typing
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Union

# Parameters of the constructor contracts, not options a config sets: a mixer's position and length come from
# its model, a task's dtype from the runtime.
CONTRACT = ("layer_idx", "seq_len", "dtype")


@dataclass(frozen=True, eq=False)  # hashed by identity: Annotated metadata must be hashable
class Opt:
    """Constraints of one option, as JSON-schema keywords (``extra`` adds any other keyword verbatim)."""

    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: float | None = None
    exclusive_maximum: float | None = None
    multiple_of: float | None = None
    description: str | None = None
    extra: dict = field(default_factory=dict)
    component: str | None = None  # the value names a registered component of this kind ({"name": ...})

    def keywords(self) -> dict:
        names = {
            "minimum": "minimum",
            "maximum": "maximum",
            "exclusive_minimum": "exclusiveMinimum",
            "exclusive_maximum": "exclusiveMaximum",
            "multiple_of": "multipleOf",
        }
        out = {v: getattr(self, k) for k, v in names.items() if getattr(self, k) is not None}
        return {**out, **self.extra}


# The few constrained types most options use.
PosInt = Annotated[int, Opt(minimum=1)]
NonNegInt = Annotated[int, Opt(minimum=0)]
PosFloat = Annotated[float, Opt(exclusive_minimum=0)]
OptPosInt = Annotated[int | None, Opt(minimum=1)]
MixerSpec = Annotated[
    dict,
    Opt(extra={"required": ["name"]}, component="mixer", description="a registered mixer: its name and its options"),
]


@dataclass(frozen=True)
class Option:
    name: str
    annotation: Any
    default: Any  # inspect.Parameter.empty when required

    @property
    def required(self) -> bool:
        return self.default is inspect.Parameter.empty


class OptionGroup:
    """Base of an option group: subclass it as ``@dataclass(frozen=True, kw_only=True)`` with typed, defaulted
    fields (constraints as for any option), and take it as one keyword-only parameter of a ``@grouped``
    ``__init__``. A field without a default is an option every config must give."""

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))


def is_group(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, OptionGroup)


def _group_options(group: type, default: Any) -> list[Option]:
    """The fields of ``group`` as options, their defaults from the parameter's default instance when it has one."""
    hints = typing.get_type_hints(group, include_extras=True)
    out = []
    for f in dataclasses.fields(group):
        if isinstance(default, group):
            value = getattr(default, f.name)
        elif f.default is not dataclasses.MISSING:
            value = f.default
        elif f.default_factory is not dataclasses.MISSING:
            value = f.default_factory()
        else:
            value = inspect.Parameter.empty
        out.append(Option(f.name, hints[f.name], value))
    return out


def _groups_of(fn: Any) -> dict[str, tuple[type, Any]]:
    """{parameter: (group class, default instance or empty)} of the group parameters of ``fn``."""
    hints = typing.get_type_hints(fn, include_extras=True)
    return {
        p.name: (hints[p.name], p.default)
        for p in inspect.signature(fn).parameters.values()
        if p.kind is inspect.Parameter.KEYWORD_ONLY and is_group(hints.get(p.name))
    }


def grouped(init: Any) -> Any:
    """Decorate an ``__init__`` that takes option groups: callers (the config's flat options, tests) pass the
    group's fields as keywords, and the wrapped ``__init__`` receives one group instance per parameter (the
    default instance with the given fields replaced). Passing both the instance and one of its fields is an
    error."""
    groups = _groups_of(init)

    @functools.wraps(init)
    def wrapper(self, *args, **kw):
        for name, (group, default) in groups.items():
            picked = {f: kw.pop(f) for f in group.field_names() if f in kw}
            if name in kw:
                if picked:
                    raise TypeError(f"{type(self).__name__}: give {name} or its fields {sorted(picked)}, not both")
                continue
            kw[name] = dataclasses.replace(default, **picked) if isinstance(default, group) else group(**picked)
        return init(self, *args, **kw)

    wrapper.__signature__ = _flat_signature(init)  # what inspect.signature shows callers: the flat options
    return wrapper


def _flat_signature(fn: Any) -> inspect.Signature:
    _keyword_options(fn, fn.__qualname__)  # an option declared twice fails here, at class definition
    hints = typing.get_type_hints(fn, include_extras=True)
    params = []
    for p in inspect.signature(fn).parameters.values():
        if p.kind is inspect.Parameter.KEYWORD_ONLY and is_group(hints.get(p.name)):
            kinds = inspect.Parameter.KEYWORD_ONLY
            params += [
                inspect.Parameter(o.name, kinds, default=o.default, annotation=o.annotation)
                for o in _group_options(hints[p.name], p.default)
            ]
        else:
            params.append(p)
    return inspect.Signature(params)


def declared_options(cls: type) -> list[Option]:
    """The options of ``cls``: the keyword-only parameters of its ``__init__`` (contract parameters left
    out; an option group stands for its fields), minus those a preset fixes (``fixed_options``, set by
    ``mixers.base.register_preset``)."""
    fixed = cls.__dict__.get("fixed_options")
    if fixed is not None:
        return [o for o in declared_options(cls.__mro__[1]) if o.name not in fixed]
    return _keyword_options(inspect.unwrap(cls.__init__), cls.__qualname__)


def _keyword_options(fn: Any, who: str) -> list[Option]:
    hints = typing.get_type_hints(fn, include_extras=True)
    out: list[Option] = []
    for p in inspect.signature(fn).parameters.values():
        if p.kind is not inspect.Parameter.KEYWORD_ONLY or p.name in CONTRACT:
            continue
        if p.name not in hints:
            raise TypeError(f"{who}: option {p.name!r} has no type annotation")
        if is_group(hints[p.name]):
            out += _group_options(hints[p.name], p.default)
        else:
            out.append(Option(p.name, hints[p.name], p.default))
    names = [o.name for o in out]
    if len(set(names)) < len(names):
        raise TypeError(f"{who}: options declared twice: {sorted({n for n in names if names.count(n) > 1})}")
    return out


def option_names(cls: type) -> list[str]:
    return [o.name for o in declared_options(cls)]


def options_schema(cls: type) -> dict:
    """The JSON schema (draft 2020-12) of the options a config may give ``cls``, generated from its signature."""
    return _schema(declared_options(cls))


def _schema(options: list[Option]) -> dict:
    props, required = {}, []
    for o in options:
        s = type_schema(o.annotation)
        if o.required:
            required.append(o.name)
        elif _jsonable(o.default):
            s["default"] = list(o.default) if isinstance(o.default, tuple) else o.default
        props[o.name] = s
    schema = {"type": "object", "additionalProperties": False, "properties": props}
    if required:
        schema["required"] = required
    return schema


def component_options(cls: type) -> dict[str, str]:
    """{option: component kind} for the options whose value names a registered component (MixerSpec)."""
    out = {}
    for o in declared_options(cls):
        meta = typing.get_args(o.annotation)[1:] if typing.get_origin(o.annotation) is Annotated else ()
        kinds = [m.component for m in meta if isinstance(m, Opt) and m.component]
        if kinds:
            out[o.name] = kinds[0]
    return out


def defaults(cls: type) -> dict:
    """{option: default} for every option that has one."""
    return {o.name: o.default for o in declared_options(cls) if not o.required}


def type_schema(tp: Any) -> dict:
    """The JSON schema of one annotation (constraints from ``Annotated[..., Opt(...)]`` included)."""
    opts: list[Opt] = []
    if typing.get_origin(tp) is Annotated:
        tp, *meta = typing.get_args(tp)
        opts = [m for m in meta if isinstance(m, Opt)]
    schema = _bare_schema(tp)
    for o in opts:
        kw = o.keywords()
        if "anyOf" in schema:  # numeric bounds apply to the numeric alternatives only
            bounds = {k: v for k, v in kw.items() if k in _NUMERIC}
            for alt in schema["anyOf"]:
                if alt.get("type") in ("integer", "number"):
                    alt.update(bounds)
            kw = {k: v for k, v in kw.items() if k not in _NUMERIC}
        schema.update(kw)
        if o.description:
            schema["description"] = o.description
    return schema


# Every integer option is bounded even when its declaration gives no maximum: a size, count or seed beyond
# int32 cannot index a tensor on every backend and is beyond any memory, so a larger value is a typo
# (``n: 1000000000000``) that would otherwise fail deep inside torch, or run for ever. Opt(maximum=...) wins.
INT_OPTION_MAX = 2**31 - 1

_NUMERIC = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_SCALARS = {bool: "boolean", int: "integer", float: "number", str: "string", dict: "object"}


def _bare_schema(tp: Any) -> dict:
    if tp is int:
        return {"type": "integer", "maximum": INT_OPTION_MAX}
    if tp in _SCALARS:
        return {"type": _SCALARS[tp]}
    if tp is Any:
        return {}
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (list, tuple):
        items = [a for a in args if a is not Ellipsis]
        s: dict = {"type": "array"}
        if items and len(set(items)) == 1:
            s["items"] = type_schema(items[0])
        if origin is tuple and Ellipsis not in args:
            s["minItems"] = s["maxItems"] = len(args)
        return s
    if origin is dict:
        return {"type": "object"}
    if origin in (Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        nullable = len(members) < len(args)
        if len(members) == 1 and members[0] in _SCALARS:
            one = _bare_schema(members[0])
            return {**one, "type": [one["type"], "null"]} if nullable else one
        alts = [_bare_schema(a) for a in members] + ([{"type": "null"}] if nullable else [])
        return {"anyOf": alts}
    raise TypeError(f"no JSON schema for the option type {tp!r}")


def _jsonable(v: Any) -> bool:
    return (
        v is None
        or isinstance(v, (bool, int, float, str))
        or (isinstance(v, (list, tuple)) and all(_jsonable(x) for x in v))
    )
