"""B2S6 paper, Figure 4 (b2s6 spec E3): "copy me" under an input-magnitude imbalance.

    inputs (B, L, d): u_1 = u1 (1, ..., 1) with u1 ~ N(0, sigma1^2), u_2..u_(L-1) = 0, u_L ~ N(0, sigma2^2 I_d)
    targets (B, 1): G(u) = |u1| (``target: raw``, the paper's) or |u1| / sigma1 (``target: normalised``)

sigma1 and sigma2 are standard deviations (b2s6 spec E3 default) given together as ``sigmas`` = "<sigma1>_<sigma2>"
(e.g. "1e-2_1e2"), so that one sweep covers the grid. Inputs are not normalised (the input scale is the point
of the experiment). The metric is the mean relative error mean |G - G_pred| / sigma1 (``rel_err``; 0.798 for
predicting 0, b2s6 spec §4 T9) either way; the target decides what the probe must output:
- ``raw`` (the paper: it learns G(u) = |u1| and "since the target size scales with sigma1" reports the error
  divided by sigma1): the MSE is (G_pred - G)^2 and G_pred the model's output. A residual the late input leaves
  in the output weighs 1 / sigma1 in the metric, so it hurts where sigma1 is small and sigma2 large, the paper's
  corner;
- ``normalised`` (b2s6 spec §5 item 10, the default): the MSE is ((G_pred - G) / sigma1)^2, G_pred = sigma1 x the
  output. The probe must then output O(1) from inputs of size sigma2 at every sigma1: S6 and B2S6 read
  C_L = u_L^T C and write B_L u_L, so their last output is cubic in u_L (about 4e4 at sigma2 = 1e2 at init) and
  the error followed sigma2 alone at cpu (1.1e4-1.6e4 at sigma1 = 1e-2 and 1e2 alike).
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

import torch

from ..options import NonNegInt, Opt, PosInt
from ..registry import register_task
from ..rng import counter_generator
from .base import Task
from .sampling import epoch_indices


def parse_sigmas(sigmas: str) -> tuple[float, float]:
    """ "1e-2_1e2" -> (0.01, 100.0); ValueError naming the expected form otherwise."""
    parts = str(sigmas).split("_")
    try:
        s1, s2 = (float(p) for p in parts)
    except ValueError:
        raise ValueError(f"b2s6_copyme: sigmas must be '<sigma1>_<sigma2>' (e.g. '1e-2_1e2'), got {sigmas!r}") from None
    if s1 <= 0 or s2 <= 0:
        raise ValueError(f"b2s6_copyme: sigmas must be positive, got {sigmas!r}")
    return s1, s2


def copy_me_inputs(u1: torch.Tensor, uL: torch.Tensor, L: int) -> torch.Tensor:
    """u1: (N,), uL: (N, d) -> u: (N, L, d) with u_1 = u1 * ones, u_L = uL, zeros between (L >= 2)."""
    N, d = uL.shape
    u = torch.zeros(N, L, d, dtype=uL.dtype)
    u[:, 0] = u1[:, None]
    u[:, -1] = uL
    return u


@register_task("b2s6_copyme")
class CopyMe(Task):
    example_options: ClassVar[dict] = {"sigmas": "1e-1_1e1", "d": 4, "L": 8, "train_size": 16, "test_size": 8}
    example_model: ClassVar[dict] = {"name": "ssm_probe", "width": 4, "mixer": {"name": "s6", "d_state": 3}}
    summary_columns: ClassVar[dict[str, tuple[str, ...]]] = {"evaluate": ("rel_err", "sigma1", "sigma2")}

    memory: ClassVar[dict[str, str]] = {
        "inputs (train_size + test_size, L, d), built in float64 and cast": "(train_size + test_size) * L * d * 12",
        "a training batch (train.batch, L, d)": "(train.batch or 1) * L * d * 8",
    }

    def __init__(
        self,
        *,
        sigmas: str,
        d: PosInt = 32,
        L: PosInt = 100,
        train_size: PosInt = 8192,
        test_size: PosInt = 2048,
        data_seed: NonNegInt = 0,
        target: Annotated[
            Literal["normalised", "raw"], Opt(description="|u1| / sigma1 (b2s6 spec §5 item 10) or |u1| (the paper's)")
        ] = "normalised",
        dtype: torch.dtype = torch.float32,
    ):
        if L < 2:
            raise ValueError(f"b2s6_copyme: L must be >= 2 (first and last inputs), got {L}")
        self.sigma1, self.sigma2 = parse_sigmas(sigmas)
        self.sigmas, self.L, self.d, self.dtype, self.target = sigmas, L, d, dtype, target
        self.target_scale = self.sigma1 if target == "normalised" else 1.0  # G / target_scale is what is learned
        self.d_in, self.d_out, self.seq_len = d, 1, L
        self.train_size, self.test_size, self.data_seed = train_size, test_size, data_seed
        self._train = self._draw("train", train_size)
        self._test = self._draw("test", test_size)

    def _draw(self, split: str, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        g = counter_generator("b2s6_copyme", split, self.sigmas, self.d, self.data_seed)  # fresh per grid cell
        u1 = self.sigma1 * torch.randn(size, generator=g, dtype=torch.float64)
        uL = self.sigma2 * torch.randn(size, self.d, generator=g, dtype=torch.float64)
        return copy_me_inputs(u1, uL, self.L).to(self.dtype), (u1.abs() / self.target_scale)[:, None].to(self.dtype)

    def batch(self, seed: int, step: int, rank: int, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        idx = epoch_indices("b2s6_copyme", self.train_size, seed, step, rank, size)
        return self._train[0][idx], self._train[1][idx]

    def test_set(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self._test

    def evaluate(self, model: torch.nn.Module) -> dict:
        x, y = self.test_set()
        pred = self.predict(model, x, dtype=torch.float64)  # the whole set in one call, as the figures were made
        rel = ((pred - y.double()).abs() * (self.target_scale / self.sigma1)).mean()  # |G - G_pred| / sigma1
        return {"rel_err": float(rel), "sigma1": self.sigma1, "sigma2": self.sigma2}
