"""Closed forms of the heads paper (spec §4): interaction rank and the Eckart-Young optimum for H < k."""
from __future__ import annotations

import torch


def lag_unfolding(W: torch.Tensor, weighted: bool = True) -> torch.Tensor:
    """W: (n, p, d) lag operators -> M: (n, p*d), rows sqrt(n - tau) vec W(tau) when weighted.

    Each lag tau occurs n - tau times among the causal pairs, so the weighted lag unfolding has the same
    singular values as the pair unfolding of the whole block-Toeplitz operator.
    """
    n = W.shape[0]
    M = W.reshape(n, -1).double()
    if weighted:
        M = M * torch.sqrt(torch.arange(n, 0, -1, dtype=torch.float64))[:, None]
    return M


def interaction_rank(W: torch.Tensor, tol: float = 1e-9) -> int:
    """dim span{W(tau)}: numerical rank of the (unweighted) lag unfolding."""
    s = torch.linalg.svdvals(lag_unfolding(W, weighted=False))
    return int((s > tol * s[0]).sum()) if s.numel() and s[0] > 0 else 0


def optimal_mse(W: torch.Tensor, heads: int, tol: float = 1e-9) -> float:
    """MSE*(H) = (1/(n p)) sum_{l > H} sigma_l^2 of the weighted lag unfolding (spec §4.3).

    The best H-head student with unconstrained causal coefficients, under i.i.d. N(0, I) inputs, with
    the MSE averaged over the n * p output entries. H = 0 gives the total target variance. Singular
    values below ``tol * sigma_1`` (the rank tolerance of ``interaction_rank``) are round-off, so MSE*(H)
    is exactly 0 once H reaches the interaction rank (and MSE / MSE* is then undefined, not a ratio of
    round-off errors).
    """
    n, p, _ = W.shape
    s = torch.linalg.svdvals(lag_unfolding(W))
    if s.numel() and s[0] > 0:
        s = torch.where(s > tol * s[0], s, torch.zeros_like(s))
    return float((s[heads:] ** 2).sum() / (n * p))


def singular_values(W: torch.Tensor) -> list[float]:
    return torch.linalg.svdvals(lag_unfolding(W)).tolist()
