"""Input-output Jacobians against the lag, for any sequence model: (B, T, d) -> (B, T, p).

The quantity of the heads paper's Exp. II is J = dy_{T-1}/dx_{T-1-lag} (lag = T - 1 for dy_{T-1}/dx_0),
one p x d block per input sequence. Batch elements are independent in every model here (no batch
statistics), so one backward pass of sum_b y_{b, T-1, c} gives row c of every sequence's block: p backward
passes give the B blocks at once.

Norms are taken in float64 (spec pitfall P5): Jacobian entries of about 1e-23 are representable in
float32, but their squares (1e-46) underflow even float32's smallest subnormal, so a float32 Frobenius
norm would read exactly 0.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ..capabilities import LastOutput

Fn = Callable[[torch.Tensor], torch.Tensor]


def output_jacobians(fn: Fn, x: torch.Tensor) -> torch.Tensor:
    """d fn(x)[b] / d x[b, t] for every batch element b and every input position t: (B, p, T, d).

    ``fn`` maps x: (B, T, d) to one output per sequence, (B, p), batch elements independently (e.g. the
    last position of a causal model). p backward passes, whatever T.
    """
    x = x.detach().clone().requires_grad_(True)
    y = fn(x)
    if y.dim() != 2 or y.shape[0] != x.shape[0]:
        raise ValueError(f"fn must return (B, p) for x of shape {tuple(x.shape)}, got {tuple(y.shape)}")
    p = y.shape[1]
    rows = []
    for c in range(p):
        (g,) = torch.autograd.grad(y[:, c].sum(), x, retain_graph=c < p - 1, allow_unused=True)
        rows.append(torch.zeros_like(x) if g is None else g)
    return torch.stack(rows, dim=1)


def output_jacobian(fn: Fn, x: torch.Tensor, in_pos: int) -> torch.Tensor:
    """d fn(x)[b] / d x[b, in_pos] for every batch element b: (B, p, d) (see ``output_jacobians``)."""
    return output_jacobians(fn, x)[:, :, in_pos]


def last_output(model: torch.nn.Module) -> Fn:
    """x -> y_{T-1}: the model's own ``forward_last`` when it has one (O(T) instead of O(T^2) for attention),
    else the last position of the full forward."""
    if isinstance(model, LastOutput):
        return model.forward_last
    return lambda x: model(x)[:, -1]


def lag_jacobian(
    model: torch.nn.Module | Fn, x: torch.Tensor, lag: int | None = None, fn: Fn | None = None
) -> torch.Tensor:
    """J = dy_{T-1}/dx_{T-1-lag} for each sequence of x: (B, p, d). ``lag`` defaults to T - 1 (the first token).

    ``fn`` overrides how y_{T-1} is computed (default: ``last_output(model)``)."""
    T = x.shape[1]
    lag = T - 1 if lag is None else lag
    if not 0 <= lag < T:
        raise ValueError(f"lag must be in [0, {T - 1}] for T = {T}, got {lag}")
    return output_jacobian(fn or last_output(model), x, T - 1 - lag)


def jacobian_norms(J: torch.Tensor) -> dict[str, torch.Tensor]:
    """Per block of J: (B, p, d), in float64:
    - ``fro``: ||J||_F (the Exp. II primary quantity),
    - ``spec``: ||J||_2,
    - ``sumgrad``: ||d(sum_c y_c)/dx||_2 = ||1^T J||_2 (the gradient of a scalar summary of the output)."""
    J = J.detach().double()
    return {
        "fro": torch.linalg.matrix_norm(J, ord="fro"),
        "spec": torch.linalg.matrix_norm(J, ord=2),
        "sumgrad": torch.linalg.vector_norm(J.sum(dim=1), dim=-1),
    }


def relative_error(J: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    """||J - ref||_F / ||ref||_F per block, float64 (J: (B, p, d), ref: (p, d) or (B, p, d))."""
    J, ref = J.detach().double(), ref.detach().double()
    return torch.linalg.matrix_norm(J - ref, ord="fro") / torch.linalg.matrix_norm(ref, ord="fro")


def geomean_log10(values: torch.Tensor | list[float]) -> tuple[float, float]:
    """(geometric mean, std of log10) of positive values (Exp. II's aggregation over seeds and draws)."""
    v = torch.as_tensor(values, dtype=torch.float64)
    lv = torch.log10(v.clamp_min(1e-300))
    return float(10 ** lv.mean()), float(lv.std(unbiased=False)) if lv.numel() > 1 else 0.0
