"""The row shape of the rotations paper's theory checks (summary.csv of the ``theory_checks`` analysis).

One row per measured quantity: ``check`` (T1..T13, E6), ``quantity``, ``case`` (the parameters, as
``name=value`` pairs joined by commas, so a claim's ``where`` can pick one), ``value`` (what we measured or
computed), ``predicted`` (the closed form, the bound or the independent oracle it is judged against),
``relation`` (how value should stand to predicted: ``==`` exact, ``~`` within the tolerance, ``<=``, ``>=``),
``tolerance`` (the note saying what "within" means, e.g. Monte Carlo standard errors), and ``abs_err`` /
``slack`` derived from value and predicted (see ``row``). A row with relation ``==`` and no prediction is a
closed form whose claim compares it with the spec's number.
"""

from __future__ import annotations

import math

import numpy as np


def case(**params) -> str:
    """'a=0.5,m=1': the parameters of one row, in the given order (floats in their shortest repr)."""
    return ",".join(f"{k}={_fmt(v)}" for k, v in params.items())


def _fmt(v) -> str:
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    if isinstance(v, float) and abs(v - math.pi) < 1e-15:
        return "pi"
    return str(v)


def row(check: str, quantity: str, value, predicted="", relation: str = "", tolerance: str = "", **params) -> dict:
    """One measured number of a theory check (``params`` become the ``case`` string). With a prediction, also
    ``abs_err`` = |value - predicted| and, for a bound, ``slack`` (predicted - value for ``<=``, value - predicted
    for ``>=``: >= 0 when the bound holds), so that one claim can judge many rows (aggregate min / max)."""
    value = float(value)
    out = {"check": check, "quantity": quantity, "case": case(**params), "value": value, "predicted": "",
           "relation": relation, "tolerance": tolerance, "abs_err": "", "slack": ""}  # fmt: skip
    if predicted != "":
        p = float(predicted)
        out.update(predicted=p, abs_err=abs(value - p))
        if relation in ("<=", ">="):
            out["slack"] = p - value if relation == "<=" else value - p
    return out


def rng_for(seed: int, *salt: int) -> np.random.Generator:
    """An independent generator per check (so that adding a check does not move the others' draws)."""
    return np.random.default_rng([seed, *salt])
