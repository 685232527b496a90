"""Realised routing statistics of attention, Sessa's feedback and Mamba2's decay (sessa spec §3.6 D4, D7).

Pure functions of the routing tensors a mixer returns through ``capabilities`` (FeedbackRouting,
AttentionWeights, SelectiveDecay), so they apply to any mixer with those capabilities. All run in float64.

- feedback attention alpha_fb: (B, T, T), row t a distribution over j < t (row 0 empty):
  ``row_entropy`` H_t (diffuse <=> H_t ~ log t), ``c2_hat`` = max_{t,j} t alpha[t, j] (1 for uniform rows),
  ``logit_spread`` per row (max - min log alpha over the row's support: the logits' range, since a softmax
  only sees logit differences), ``solve_kernel`` the columns of (I - B_fb)^{-1}, B_fb = gamma_t alpha[t, j];
- forward attention alpha: (B, H, T, T) over j <= t: ``diagonal_profile`` alpha[tau + l, tau] against l;
- selective decay: ``accumulated_decay`` exp(A_h sum_{r=tau+1}^{tau+l} Delta_r) against l and
  ``min_window_rate`` c_Delta = min over windows of length >= w of sum Delta / length (Prop. 5's hypothesis
  that the step sizes never freeze).
"""

from __future__ import annotations

import torch

from ..ops import feedback_solve as fs_ops

TINY = 1e-300  # log of an underflowed probability: finite, so a spread stays a number


def row_entropy(alpha: torch.Tensor) -> torch.Tensor:
    """H_t = -sum_j alpha[t, j] log alpha[t, j] (0 log 0 = 0): (..., T) from alpha (..., T, T)."""
    a = alpha.double()
    return -(a * a.clamp_min(TINY).log()).sum(-1)


def c2_hat(alpha_fb: torch.Tensor) -> torch.Tensor:
    """max over t, j of t alpha_fb[t, j] (row t has t entries, so a uniform row gives 1): (B,) from
    (B, T, T)."""
    T = alpha_fb.shape[-1]
    t = torch.arange(T, dtype=torch.float64, device=alpha_fb.device)
    return (alpha_fb.double() * t[:, None]).amax(dim=(-1, -2))


def logit_spread(alpha: torch.Tensor, strict: bool) -> torch.Tensor:
    """max - min of log alpha over each row's support (j < t with ``strict``, else j <= t): (..., T), NaN for
    rows with fewer than two entries."""
    T = alpha.shape[-1]
    ones = torch.ones(T, T, dtype=torch.bool, device=alpha.device)
    support = ones.tril(-1) if strict else ones.tril()
    la = alpha.double().clamp_min(TINY).log()
    hi = la.masked_fill(~support, float("-inf")).amax(-1)
    lo = la.masked_fill(~support, float("inf")).amin(-1)
    spread = hi - lo
    entries = support.sum(-1)
    return spread.masked_fill(entries < 2, float("nan"))


def solve_kernel(gamma: torch.Tensor, alpha_fb: torch.Tensor, sources: list[int]) -> torch.Tensor:
    """Columns tau of (I - B_fb)^{-1}, B_fb[t, j] = gamma_t alpha_fb[t, j] (j < t): (B, T, S), one solve with S
    one-hot right-hand sides (the feedback solve itself, ``seqmix.ops.feedback_solve``)."""
    B, T = gamma.shape
    rhs = torch.zeros(B, T, len(sources), dtype=torch.float64, device=gamma.device)
    for i, tau in enumerate(sources):
        rhs[:, tau, i] = 1.0
    return fs_ops.feedback_solve(rhs, gamma.double(), alpha_fb.double())


def _common_lags(T: int, sources: list[int]) -> int:
    """The number of lags every source reaches (0 .. T - 1 - max source): a mean over sources is taken there
    only, so the far end of a profile is not the nearest sources' alone."""
    return T - max(sources) if sources else 0


def kernel_profile(columns: torch.Tensor, sources: list[int]) -> torch.Tensor:
    """Mean over batch and sources of columns[b, tau + l, i] (tau = sources[i]) against l = 0 .. T - 1 -
    max(sources): (T - max(sources),). columns: (B, T, S)."""
    n = _common_lags(columns.shape[1], sources)
    cols = [columns[:, tau : tau + n, i].double().mean(0) for i, tau in enumerate(sources)]
    return torch.stack(cols).mean(0).cpu() if cols else torch.zeros(0, dtype=torch.float64)


def diagonal_profile(alpha: torch.Tensor, sources: list[int]) -> torch.Tensor:
    """alpha[tau + l, tau] averaged over batch, heads and sources against l = 0 .. T - 1 - max(sources).
    alpha: (B, H, T, T)."""
    n = _common_lags(alpha.shape[-1], sources)
    cols = [alpha[..., tau : tau + n, tau].double().mean((0, 1)) for tau in sources]
    return torch.stack(cols).mean(0).cpu() if cols else torch.zeros(0, dtype=torch.float64)


def accumulated_decay(delta: torch.Tensor, A: torch.Tensor, sources: list[int]) -> torch.Tensor:
    """exp(A_h sum_{r=tau+1}^{tau+l} Delta_r) averaged over batch, heads and sources against l = 0 .. L - 1 -
    max(sources) (1 at l = 0). delta: (B, L, H) step sizes, A: (H,) negative rates."""
    n = _common_lags(delta.shape[1], sources)
    rate = delta.double() * A.double().to(delta.device)  # (B, L, H): log-decay per step
    cols = []
    for tau in sources:
        steps = torch.cat([torch.zeros_like(rate[:, :1]), rate[:, tau + 1 : tau + n]], 1)  # l = 0 has no step
        cols.append(steps.cumsum(1).exp().mean((0, 2)))
    return torch.stack(cols).mean(0).cpu() if cols else torch.zeros(0, dtype=torch.float64)


def min_window_rate(delta: torch.Tensor, min_window: int) -> torch.Tensor:
    """c_Delta = min over windows [i, j) with j - i >= min_window of sum Delta / (j - i): (B, H); NaN when the
    sequence is shorter than the window. delta: (B, L, H)."""
    B, L, H = delta.shape
    if L < min_window:
        return torch.full((B, H), float("nan"), dtype=torch.float64)
    idx = torch.arange(L + 1, device=delta.device)
    length = (idx[None, :] - idx[:, None]).double()  # [i, j] -> j - i
    too_short = (length < min_window)[:, :, None]
    out = torch.empty(B, H, dtype=torch.float64)
    for b in range(B):  # one (L+1)^2 table per sequence: O(L^2 H) memory, not O(B L^2 H)
        prefix = torch.cat([torch.zeros(1, H, dtype=torch.float64, device=delta.device), delta[b].double().cumsum(0)])
        sums = prefix[None, :, :] - prefix[:, None, :]  # [i, j, h] = sum of Delta over [i, j)
        rate = (sums / length.clamp_min(1)[:, :, None]).masked_fill(too_short, float("inf"))
        out[b] = rate.amin(dim=(0, 1)).cpu()
    return out
