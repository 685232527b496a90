"""The verdicts, kinds and check functions of the claims engine (seqmix.claims.engine): the lowest layer, pure
functions of our value(s) and the claim's check; no files read here."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

HOLDS, DIFFERS, NOT_EXPECTED, NOT_RUN, INVALID = "holds", "differs", "not expected at this scale", "not run", "invalid"
WITHIN_NOISE = "within noise"  # neither the relation nor its opposite clears our interval (seqmix.claims.noise)
VERDICTS = (HOLDS, DIFFERS, WITHIN_NOISE, INVALID, NOT_RUN, NOT_EXPECTED)

# the kinds of check, in the order they are reported: only reproduction is evidence that the paper reproduces
REPRODUCTION, DERIVED, CONSISTENCY = "reproduction", "derived", "consistency"
KINDS = (REPRODUCTION, DERIVED, CONSISTENCY)
KIND_OF_SOURCE = {"paper": REPRODUCTION, "spec-derived": DERIVED, "closed-form": CONSISTENCY}
NO_SEEDS = "—"  # the seeds cell of a claim read from a table without a seed column


class MissingResults(LookupError):
    """The results a claim reads are absent (a file, a column, a listed member, seeds): 'not run'."""

    def __init__(self, message: str, seeds: str = NO_SEEDS):
        super().__init__(message)
        self.seeds = seeds


class InvalidInput(ValueError):
    """The results exist but cannot be judged (NaN/Inf, log or geomean of values <= 0, division by zero):
    'invalid', never a number that a check could pass."""


@dataclass
class ClaimResult:
    id: str
    source: str
    artefact: str
    statement: str
    reported: Any
    ours: Any
    check: str
    verdict: str
    expected_at: list = field(default_factory=list)
    detail: str = ""
    kind: str = ""
    by_construction: str = ""
    seeds: str = NO_SEEDS  # 'had/needed' seeds of the worst point, e.g. '2/3'
    noise: str = "none"  # the noise model (seqmix.claims.noise)
    interval: str = ""  # our 95% interval(s), '[lo, hi]'; '' without noise
    seeds_used: str = NO_SEEDS  # the seeds read, e.g. '0, 1, 2'
    secondary: str = ""  # 'of <primary id>: <why>' for an alternative reading (shown, not counted)
    law: str = ""  # a derived claim's independent law (seqmix.config.claim_kinds)
    estimate: Any = None  # our value with its interval (seqmix.claims.noise.Estimate, or a series of them)


def claim_kind(claim: dict) -> str:
    """The claim's ``kind``, or the default of its ``source`` (paper -> reproduction, spec-derived -> derived,
    closed-form -> consistency)."""
    return claim.get("kind") or KIND_OF_SOURCE[claim["source"]]


def _reported_value(reported: Any) -> float | None:
    if isinstance(reported, bool):
        return None
    if isinstance(reported, (int, float)):
        return float(reported)
    if isinstance(reported, list) and reported and isinstance(reported[0], (int, float)):
        return float(reported[0])  # [mean, std]
    return None


def _require_finite(ours: Any, axis: str) -> None:
    """A final guard: the selection rejects non-finite rows, but an aggregate can still overflow."""
    points = ours if isinstance(ours, list) else [(None, ours)]
    bad = [x for x, v in points if not math.isfinite(float(v))]
    if bad:
        where = ", ".join("the value" if x is None else f"{axis}={x}" for x in bad)
        raise InvalidInput(f"non-finite value at {where}")


def _log(v: np.ndarray, base: Any, what: str, labels: list[str]) -> np.ndarray:
    v = np.asarray(v, dtype=float)
    bad = [lab for lab, x in zip(labels, v) if x <= 0]
    if bad:
        raise InvalidInput(f"log of non-positive {what} at {', '.join(bad)}")
    return np.log(v) if base == "e" else np.log10(v)


def axis_values(ours: list, axis: str) -> np.ndarray:
    """A series' x values as numbers for a fit: a label there is invalid, never a crash."""
    try:
        return np.array([float(x) for x, _ in ours])
    except (TypeError, ValueError):
        raise InvalidInput(f"a slope needs numeric {axis} values, got {[x for x, _ in ours]}") from None


def run_check(check: dict, ours: Any, reported: Any, ref: float | None = None, axis: str = "x") -> tuple[bool, str]:
    """(holds, detail) for one check kind. ``ours``: a number, or a series [(x, value), ...] for ordering and
    slope; ``ref``: the value a slope is divided by (``relative_to``); ``axis``: the series' column, to name
    points. Raises InvalidInput for non-finite values, logs of values <= 0 and a zero ``ref``."""
    kind = check["kind"]
    if kind not in ("within", "threshold", "ordering", "slope"):
        raise ValueError(f"unknown check kind {kind!r}")
    _require_finite(ours, axis)
    if kind == "within":
        return _within(check, ours, reported)
    if kind == "threshold":
        op, value = check["op"], check["value"]
        ok = {"<": ours < value, "<=": ours <= value, ">": ours > value, ">=": ours >= value}[op]
        return bool(ok), f"{ours:.6g} {op} {value}"
    if kind == "ordering":
        return _ordering(check, ours)
    return _slope(check, ours, ref, axis)


def within_target(check: dict, reported: Any) -> tuple[float, float] | None:
    """(target, tolerance) of a ``within`` check without lo/hi: its ``target`` (default: the reported value)
    and atol + rtol * |target|; None when the check gives lo/hi instead."""
    if check.get("lo") is not None or check.get("hi") is not None:
        return None
    target = check.get("target", _reported_value(reported))
    if target is None:
        raise ValueError("within needs lo/hi, a target, or a numeric reported value")
    return target, check.get("atol", 0.0) + check.get("rtol", 0.0) * abs(target)


def _within(check: dict, ours: float, reported: Any) -> tuple[bool, str]:
    lo, hi = check.get("lo"), check.get("hi")
    band = within_target(check, reported)
    if band is not None:
        target, tol = band
        return abs(ours - target) <= tol, f"|{ours:.6g} - {target:.6g}| <= {tol:.3g}"
    ok = (lo is None or ours >= lo) and (hi is None or ours <= hi)
    return ok, f"{ours:.6g} in [{lo}, {hi}]"


def _ordering(check: dict, ours: list) -> tuple[bool, str]:
    lookup = dict(ours)
    missing = [o for o in check["order"] if o not in lookup]
    if missing:
        raise MissingResults(f"ordering: no results for {missing}")
    vals = [lookup[o] for o in check["order"]]
    rtol = check.get("rtol", 0.0)
    sign = -1 if check.get("direction", "decreasing") == "decreasing" else 1
    bad = [
        (a, b)
        for (a, va), (b, vb) in zip(zip(check["order"], vals), zip(check["order"][1:], vals[1:]))
        if sign * (vb - va) < -rtol * max(abs(va), abs(vb))
    ]
    return not bad, ("monotone" if not bad else f"breaks at {bad}") + f" over {[round(v, 6) for v in vals]}"


def _slope(check: dict, ours: list, ref: float | None, axis: str) -> tuple[bool, str]:
    labels = [f"{axis}={x}" for x, _ in ours]
    xs = axis_values(ours, axis)
    ys = np.array([v for _, v in ours], dtype=float)
    base = check.get("log_base", 10)
    if check.get("logy"):
        ys = _log(ys, base, "values", labels)
    if check.get("logx"):
        xs = _log(xs, base, axis, labels)
    if len(xs) < 2:
        raise MissingResults("slope needs at least two points")
    if np.ptp(xs) == 0:
        raise InvalidInput(f"a slope needs two distinct {axis} values, got {sorted(set(xs.tolist()))}")
    from scipy import stats  # here: scipy.stats costs ~1.5 s to import and most claims fit nothing

    fit = stats.linregress(xs, ys)
    slope = float(fit.slope)
    lo, hi = check.get("lo", -math.inf), check.get("hi", math.inf)
    value, name = slope, "slope"
    if check.get("relative_to") is not None:
        if ref is None:
            raise MissingResults("slope relative_to: no reference value")
        if ref == 0:
            raise InvalidInput(f"division by zero: the slope's relative_to {check['relative_to']['metric']} is 0")
        value, name = slope / ref, f"slope {slope:.4g} / {ref:.4g} ="
    ok, detail = lo <= value <= hi, f"{name} {value:.4g} in [{lo}, {hi}]"
    if check.get("min_r2") is not None:
        # a flat series is fitted exactly by a flat line (linregress reports r = 0 there)
        r2 = 1.0 if np.ptp(ys) == 0 else float(fit.rvalue) ** 2
        ok = ok and r2 >= check["min_r2"]
        detail += f", R^2 {r2:.6g} >= {check['min_r2']}"
    return ok, detail
