"""Heads paper, Experiment I: a rank-k rotation LTI SSM teacher (heads spec §2.3.1).

Teacher: d = p = k, B = C = I_k, A = blockdiag(rho R(theta_m)), theta_m = (2m-1) pi / k, so the
interaction rank dim span{A^tau} is exactly k once n >= k. Targets y_i = sum_{j<=i} A^(i-j) x_j are
computed from the materialised block-Toeplitz operator in float64 (FFT convolution in float32 would
raise the H >= k error floor, heads spec §2.3.1).
"""

from __future__ import annotations

import math
from typing import Annotated, ClassVar

import torch

from ..capabilities import InteractionOperator, SoleMixer
from ..ops.lowrank import optimal_mse
from ..options import NonNegInt, Opt, PosInt
from ..registry import register_task
from ..rng import counter_generator
from .base import Task


def rotation_angles(k: int) -> list[float]:
    return [(2 * m - 1) * math.pi / k for m in range(1, k // 2 + 1)]


def teacher_transition(k: int, rho: float = 1.0) -> torch.Tensor:
    """A = blockdiag(rho R(theta_1), ..., rho R(theta_{k/2})), float64, shape (k, k)."""
    A = torch.zeros(k, k, dtype=torch.float64)
    for m, th in enumerate(rotation_angles(k)):
        c, s = math.cos(th), math.sin(th)
        A[2 * m : 2 * m + 2, 2 * m : 2 * m + 2] = rho * torch.tensor([[c, -s], [s, c]], dtype=torch.float64)
    return A


def lag_operators(k: int, n: int, rho: float = 1.0) -> torch.Tensor:
    """W(tau) = C A^tau B = A^tau for tau = 0..n-1, float64, shape (n, k, k)."""
    A = teacher_transition(k, rho)
    out = torch.empty(n, k, k, dtype=torch.float64)
    P = torch.eye(k, dtype=torch.float64)
    for tau in range(n):
        out[tau] = P
        P = A @ P
    return out


def teacher_operator(k: int, n: int, rho: float = 1.0) -> torch.Tensor:
    """Block-Toeplitz K[i, j] = W(i-j) 1[i >= j], float64, shape (n, n, k, k)."""
    W = lag_operators(k, n, rho)
    idx = torch.arange(n)
    lag = (idx[:, None] - idx[None, :]).clamp(min=0)
    K = W[lag]
    return K * (idx[:, None] >= idx[None, :]).to(K.dtype)[:, :, None, None]


@register_task("rotation_teacher")
class RotationTeacher(Task):
    example_options: ClassVar[dict] = {"k": 4, "n": 6, "test_size": 8}
    example_model: ClassVar[dict] = {"name": "bare", "mixer": {"name": "factorized_linear_attention", "heads": 1}}
    summary_columns: ClassVar[dict[str, tuple[str, ...]]] = {
        "evaluate": ("test_mse", "norm_mse", "mse_opt", "mse_ratio", "sup_err", "probe_err")
    }
    memory: ClassVar[dict[str, str]] = {
        "teacher operator K (n, n, k, k) float64, gathered then masked": "2 * n * n * k * k * 8",
        "lag and mask indices (n, n) int64": "2 * n * n * 8",
        "evaluation: the student's operator and K - K_student, float64": "2 * n * n * k * k * 8",
        "test set (test_size, n, k): float64 draws, inputs and targets": "3 * test_size * n * k * 8",
        "a training batch (train.batch, n, k), as the test set": "3 * (train.batch or 1) * n * k * 8",
    }

    def __init__(
        self,
        *,
        k: Annotated[int, Opt(minimum=2, multiple_of=2, description="interaction rank (even)")],
        n: Annotated[int, Opt(minimum=1, description="sequence length")],
        rho: Annotated[float, Opt(exclusive_minimum=0, maximum=1)] = 1.0,
        test_size: PosInt = 1024,
        test_seed: NonNegInt = 1234,
        dtype: torch.dtype = torch.float32,
    ):
        if k < 2 or k % 2:
            raise ValueError(f"k must be an even integer >= 2, got {k}")
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        self.k, self.n, self.rho = k, n, rho
        self.d_in = self.d_out = k
        self.seq_len = n
        self.test_size, self.test_seed = test_size, test_seed
        self.dtype = dtype
        self.K = teacher_operator(k, n, rho)  # float64

    def targets(self, x: torch.Tensor) -> torch.Tensor:
        """x: (B, n, k) -> y: (B, n, k), computed in float64 then cast to x's dtype."""
        return torch.einsum("ijpd,bjd->bip", self.K, x.double()).to(x.dtype)

    def _draw(self, g: torch.Generator, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.randn(size, self.n, self.k, generator=g, dtype=torch.float64).to(self.dtype)
        return x, self.targets(x)

    def batch(self, seed: int, step: int, rank: int, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self._draw(counter_generator("rotation_teacher", self.k, seed, step, rank), size)

    def evaluate(self, model: torch.nn.Module) -> dict:
        return evaluate(self, model, heads=student_mixer(model).heads)

    def test_set(self) -> tuple[torch.Tensor, torch.Tensor]:
        # shared by every run with the same (k, n, test_seed), independent of the training seed
        return self._draw(counter_generator("rotation_teacher/test", self.k, self.n, self.test_seed), self.test_size)


def probe_error(model: torch.nn.Module, n: int, k: int) -> float:
    """Thm 4.2 probe: X = [e_1, 0, ..., 0]; squared error on the first two outputs (targets e_1, A e_1)."""
    dtype = next(model.parameters()).dtype
    x = torch.zeros(1, n, k, dtype=dtype)
    x[0, 0, 0] = 1.0
    A = teacher_transition(k)
    y = Task.predict(model, x, dtype=None)[0].double()
    target = torch.stack([torch.eye(k, dtype=torch.float64)[0], A[:, 0]])
    return float(((y[:2] - target[: min(2, n)]) ** 2).sum())


def student_mixer(model: torch.nn.Module) -> InteractionOperator:
    """The mixer a student model consists of, which must expose its interaction operator (Def. 4.1)."""
    mixer = model.sole_mixer() if isinstance(model, SoleMixer) else None
    if not isinstance(mixer, InteractionOperator):
        raise TypeError(
            f"rotation_teacher metrics compare interaction operators: the model must be a single mixer "
            f"(capabilities.SoleMixer) implementing capabilities.InteractionOperator; got "
            f"{type(model).__name__} of {type(mixer).__name__}"
        )
    return mixer


def evaluate(task: RotationTeacher, model: torch.nn.Module, heads: int) -> dict:
    """Exp. I metrics: test MSE, normalised MSE, the Eckart-Young optimum, their ratio, the sup-norm
    error of the block operators (Def. 4.1) and the Thm 4.2 probe error."""
    x, y = task.test_set()
    pred = task.predict(model, x, dtype=None)  # the whole set in one call, in the model's dtype
    mse = float(torch.mean((pred.double() - y.double()) ** 2))
    norm_mse = mse / float(torch.mean(y.double() ** 2))
    opt = optimal_mse(lag_operators(task.k, task.n, task.rho), heads)
    n, k = task.n, task.k
    with torch.no_grad():  # the student's weights, read without a forward
        K_student = student_mixer(model).interaction_operator().double()
    diff = (K_student - task.K).permute(0, 2, 1, 3).reshape(n * k, n * k)
    sup_err = float(torch.linalg.matrix_norm(diff, ord=2))
    probe = probe_error(model, n, k)
    return {
        "test_mse": mse,
        "norm_mse": norm_mse,
        "mse_opt": opt,
        "mse_ratio": (mse / opt) if opt > 0 else float("nan"),
        "sup_err": sup_err,
        "probe_err": probe,
    }
