"""The memory a leaf's data will need, estimated from its options before any job, and the limit it must stay under.

An integer option is bounded by its schema only where a bound means something; a size such as the rotation
teacher's ``n`` is not wrong at 100000, it is too large for the machine (its (n, n, k, k) operator alone is
1.3 TB), and that depends on the other options and on the machine. So each task states its largest tensors
(``Task.memory``: {what: expression}) and the merged-leaf check (``leaf_check``) and ``--set``
(``overrides``) refuse a leaf whose terms sum to more than the limit, naming the terms and the option keys.

An expression is Python arithmetic over the task's options (their leaf values, else their defaults) and the
leaf's key paths (``train.batch``): numbers, strings, ``+ - * / // **``, comparisons, ``a or b`` (a null
option falls back to ``b``), ``x if c else y``, ``max``/``min``/``len``/``round``. A term whose value needs an option
that is null (a size read from the data files) is left out: it cannot be known before the data are read.

The limit: ``limits.max_data_gb`` of config/config.yaml when set; else the larger of half of this machine's
RAM (the rest is the model's, the optimizer's and the activations'; ``$SEQMIX_MAX_DATA_GB`` replaces it) and
the memory the scale's train jobs request on a cluster (``resources``' mem_gb). ``--set`` runs check against
the first alone. Imports no torch: the DAG parse runs it for every leaf.
"""

from __future__ import annotations

import ast
import functools
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

RAM_FRACTION = 0.5  # of this machine's RAM, the data's share when no limit is configured
ENV = "SEQMIX_MAX_DATA_GB"
LEAF_ROOTS = ("train", "model", "eval")  # a dotted name in an expression is a key path of the leaf under these
FUNCTIONS: dict[str, Callable] = {"max": max, "min": min, "len": len, "round": round}
GB = 1 << 30


@dataclass(frozen=True)
class Limit:
    bytes: int
    source: str  # where it comes from, for the message


@dataclass(frozen=True)
class Term:
    what: str
    expression: str
    bytes: int
    names: dict[str, Any]  # {name as written (``n``, ``train.batch``): its value in the leaf}


class Unknown(Exception):
    """A value the expression needs is null: the term cannot be estimated before the data are read."""


def machine_memory() -> int | None:
    """This machine's physical memory in bytes (None where the OS does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def limit_of(config: dict | None, config_file: str = "config/config.yaml") -> Limit | None:
    """The data limit of a DAG: ``limits.max_data_gb`` of the global ``config`` when set; else the larger of
    default_limit() and the memory its train jobs request on a cluster (``resources``' mem_gb at the scale:
    the paper scale runs on SLURM nodes larger than the machine that parses the DAG)."""
    config = config or {}
    gb = (config.get("limits") or {}).get("max_data_gb")
    if gb is not None:
        return Limit(int(gb * GB), f"limits.max_data_gb: {gb:g} in {config_file}")
    here = default_limit()
    from .resources import resolve

    job_gb = resolve(config.get("resources"), config.get("scale", "")).get("train", {}).get("mem_gb")
    if job_gb and (here is None or job_gb * GB > here.bytes):
        return Limit(
            int(job_gb * GB), f"the {job_gb:g} GB the train jobs request at scale {config.get('scale')!r} (resources)"
        )
    return here


def default_limit() -> Limit | None:
    """``$SEQMIX_MAX_DATA_GB`` GB, else RAM_FRACTION of this machine's RAM; None when neither is known."""
    raw = os.environ.get(ENV)
    if raw:
        try:
            gb = float(raw)
        except ValueError:
            gb = math.nan
        if not (math.isfinite(gb) and gb > 0):
            raise ValueError(f"${ENV}={raw!r}: expected a positive number of GB")
        return Limit(int(gb * GB), f"${ENV}={raw}")
    ram = machine_memory()
    if ram is None:
        return None
    return Limit(int(ram * RAM_FRACTION), f"half of this machine's {human(ram)} of RAM")


def human(n: float) -> str:
    for unit, size in (("TB", 1 << 40), ("GB", GB), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


# ----------------------------------------------------------------------------- expressions


_BINARY = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Pow: lambda a, b: a**b,
}
_COMPARE = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
}


@functools.cache
def parse(expression: str) -> ast.Expression:
    """The checked syntax tree of ``expression``; ValueError naming what is not allowed."""
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as e:
        raise ValueError(f"memory expression {expression!r}: {e.msg}") from None
    allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.USub, ast.Constant, ast.Name, ast.Attribute, ast.Load)
    allowed += (ast.Call, ast.BoolOp, ast.Or, ast.IfExp, ast.Compare, *_BINARY, *_COMPARE)
    for node in ast.walk(tree):
        if not isinstance(node, allowed):
            raise ValueError(f"memory expression {expression!r}: {type(node).__name__} is not allowed")
        if isinstance(node, ast.Call) and not (
            isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS and not node.keywords
        ):
            raise ValueError(f"memory expression {expression!r}: only {', '.join(FUNCTIONS)} may be called")
        if isinstance(node, ast.Attribute) and _dotted(node) is None:
            raise ValueError(f"memory expression {expression!r}: an attribute must be a key path (train.batch)")
    return tree


def names_of(expression: str) -> list[str]:
    """The option names and key paths ``expression`` reads, in order of appearance, once each."""
    out: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.Name, ast.Attribute)):  # ``train.batch`` is one name, not ``train`` and more
            name = _dotted(node)
            if name not in out:
                out.append(name)
            return
        if isinstance(node, ast.Call):  # the function's name is none of the leaf's
            node = ast.Tuple(elts=node.args)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(parse(expression))
    return out


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def evaluate(expression: str, lookup: Callable[[str], Any]) -> Any:
    """The value of ``expression`` with each name read by ``lookup``; Unknown when a null value is computed
    with (``a or b`` and a condition may read a null)."""

    def ev(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return lookup(node.id)
        if isinstance(node, ast.Attribute):
            return lookup(_dotted(node))
        if isinstance(node, ast.BoolOp):  # only ``or`` is admitted
            value = None
            for v in node.values:
                value = ev(v)
                if value:
                    return value
            return value
        if isinstance(node, ast.IfExp):
            return ev(node.body) if ev(node.test) else ev(node.orelse)
        if isinstance(node, ast.Compare):
            left = ev(node.left)
            for op, right in zip(node.ops, node.comparators):
                r = ev(right)
                if not _COMPARE[type(op)](left, r):
                    return False
                left = r
            return True
        return _number(node, ev)

    return ev(parse(expression))


def _number(node: ast.AST, ev: Callable) -> Any:
    if isinstance(node, ast.UnaryOp):
        return -_known(ev(node.operand))
    if isinstance(node, ast.BinOp):
        return _BINARY[type(node.op)](_known(ev(node.left)), _known(ev(node.right)))
    if isinstance(node, ast.Call):
        args = [_known(ev(a)) for a in node.args]
        return FUNCTIONS[node.func.id](*args)
    raise ValueError(f"cannot evaluate {type(node).__name__}")


def _known(v: Any) -> Any:
    if v is None:
        raise Unknown
    return v


# ----------------------------------------------------------------------------- a leaf's estimate


def terms(memory: dict[str, str], options: dict, leaf: dict) -> list[Term]:
    """The known terms of a task's ``memory`` for one leaf: ``options`` are the task's (leaf values over the
    defaults), ``leaf`` the whole leaf config (for ``train.batch`` and the like). Largest first."""
    out = []
    for what, expression in memory.items():
        seen: dict[str, Any] = {}
        try:
            value = evaluate(expression, functools.partial(_lookup, options, leaf, seen))
        except Unknown:
            continue
        if value is None:  # ``... if source == 'generated' else None``: not known for this source
            continue
        out.append(Term(what, expression, int(math.ceil(max(float(value), 0.0))), seen))
    return sorted(out, key=lambda t: -t.bytes)


def _lookup(options: dict, leaf: dict, seen: dict, name: str) -> Any:
    """An option's value (no dot) or a leaf key path's (``train.batch``), recorded in ``seen`` for the message."""
    root, _, rest = name.partition(".")
    if rest:
        value = leaf.get(root) or {}
        for part in rest.split("."):
            value = value.get(part) if isinstance(value, dict) else None
    else:
        value = options.get(name)
    seen[name] = value
    return value


def total(memory: dict[str, str], options: dict, leaf: dict) -> int:
    """The bytes of the known terms."""
    return sum(t.bytes for t in terms(memory, options, leaf))


def over_limit(
    memory: dict[str, str], options: dict, leaf: dict, limit: Limit | None, who: str, raise_with: str
) -> tuple[str, str] | None:
    """(key path to blame, message) when the leaf's data exceed ``limit``; None when within it (or unknown).
    ``who`` names the task in the message, ``raise_with`` how to raise the limit; the key path is the first
    option of the largest term that the leaf sets itself (``task.n``, ``train.batch``), else ``task``."""
    if limit is None or not memory:
        return None
    found = terms(memory, options, leaf)
    total = sum(t.bytes for t in found)
    if total <= limit.bytes:
        return None
    given = set(leaf.get("task") or {})
    keys = []
    for t in found[:3]:  # the options of the terms shown
        for name in t.names:
            key = name if "." in name else f"task.{name}"
            if ("." in name or name in given) and key not in keys:
                keys.append(key)
    shown = "; ".join(f"{t.what}: {t.expression} = {human(t.bytes)} with {_values(t.names)}" for t in found[:3])
    more = f"; and {len(found) - 3} smaller terms" if len(found) > 3 else ""
    fix = f"lower {', '.join(keys)}" if keys else "lower the task's sizes"
    message = (
        f"the data of {who} need about {human(total)}, over the limit of {human(limit.bytes)} ({limit.source}): "
        f"{shown}{more}; {fix}, or, if the jobs run where that memory is, raise the limit ({raise_with})"
    )
    return (keys[0] if keys else "task"), message


def _values(names: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in names.items())
