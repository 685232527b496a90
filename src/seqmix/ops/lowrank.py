"""Eckart-Young on a family of lag operators W(tau), tau = 0..n-1 (heads paper, heads spec §4.3).

Pure torch on arrays: the rotation-teacher task reports MSE*(H) beside a student's MSE, and the heads theory
builds its closed forms on the same unfolding, so both import it from here.
"""

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


def optimal_mse(W: torch.Tensor, heads: int, tol: float = 1e-9) -> float:
    """MSE*(H) = (1/(n p)) sum_{l > H} sigma_l^2 of the weighted lag unfolding (heads spec §4.3).

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
