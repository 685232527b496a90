"""Noise models of the claims engine (seqmix.claims.engine): how far our value could move if the runs were
repeated, and the verdicts that take it into account. Pure functions; no files read here.

A claim's ``noise`` says where the uncertainty of a learned quantity comes from:

- ``none``: a deterministic quantity (closed form, a theory check, one named run): judged exactly
  (seqmix.claims.checks.run_check);
- ``seeds``: the spread over training seeds. Each seed's value is the mean of its rows; the standard error
  of the mean over k seeds is s / sqrt(k) (s the sample standard deviation, k - 1 degrees of freedom) and the
  interval is the 95% t-interval;
- ``binomial: {n: N}``: an accuracy p over a test set of N examples (N an int or a {tiny, cpu, paper} map:
  the test set differs by scale). Every seed is scored on the same test set, so its sampling error is shared
  and does not average out over seeds: the standard error is sqrt(p (1 - p) / N) whatever k, with a normal
  (z) quantile;
- ``seeds+binomial``: both, added in quadrature: sqrt(s^2 / k + p (1 - p) / N), t quantile with k - 1 dof.

With ``seeds`` in the model and fewer than 2 seeds the spread is unknown: the claim reads "within noise"
("1 seed: spread unknown"), never "holds".

Verdicts with noise: a claim holds when its whole 95% interval satisfies the relation, differs when the
whole interval satisfies the opposite, and is otherwise "within noise". For an ordering each adjacent step
is a difference of means with standard error sqrt(se_a^2 + se_b^2) (the smaller dof of the two); a slope's
standard error propagates the points' errors through the least-squares weights, sqrt(sum w_i^2 se_i^2) with
w_i = (x_i - mean x) / sum (x_j - mean x)^2 (under ``logy`` each se_i is divided by |y_i| ln(base), the
delta method); a ``ratio_to`` adds the relative errors of numerator and denominator in quadrature; ``reduce:
min|max`` takes the min or max of the points' bounds. Strict relations ('>', '<', an ordering) need the
interval to exclude equality.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .checks import InvalidInput, _log, axis_values, within_target

NONE, SEEDS, BINOMIAL, SEEDS_BINOMIAL = "none", "seeds", "binomial", "seeds+binomial"
NOISE_KINDS = (NONE, SEEDS, BINOMIAL, SEEDS_BINOMIAL)
LEVEL = 0.95
SPREAD_UNKNOWN = "spread unknown"


@dataclass(frozen=True)
class Noise:
    """A resolved noise model: its name and, with binomial, the test-set size at this scale."""

    kind: str = NONE
    n: int | None = None

    @property
    def active(self) -> bool:
        return self.kind != NONE

    def label(self) -> str:
        return f"{self.kind} (n={self.n})" if self.n is not None else self.kind


def parse_noise(spec: Any, scale: str) -> Noise:
    """The claim's ``noise`` value (already schema-checked) at ``scale``; None is resolved by the caller."""
    if isinstance(spec, str):
        return Noise(spec)
    ((kind, body),) = spec.items()
    n = body["n"]
    n = n[scale] if isinstance(n, dict) else n
    return Noise(kind, int(n))


def quantile(dof: float) -> float:
    """The two-sided 95% quantile: Student t with ``dof`` degrees of freedom, normal when infinite."""
    from scipy import stats  # here: scipy.stats costs ~1.5 s to import and deterministic claims need none

    return float(stats.norm.ppf(0.5 + LEVEL / 2) if math.isinf(dof) else stats.t.ppf(0.5 + LEVEL / 2, dof))


@dataclass(frozen=True)
class Estimate:
    """Our value with its standard error and interval; ``unknown`` says why the spread cannot be known."""

    value: float
    se: float
    dof: float
    lo: float
    hi: float
    seeds: int = 0
    unknown: str = ""


def estimate(value: float, se: float, dof: float, seeds: int = 0, unknown: str = "") -> Estimate:
    h = 0.0 if unknown or se == 0 else quantile(dof) * se
    return Estimate(value, se, dof, value - h, value + h, seeds, unknown)


def from_seeds(per_seed: np.ndarray, value: float, noise: Noise) -> Estimate:
    """The estimate of a value whose per-seed values are ``per_seed`` (one mean per seed)."""
    k = int(per_seed.size)
    var, dof = 0.0, math.inf
    if noise.kind in (BINOMIAL, SEEDS_BINOMIAL):
        if not 0.0 <= value <= 1.0:
            raise InvalidInput(f"binomial noise needs an accuracy in [0, 1], got {value:.6g}")
        var += value * (1.0 - value) / noise.n
    if noise.kind in (SEEDS, SEEDS_BINOMIAL):
        if k < 2:
            return estimate(value, math.nan, math.nan, k, f"{k} seed: {SPREAD_UNKNOWN}")
        var += float(np.var(per_seed, ddof=1)) / k
        dof = k - 1
    return estimate(value, math.sqrt(var), dof, k)


def ratio(num: Estimate, den: Estimate) -> Estimate:
    value = num.value / den.value
    unknown = num.unknown or den.unknown
    if unknown:
        return estimate(value, math.nan, math.nan, min(num.seeds, den.seeds), unknown)
    rel = math.hypot(num.se / num.value if num.se else 0.0, den.se / den.value)
    return estimate(value, abs(value) * rel, min(num.dof, den.dof), min(num.seeds, den.seeds))


def reduce(points: list[Estimate], how: str) -> Estimate:
    """min or max over a series: each bound is the min (max) of the points' bounds."""
    pick = min if how == "min" else max
    unknown = next((p.unknown for p in points if p.unknown), "")
    value = pick(p.value for p in points)
    return Estimate(value, math.nan, math.nan, pick(p.lo for p in points), pick(p.hi for p in points),
                    min(p.seeds for p in points), unknown)  # fmt: skip


def fmt_estimate(e: Estimate) -> str:
    if e.unknown:
        return f"{e.value:.4g} ± ?"
    return (
        f"{e.value:.4g} ± {(e.hi - e.lo) / 2:.2g}"
        if math.isfinite(e.se)
        else f"{e.value:.4g} in [{e.lo:.4g}, {e.hi:.4g}]"
    )


# ----------------------------------------------------------------------------- verdicts with noise

HOLD, DIFFER, NOISE = "holds", "differs", "within noise"


def _bounds(e: Estimate) -> str:
    return f"{e.value:.6g} [{e.lo:.6g}, {e.hi:.6g}]"


def judge(check: dict, ours: Any, reported: Any, ref: float | None, axis: str) -> tuple[str, str]:
    """(HOLD | DIFFER | NOISE, detail) of a check on estimates: ``ours`` an Estimate, or a series
    [(x, Estimate), ...] for ordering and slope."""
    points = ours if isinstance(ours, list) else [(None, ours)]
    unknown = next((e.unknown for _, e in points if e.unknown), "")
    if unknown:
        return NOISE, unknown
    kind = check["kind"]
    if kind == "threshold":
        return _threshold(check["op"], check["value"], ours)
    if kind == "within":
        return _within(check, ours, reported)
    if kind == "ordering":
        return _ordering(check, ours)
    return _slope(check, ours, ref, axis)


def _threshold(op: str, value: float, e: Estimate) -> tuple[str, str]:
    holds = {"<": e.hi < value, "<=": e.hi <= value, ">": e.lo > value, ">=": e.lo >= value}[op]
    differs = {"<": e.lo >= value, "<=": e.lo > value, ">": e.hi <= value, ">=": e.hi < value}[op]
    return (HOLD if holds else DIFFER if differs else NOISE), f"{_bounds(e)} {op} {value}"


def _band(lo: float, hi: float, e: Estimate, text: str) -> tuple[str, str]:
    if lo <= e.lo and e.hi <= hi:
        return HOLD, text
    if e.hi < lo or e.lo > hi:
        return DIFFER, text
    return NOISE, text


def _within(check: dict, e: Estimate, reported: Any) -> tuple[str, str]:
    lo, hi = check.get("lo"), check.get("hi")
    band = within_target(check, reported)
    if band is not None:
        target, tol = band
        return _band(target - tol, target + tol, e, f"{_bounds(e)} in {target:.6g} ± {tol:.3g}")
    lo, hi = -math.inf if lo is None else lo, math.inf if hi is None else hi
    return _band(lo, hi, e, f"{_bounds(e)} in [{lo}, {hi}]")


def _ordering(check: dict, ours: list) -> tuple[str, str]:
    from .checks import MissingResults

    lookup = dict(ours)
    missing = [o for o in check["order"] if o not in lookup]
    if missing:
        raise MissingResults(f"ordering: no results for {missing}")
    sign = -1 if check.get("direction", "decreasing") == "decreasing" else 1
    breaks, unclear = [], []
    for a, b in zip(check["order"], check["order"][1:]):
        ea, eb = lookup[a], lookup[b]
        step = sign * (eb.value - ea.value)
        h = quantile(min(ea.dof, eb.dof)) * math.hypot(ea.se, eb.se)
        if step < -h or (step == 0 and h == 0):
            breaks.append((a, b))
        elif step <= h:
            unclear.append(f"({a}, {b}): {step:.3g} vs ± {h:.2g}")
    means = [round(lookup[o].value, 6) for o in check["order"]]
    if breaks:
        return DIFFER, f"breaks at {breaks} over {means}"
    if unclear:
        return NOISE, f"steps within noise {'; '.join(unclear)} over {means}"
    return HOLD, f"every step clears its interval over {means}"


def _slope(check: dict, ours: list, ref: float | None, axis: str) -> tuple[str, str]:
    from .checks import MissingResults

    labels = [f"{axis}={x}" for x, _ in ours]
    xs = axis_values(ours, axis)
    ys = np.array([e.value for _, e in ours], dtype=float)
    ses = np.array([e.se for _, e in ours], dtype=float)
    base = check.get("log_base", 10)
    if check.get("logy"):
        ses = ses / (np.abs(ys) * (1.0 if base == "e" else math.log(10)))
        ys = _log(ys, base, "values", labels)
    if check.get("logx"):
        xs = _log(xs, base, axis, labels)
    if len(xs) < 2:
        raise MissingResults("slope needs at least two points")
    if np.ptp(xs) == 0:
        raise InvalidInput(f"a slope needs two distinct {axis} values, got {sorted(set(xs.tolist()))}")
    w = (xs - xs.mean()) / np.sum((xs - xs.mean()) ** 2)
    slope, se = float(np.sum(w * ys)), float(math.sqrt(np.sum(w**2 * ses**2)))
    name = "slope"
    if check.get("relative_to") is not None:
        if not ref:
            raise InvalidInput(f"division by zero: the slope's relative_to {check['relative_to']['metric']} is 0")
        slope, se, name = slope / ref, se / abs(ref), f"slope / {ref:.4g}"
    e = estimate(slope, se, min(p.dof for _, p in ours))
    lo, hi = check.get("lo", -math.inf), check.get("hi", math.inf)
    verdict, detail = _band(lo, hi, e, f"{name} {_bounds(e)} in [{lo}, {hi}]")
    if check.get("min_r2") is not None:
        fitted = ys.mean() + (slope if not check.get("relative_to") else slope * ref) * (xs - xs.mean())
        tot = float(np.sum((ys - ys.mean()) ** 2))
        r2 = 1.0 if tot == 0 else 1.0 - float(np.sum((ys - fitted) ** 2)) / tot
        detail += f", R^2 {r2:.6g} >= {check['min_r2']}"
        if r2 < check["min_r2"]:  # the fit's shape is judged on the means: the interval is of the slope only
            verdict = DIFFER
    return verdict, detail
