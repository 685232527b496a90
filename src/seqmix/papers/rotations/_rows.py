"""The row shape of the rotations paper's theory checks (summary.csv of the ``theory_checks`` analysis).

One row per measured quantity: ``check`` (T1..T13, E6), ``quantity``, ``case`` (the parameters, as
``name=value`` pairs joined by commas, so a claim's ``where`` can pick one), ``value`` (what we measured or
computed), ``predicted`` (the closed form, the bound or the independent oracle it is judged against),
``relation`` (how value should stand to predicted: ``==`` exact, ``~`` within the tolerance, ``<=``, ``>=``)
and ``tolerance`` (the note saying what "within" means, e.g. Monte Carlo standard errors).
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
    """One measured number of a theory check (``params`` become the ``case`` string)."""
    return {
        "check": check,
        "quantity": quantity,
        "case": case(**params),
        "value": float(value),
        "predicted": "" if predicted == "" else float(predicted),
        "relation": relation,
        "tolerance": tolerance,
    }


def rng_for(seed: int, *salt: int) -> np.random.Generator:
    """An independent generator per check (so that adding a check does not move the others' draws)."""
    return np.random.default_rng([seed, *salt])
