"""The heads paper's Exp. II probe: ||dy_{T-1}/dx_0|| against T for the inputs of a ``LagSensitivity`` task.

Model-specific closed forms, when the model is one mixer (``capabilities.SoleMixer``) that has them:
- a linear SSM (``capabilities.LagOperator``): ||C A^(T-1) B||_F (``closed_form``), the relative difference of
  the autograd Jacobian from it (``rel_err``), the Thm 5.1 bound ||C||_2 ||B||_2 ||A||_2^(T-1) (``bound``) and
  ||J||_2 / bound, the spectral radius rho(A) and ln rho(A) (the predicted decay rate per step) and
  ||J||_F / rho^(T-1) (the rho Q variant's spec prediction: about sqrt(d/9));
- attention (``capabilities.ValueOutputProduct``): the uniform-attention estimate ||W_O W_V||_F / T and
  T ||J||_F (heads spec §4.5: about sqrt(d/6)).
"""

from __future__ import annotations

import math

import torch

from ..capabilities import LagOperator, LastOutput, SoleMixer, ValueOutputProduct
from ..tasks.lag_sensitivity import LagSensitivity
from .jacobian import geomean_log10, jacobian_norms, lag_jacobian, relative_error


def _closed_forms(ssm: LagOperator | None, lag: int, J: torch.Tensor, rho: float | None) -> dict:
    if ssm is None:
        return {}
    with torch.no_grad():
        closed = ssm.lag_operator(lag).double()
    return {
        "closed_form": float(torch.linalg.matrix_norm(closed)),
        "rel_err": relative_error(J, closed).tolist(),
        "bound": ssm.jacobian_bound(lag),
        "rho": rho,
    }


def diagnose(task: LagSensitivity, model: torch.nn.Module, seed: int) -> dict:
    """{"rows": one per (T, draw), "metrics": {name: [(T, value)]} (geometric means over draws)}."""
    mixer = model.sole_mixer() if isinstance(model, SoleMixer) else None
    # a bare model is its mixer, so the mixer's last-output shortcut is the model's
    fast = mixer.forward_last if isinstance(mixer, LastOutput) else None
    ssm = mixer if isinstance(mixer, LagOperator) else None
    attn = mixer if isinstance(mixer, ValueOutputProduct) else None
    rho = ssm.spectral_radius() if ssm is not None else None
    wowv = float(torch.linalg.matrix_norm(attn.value_output_product().detach().double())) if attn is not None else None
    rows, metrics = [], {}
    for T in task.grid:
        lag = T - 1
        J = lag_jacobian(model, task.inputs(seed, T), lag, fn=fast)
        norms = {k: v.tolist() for k, v in jacobian_norms(J).items()}
        extra = _closed_forms(ssm, lag, J, rho)
        for r in range(task.draws):
            row = {"T": T, "lag": lag, "draw": r, **{k: v[r] for k, v in norms.items()}}
            if ssm is not None:
                row.update(
                    closed_form=extra["closed_form"],
                    rel_err=extra["rel_err"][r],
                    bound=extra["bound"],
                    bound_ratio=row["spec"] / extra["bound"],
                    rho=rho,
                    ln_rho=math.log(rho),
                    fro_per_rho_lag=row["fro"] / rho**lag,
                )
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
