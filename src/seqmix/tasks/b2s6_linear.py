"""B2S6 paper, Figure 6 (b2s6 spec E5): a linear functional G(u) = sum_j theta_j u_j of a scalar sequence.

    inputs (B, L, 1): u_j ~ N(0, c^2) i.i.d. (c = ``scale``; Thm 3 says the instability grows with c)
    targets (B, 1): sum_j theta_j u_j, theta_j ~ N(0, 1/L) drawn once (``theta: gaussian``), or the long-memory
    theta_j = exp(-(L - j) / (L / 4)) (``theta: decay``)

A fixed training pool (``train_size``) read epoch by epoch, a separate test set. Metric: the test RMS error
(``test_rms``); the training history holds the per-step loss the stability analysis reads.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import torch

from ..options import NonNegInt, PosFloat, PosInt
from ..registry import register_task
from ..rng import counter_generator
from .base import Task
from .sampling import epoch_indices


def linear_weights(L: int, kind: str, seed: int) -> torch.Tensor:
    """theta: (L,) float64."""
    if kind == "gaussian":
        return torch.randn(L, generator=counter_generator("b2s6_linear/theta", L, seed), dtype=torch.float64) / L**0.5
    if kind == "decay":
        j = torch.arange(1, L + 1, dtype=torch.float64)
        return torch.exp(-(L - j) / (L / 4))
    raise ValueError(f"b2s6_linear: theta must be 'gaussian' or 'decay', got {kind!r}")


@register_task("b2s6_linear")
class LinearFunctional(Task):
    example_options: ClassVar[dict] = {"L": 12, "train_size": 16, "test_size": 8}
    example_model: ClassVar[dict] = {"name": "ssm_probe", "width": 4, "mixer": {"name": "s6", "d_state": 3}}
    summary_columns: ClassVar[dict[str, tuple[str, ...]]] = {"evaluate": ("test_rms",)}

    memory: ClassVar[dict[str, str]] = {
        "inputs (train_size + test_size, L): a float64 draw, scaled, cast": "(train_size + test_size) * L * 20",
        "a training batch (train.batch, L)": "(train.batch or 1) * L * 8",
    }

    def __init__(
        self,
        *,
        L: PosInt = 1024,
        scale: PosFloat = 1.0,
        theta: Literal["gaussian", "decay"] = "gaussian",
        train_size: PosInt = 8192,
        test_size: PosInt = 1024,
        data_seed: NonNegInt = 0,
        dtype: torch.dtype = torch.float32,
    ):
        self.L, self.scale, self.dtype = L, scale, dtype
        self.d_in, self.d_out, self.seq_len = 1, 1, L
        self.theta = linear_weights(L, theta, data_seed)
        self.train_size, self.test_size, self.data_seed = train_size, test_size, data_seed
        self._train = self._draw("train", train_size)
        self._test = self._draw("test", test_size)

    def _draw(self, split: str, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        g = counter_generator("b2s6_linear", split, self.L, self.data_seed)
        u = self.scale * torch.randn(size, self.L, generator=g, dtype=torch.float64)
        return u[..., None].to(self.dtype), (u @ self.theta)[:, None].to(self.dtype)

    def batch(self, seed: int, step: int, rank: int, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        idx = epoch_indices("b2s6_linear", self.train_size, seed, step, rank, size)
        return self._train[0][idx], self._train[1][idx]

    def test_set(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self._test

    def evaluate(self, model: torch.nn.Module) -> dict:
        x, y = self.test_set()
        pred = self.predict(model, x, dtype=torch.float64)  # the whole set in one call, as the figures were made
        return {"test_rms": float(((pred - y.double()) ** 2).mean().sqrt())}
