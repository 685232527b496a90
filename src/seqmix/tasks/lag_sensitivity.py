"""Heads paper, Experiment II: the sensitivity of a late output to the first input token, against T.

For each sequence length T of the grid and each of ``draws`` input sequences x_0..x_{T-1} ~ N(0, I_d), the
model's Jacobian J = dy_{T-1}/dx_0 (lag T - 1; spec U-II-6: "x_0" and "y_T" read as the first token and
the last output of a length-T sequence) and its norms (Frobenius, spectral, sum-gradient), in float64
(pitfall P5). Nothing is trained: the model is measured at initialisation (spec §3.6).

Model-specific closed forms, when the mixer has them:
- a linear SSM (``lag_operator``): ||C A^(T-1) B||_F (``closed_form``), the relative difference of the
  autograd Jacobian from it (``rel_err``), the Thm 5.1 bound ||C||_2 ||B||_2 ||A||_2^(T-1) (``bound``) and
  ||J||_2 / bound, the spectral radius rho(A) and ln rho(A) (the predicted decay rate per step) and
  ||J||_F / rho^(T-1) (the rho Q variant's spec prediction: about sqrt(d/9));
- attention (``value_output_product``): the uniform-attention estimate ||W_O W_V||_F / T and T ||J||_F
  (spec §4.5: about sqrt(d/6)).
"""
from __future__ import annotations

import math
from typing import Annotated

import torch

from ..options import Opt, PosInt
from ..registry import register_task
from .base import Task, counter_generator


@register_task("lag_sensitivity")
class LagSensitivity(Task):
    def __init__(self, *, d: Annotated[int, Opt(minimum=1, description="token width")] = 64,
                 T: Annotated[list[PosInt] | None, Opt(extra={"minItems": 1},
                                                         description="sequence lengths measured")] = None,
                 T_extra: Annotated[list[PosInt] | None, Opt(description="more lengths for this variant only "
                                                               "(the extended attention grid)")] = None,
                 draws: Annotated[int, Opt(minimum=1, description="input sequences per (model seed, T)")] = 16,
                 dtype: torch.dtype = torch.float64):
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

    def diagnose(self, model: torch.nn.Module, seed: int) -> dict:
        """{"rows": one per (T, draw), "metrics": {name: [(T, value)]} (geometric means over draws)}."""
        from ..diagnostics.jacobian import geomean_log10, jacobian_norms, lag_jacobian, relative_error

        mixer = getattr(model, "mixer", None)
        # a bare model is its mixer, so the mixer's last-output shortcut is the model's
        fast = getattr(mixer, "forward_last", None) if getattr(model, "registered_name", None) == "bare" else None
        ssm = mixer if hasattr(mixer, "lag_operator") else None
        attn = mixer if hasattr(mixer, "value_output_product") else None
        rho = ssm.spectral_radius() if ssm is not None else None
        wowv = float(torch.linalg.matrix_norm(attn.value_output_product().detach().double())) if attn is not None else None
        rows, metrics = [], {}
        for T in self.grid:
            lag = T - 1
            J = lag_jacobian(model, self.inputs(seed, T), lag, fn=fast)
            norms = {k: v.tolist() for k, v in jacobian_norms(J).items()}
            extra: dict = {}
            if ssm is not None:
                with torch.no_grad():
                    closed = ssm.lag_operator(lag).double()
                extra = {"closed_form": float(torch.linalg.matrix_norm(closed)),
                         "rel_err": relative_error(J, closed).tolist(),
                         "bound": ssm.jacobian_bound(lag), "rho": rho}
            for r in range(self.draws):
                row = {"T": T, "lag": lag, "draw": r, **{k: v[r] for k, v in norms.items()}}
                if ssm is not None:
                    row.update(closed_form=extra["closed_form"], rel_err=extra["rel_err"][r], bound=extra["bound"],
                               bound_ratio=row["spec"] / extra["bound"], rho=rho, ln_rho=math.log(rho),
                               fro_per_rho_lag=row["fro"] / rho ** lag)
                if attn is not None:
                    row.update(uniform_approx=wowv / T, fro_times_T=row["fro"] * T)
                rows.append(row)
            for k, v in norms.items():
                metrics.setdefault(f"{k}_geomean", []).append((T, geomean_log10(v)[0]))
            if ssm is not None:
                metrics.setdefault("rel_err_max", []).append((T, max(extra["rel_err"])))
        if rho is not None:
            metrics["rho"] = [(0, rho)]
        return {"rows": rows, "metrics": metrics}
