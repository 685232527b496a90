"""Rotary / accumulated SO(2) rotations: angle scans (exclusive prefix sums in float64) and block rotations.
See reference.py for the one direction convention used everywhere."""

from __future__ import annotations

from ..dispatch import Op
from . import reference
from .reference import accumulate_angles, cos_sin, rope_angles, rope_frequencies, rotate, wrap  # noqa: F401

OP = Op("accumulate_angles", __name__, reference.accumulate_angles)
BACKENDS = OP.backends
backend_for = OP.backend_for
