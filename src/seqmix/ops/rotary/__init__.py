"""Rotary / accumulated SO(2) rotations: angle scans (exclusive prefix sums in float64) and block rotations.
See reference.py for the one direction convention used everywhere."""
from __future__ import annotations

from .reference import accumulate_angles, cos_sin, rope_angles, rope_frequencies, rotate, wrap  # noqa: F401

BACKENDS = {"reference": accumulate_angles}
