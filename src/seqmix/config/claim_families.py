"""The hand-written form of a paper's claims, expanded into the claims the engine checks (seqmix.claims.engine).

Two shorthands keep ``config/papers/<paper>.yaml`` short enough to edit by hand:

- ``expand:`` on a claim makes a family of claims. Its value maps parameter names to lists of values, taken
  together (zip: the i-th claim gets the i-th value of every list; the lists must have one length)::

      - id: rank-k{k}
        expand: {k: [2, 4, 8]}
        statement: "... k = {k} ..."
        ours: {table: theory, where: {quantity: rank, k: "{k}"}}

  A list of such mappings takes their product (zip within each mapping, product across them, the first
  mapping varying slowest): ``expand: [{loss: [sup, node]}, {z: [1, 2, 3]}]`` gives six claims.
  ``{name}`` is replaced in every string of the claim (keys included); a string that is exactly one
  placeholder takes the parameter's value as it is (a number stays a number, a list a list). Only the
  family's own parameter names are placeholders: other braces (``span{A^tau}``) are left alone.
- ``claim_defaults:`` (beside ``claims:``) gives keys by ``source``, applied after expansion to every claim
  that does not set the key itself (a claim's own key wins whole; defaults are not merged into it).
"""

from __future__ import annotations

import copy
import itertools
import re
from typing import Any

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ClaimSpecError(ValueError):
    """A malformed claim family: ``keypath`` (e.g. 'claims[3].expand.k') and what was expected."""

    def __init__(self, keypath: str, message: str):
        self.keypath, self.message = keypath, message
        super().__init__(f"{keypath}: {message}")


def expand_claims(
    claims: list, defaults: dict | None = None, sources: list[str] | None = None
) -> tuple[list[dict], list[tuple[str, str]]]:
    """(claims, origins): every family expanded and the per-source defaults applied; origins[i] is
    (keypath of the entry claim i came from, its parameters: 'k=4' or '' outside a family), for errors.
    With ``sources``, a claim whose source is not one of them is an error here: it would miss its defaults."""
    if not isinstance(claims, list):
        raise ClaimSpecError("claims", f"expected a list of claims, got {type(claims).__name__}")
    out, origins = [], []
    for i, entry in enumerate(claims):
        where = f"claims[{i}]"
        if not isinstance(entry, dict):
            raise ClaimSpecError(where, f"expected a claim (a mapping), got {type(entry).__name__}")
        if "expand" not in entry:
            out.append(copy.deepcopy(entry))
            origins.append((where, ""))
            continue
        body = {k: v for k, v in entry.items() if k != "expand"}
        for params in family_parameters(entry["expand"], f"{where}.expand"):
            out.append(substitute(body, params))
            origins.append((where, ", ".join(f"{k}={v}" for k, v in params.items())))
    for claim, (where, params) in zip(out, origins):
        if sources is not None and claim.get("source") not in sources:
            raise ClaimSpecError(
                f"{where}.source",
                f"{claim.get('source')!r} is not one of {list(sources)}"
                + (f" (in the family member {params})" if params else ""),
            )
        _apply_defaults(claim, defaults or {})
    _check_unique_ids(out, origins)
    return out, origins


def family_parameters(spec: Any, where: str) -> list[dict]:
    """The parameter sets of one ``expand`` value: zip within a mapping, product across a list of them."""
    groups = spec if isinstance(spec, list) else [spec]
    if not groups:
        raise ClaimSpecError(where, "expected a mapping of parameter lists (or a list of such mappings), got []")
    zipped = [_zip_group(g, f"{where}[{j}]" if isinstance(spec, list) else where) for j, g in enumerate(groups)]
    return [dict(kv for part in combo for kv in part.items()) for combo in itertools.product(*zipped)]


def _zip_group(group: Any, where: str) -> list[dict]:
    if not isinstance(group, dict) or not group:
        raise ClaimSpecError(where, f"expected a mapping of parameter name -> list of values, got {group!r}")
    lengths = {}
    for name, values in group.items():
        if not isinstance(name, str) or not _NAME.match(name):
            raise ClaimSpecError(f"{where}.{name}", "a parameter name must be an identifier ([A-Za-z_][A-Za-z0-9_]*)")
        if not isinstance(values, list) or not values:
            raise ClaimSpecError(f"{where}.{name}", f"expected a non-empty list of values, got {values!r}")
        lengths[name] = len(values)
    if len(set(lengths.values())) != 1:
        raise ClaimSpecError(
            where,
            "the lists are zipped, so they need one length; got " + ", ".join(f"{k}: {n}" for k, n in lengths.items()),
        )
    n = next(iter(lengths.values()))
    return [{name: group[name][i] for name in group} for i in range(n)]


def substitute(value: Any, params: dict) -> Any:
    """``value`` with every ``{name}`` of ``params`` replaced (recursively, keys included)."""
    if isinstance(value, dict):
        return {substitute(k, params): substitute(v, params) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, params) for v in value]
    if not isinstance(value, str) or "{" not in value:
        return copy.deepcopy(value)
    pattern = re.compile(r"\{(" + "|".join(map(re.escape, params)) + r")\}")
    whole = pattern.fullmatch(value)
    if whole:
        return copy.deepcopy(params[whole.group(1)])
    return pattern.sub(lambda m: str(params[m.group(1)]), value)


def _apply_defaults(claim: dict, defaults: dict) -> None:
    for key, value in (defaults.get(claim.get("source"), {}) or {}).items():
        claim.setdefault(key, copy.deepcopy(value))


def _check_unique_ids(claims: list[dict], origins: list[tuple[str, str]]) -> None:
    seen: dict[Any, str] = {}
    for claim, (where, params) in zip(claims, origins):
        cid = claim.get("id")
        label = f"{where} ({params})" if params else where
        if cid in seen:
            raise ClaimSpecError(
                f"{where}.id",
                f"claim id {cid!r} ({label}) is also the id of {seen[cid]} (ids "
                "must be unique; a family's id needs its parameters, e.g. rank-k{k})",
            )
        seen[cid] = label
