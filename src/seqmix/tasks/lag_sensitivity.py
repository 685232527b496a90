"""Heads paper, Experiment II: the sensitivity of a late output to the first input token, against T.

For each sequence length T of the grid and each of ``draws`` input sequences x_0..x_{T-1} ~ N(0, I_d), the
model's Jacobian J = dy_{T-1}/dx_0 (lag T - 1; heads spec U-II-6: "x_0" and "y_T" read as the first token and
the last output of a length-T sequence) is measured in float64 (pitfall P5). Nothing is trained: the model
is measured at initialisation (heads spec §3.6).

This module holds the task (the grid and the inputs); the measurement and the model-specific closed forms
are the probe ``seqmix.diagnostics.lag_sensitivity.diagnose``.
"""

from __future__ import annotations

from typing import Annotated, ClassVar

import torch

from ..options import Opt, PosInt
from ..registry import register_task
from ..rng import counter_generator
from .base import Task


@register_task("lag_sensitivity")
class LagSensitivity(Task):
    example_options: ClassVar[dict] = {"d": 4, "T": [4, 8], "draws": 2}
    example_model: ClassVar[dict] = {"name": "bare", "mixer": {"name": "softmax_attention", "heads": 1}}
    # the diagnose probe's rows (seqmix.diagnostics.lag_sensitivity): norms per (T, draw), closed forms for
    # an SSM, the uniform-attention approximation for attention
    summary_columns: ClassVar[dict[str, tuple[str, ...]]] = {
        "diagnose": (
            *("T", "lag", "draw", "fro", "spec", "sumgrad"),
            *("closed_form", "rel_err", "bound", "bound_ratio", "rho", "ln_rho", "fro_per_rho_lag"),
            *("uniform_approx", "fro_times_T"),
        )
    }

    memory: ClassVar[dict[str, str]] = {
        "inputs (draws, T, d) float64 at the longest T, and their gradients": (
            "2 * draws * max(max(T) if T else 100, max(T_extra) if T_extra else 0) * d * 8"
        ),
    }

    def __init__(
        self,
        *,
        d: Annotated[int, Opt(minimum=1, description="token width")] = 64,
        T: Annotated[list[PosInt] | None, Opt(extra={"minItems": 1}, description="sequence lengths measured")] = None,
        T_extra: Annotated[
            list[PosInt] | None, Opt(description="more lengths for this variant only (the extended attention grid)")
        ] = None,
        draws: Annotated[int, Opt(minimum=1, description="input sequences per (model seed, T)")] = 16,
        dtype: torch.dtype = torch.float64,
    ):
        grid = sorted(set(T or [10, 20, 30, 40, 50, 60, 70, 80, 90, 100]) | set(T_extra or []))
        if d < 1 or draws < 1 or not grid or grid[0] < 1:
            raise ValueError(f"need d >= 1, draws >= 1 and lengths >= 1; got d={d}, draws={draws}, T={grid}")
        self.d, self.grid, self.draws, self.dtype = d, grid, draws, dtype
        self.d_in = self.d_out = d
        self.seq_len = grid[-1]

    def inputs(self, seed: int, T: int) -> torch.Tensor:
        """The ``draws`` input sequences of length T for model seed ``seed``: (draws, T, d), N(0, I)."""
        g = counter_generator("lag_sensitivity", self.d, seed, T)
        return torch.randn(self.draws, T, self.d, generator=g, dtype=torch.float64).to(self.dtype)
