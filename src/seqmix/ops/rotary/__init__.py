"""Rotary / accumulated SO(2) rotations: angle scans (exclusive prefix sums in float64) and block rotations.
The functions and the one direction convention used everywhere are in reference.py, their one import path
(``seqmix.ops.rotary.reference``); this package only registers ``accumulate_angles`` with the dispatcher."""

from __future__ import annotations

from ..dispatch import Op
from . import reference

OP = Op("accumulate_angles", __name__, reference.accumulate_angles)
BACKENDS = OP.backends
backend_for = OP.backend_for
