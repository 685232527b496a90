"""B2S6 paper, Figure 3 (b2s6 spec E1): recover the cosine coefficients g of u(t) = sum_i g_i cos(p_i t).

    inputs (B, L, 1): u(t_k; g) at t_k = k dt, k = 0..L-1, with p = (2, 3, 5, ..., 29) (the ten smallest primes)
    targets (B, 10): g ~ U(0, 1)^10 (b2s6 spec E1 defaults; no noise)

A fixed training pool of ``train_size`` examples (data seed ``data_seed``) is read epoch by epoch
(``seqmix.tasks.sampling``), so ``steps = epochs * ceil(train_size / batch)``; the test set has its own seed.
The metric is the paper's "mean loss": the test mean of ||g_pred - g||_2 (``test_l2``), also recorded during
training (``diagnostics``, every ``eval.every`` steps: one point per epoch draws the paper's curves).
"""

from __future__ import annotations

from typing import ClassVar

import torch

from ..options import NonNegInt, PosFloat, PosInt
from ..registry import register_task
from ..rng import counter_generator
from .base import Task
from .sampling import epoch_indices

PRIMES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29)


def waves(g: torch.Tensor, L: int, dt: float) -> torch.Tensor:
    """g: (N, 10) -> u: (N, L, 1), u_k = sum_i g_i cos(p_i k dt), computed in float64."""
    t = torch.arange(L, dtype=torch.float64) * dt
    basis = torch.cos(torch.tensor(PRIMES, dtype=torch.float64)[:, None] * t[None, :])  # (10, L)
    return (g.double() @ basis)[..., None]


@register_task("b2s6_waves")
class CosineCoefficients(Task):
    example_options: ClassVar[dict] = {"L": 20, "train_size": 16, "test_size": 8}
    example_model: ClassVar[dict] = {"name": "ssm_probe", "width": 4, "mixer": {"name": "s6", "d_state": 3}}
    summary_columns: ClassVar[dict[str, tuple[str, ...]]] = {"evaluate": ("test_l2", "test_mse")}

    memory: ClassVar[dict[str, str]] = {
        "waves (train_size + test_size, L), built in float64 and cast": "(train_size + test_size) * L * 16",
        "a training batch (train.batch, L)": "(train.batch or 1) * L * 8",
    }

    def __init__(
        self,
        *,
        L: PosInt = 1000,
        dt: PosFloat = 0.01,
        train_size: PosInt = 10000,
        test_size: PosInt = 2000,
        data_seed: NonNegInt = 0,
        dtype: torch.dtype = torch.float32,
    ):
        self.L, self.dt, self.dtype = L, dt, dtype
        self.d_in, self.d_out, self.seq_len = 1, len(PRIMES), L
        self.train_size, self.test_size, self.data_seed = train_size, test_size, data_seed
        self._train = self._draw("train", train_size)
        self._test = self._draw("test", test_size)

    def _draw(self, split: str, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.rand(
            size, len(PRIMES), generator=counter_generator("b2s6_waves", split, self.data_seed), dtype=torch.float64
        )
        return waves(g, self.L, self.dt).to(self.dtype), g.to(self.dtype)

    def batch(self, seed: int, step: int, rank: int, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        idx = epoch_indices("b2s6_waves", self.train_size, seed, step, rank, size)
        return self._train[0][idx], self._train[1][idx]

    def test_set(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self._test

    def evaluate(self, model: torch.nn.Module) -> dict:
        x, g = self.test_set()
        err = self.predict(model, x, dtype=torch.float64) - g.double()  # the whole set in one call, as before
        return {"test_l2": float(err.norm(dim=-1).mean()), "test_mse": float((err**2).mean())}

    def diagnostics(self, model: torch.nn.Module) -> dict:
        """The test mean ||g_pred - g||_2 during training (the paper's per-epoch curve)."""
        return {"test_l2": self.evaluate(model)["test_l2"]}
