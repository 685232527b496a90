"""Decay laws and an effective memory of an influence-vs-lag profile (``influence.influence_profile``).

Two laws are fitted to the mean profile I(l) over the examples, by least squares in log space:

    exponential  log I = a - r l            (a recurrence with a contracting state: rate r)
    power law    log I = b - p log l        (attention-like or long-convolution memory: exponent p)

on the lags l >= max(min_lag, 1) where I is finite and positive (both laws on the same points, so that their
residual sums of squares compare; lag 0 is left out by default because it carries the direct path, e.g. a
residual stream, on a scale of its own, and log 0 is not defined for the power law). The law with the smaller
residual sum is the better fit (``BEST_FIT``). Intervals are 95% percentile bootstraps over the examples: the rows
of ``per_example`` are resampled with replacement and the fit redone on the resampled mean profile.

Degenerate profiles (all zero, fewer than two usable lags, NaN) give NaN, never an exception; invalid arguments
(a negative fraction, mismatched shapes) raise ValueError.
"""

from __future__ import annotations

import math

import torch

BEST_FIT = ("exp", "power")  # the law ``best_fit`` indexes: 0.0 exponential, 1.0 power law
NAN = float("nan")


def _as_profile(lags, per_example) -> tuple[torch.Tensor, torch.Tensor]:
    """(lags (L,) float64, per_example (N, L) float64); a 1-D profile is one example."""
    lg = torch.as_tensor(lags).reshape(-1).double()
    pe = torch.as_tensor(per_example).double()
    pe = pe[None, :] if pe.dim() == 1 else pe
    if pe.dim() != 2 or pe.shape[1] != len(lg):
        raise ValueError(f"per_example must be (N, {len(lg)}) for {len(lg)} lags, got {tuple(pe.shape)}")
    return lg, pe


def _mean(per_example: torch.Tensor) -> torch.Tensor:
    """(N, L) -> (L,): the mean over the examples that have a value at the lag (NaN where none has)."""
    if not len(per_example):
        return torch.full(per_example.shape[1:], NAN, dtype=torch.float64)
    return per_example.nanmean(0)


def _line(x: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
    """(slope, residual sum of squares) of the least-squares line y ~ c + s x; NaN with < 2 points or one x."""
    if len(x) < 2:
        return NAN, NAN
    xc = x - x.mean()
    den = float((xc * xc).sum())
    if not den > 0:
        return NAN, NAN
    slope = float((xc * (y - y.mean())).sum()) / den
    resid = (y - y.mean()) - slope * xc
    return slope, float((resid * resid).sum())


def _fit(lags: torch.Tensor, profile: torch.Tensor, min_lag: float) -> tuple[float, float, float, float, int]:
    """(exp rate r, power exponent p, rss_exp, rss_power, number of points) of one mean profile (L,)."""
    keep = (lags >= max(min_lag, 1)) & torch.isfinite(profile) & (profile > 0)
    n = int(keep.sum())
    if n < 2:
        return NAN, NAN, NAN, NAN, n
    lg, ly = lags[keep], profile[keep].log()
    s_exp, rss_exp = _line(lg, ly)
    s_pow, rss_pow = _line(lg.log(), ly)
    return -s_exp, -s_pow, rss_exp, rss_pow, n


def _interval(values: list[float]) -> tuple[float, float]:
    """(2.5%, 97.5%) percentiles of the finite values; NaN when there are none."""
    v = torch.tensor([x for x in values if math.isfinite(x)], dtype=torch.float64)
    if not len(v):
        return NAN, NAN
    q = torch.quantile(v, torch.tensor([0.025, 0.975], dtype=torch.float64))
    return float(q[0]), float(q[1])


def _resamples(n_rows: int, n_boot: int, seed: int):
    """``n_boot`` index vectors (n_rows,) drawn with replacement, from a generator of their own."""
    gen = torch.Generator().manual_seed(int(seed))
    for _ in range(n_boot if n_rows else 0):
        yield torch.randint(n_rows, (n_rows,), generator=gen)


def fit_decay(lags, per_example, *, min_lag: int = 1, n_boot: int = 200, seed: int = 0) -> dict:
    """Exponential and power-law fits of the mean profile (module docstring), with bootstrap intervals.

    lags: (L,) the lags of the columns; per_example: (N, L) influence per example (NaN: no value), or one (L,)
    profile. Returns plain floats: exp_rate, exp_rate_lo, exp_rate_hi (r of I ~ exp(-r l)); power, power_lo,
    power_hi (p of I ~ l^-p); exp_rss, power_rss (residual sums of squares of log I); best_fit (0.0 exp, 1.0
    power: ``BEST_FIT``; NaN with fewer than three points, where a line fits any two exactly, or a tie); n_lags
    (the number of points fitted)."""
    lg, pe = _as_profile(lags, per_example)
    rate, power, rss_exp, rss_pow, n = _fit(lg, _mean(pe), min_lag)
    boot = [_fit(lg, _mean(pe[idx]), min_lag)[:2] for idx in _resamples(len(pe), n_boot, seed)]
    rate_lo, rate_hi = _interval([b[0] for b in boot])
    pow_lo, pow_hi = _interval([b[1] for b in boot])
    best = NAN
    if n >= 3 and rss_exp != rss_pow and math.isfinite(rss_exp) and math.isfinite(rss_pow):
        best = 0.0 if rss_exp < rss_pow else 1.0
    return {
        "exp_rate": rate,
        "exp_rate_lo": rate_lo,
        "exp_rate_hi": rate_hi,
        "power": power,
        "power_lo": pow_lo,
        "power_hi": pow_hi,
        "exp_rss": rss_exp,
        "power_rss": rss_pow,
        "best_fit": best,
        "n_lags": float(n),
    }


def effective_memory(lags, influence, fraction: float = 0.01) -> float:
    """The smallest lag L such that the influence at every lag >= L is below ``fraction`` x the reference.

    Reference: the largest influence at lags 0 and 1. Lag 0 carries the direct path (the anchor's own input, a
    residual stream), which sets the model's scale; lag 1 joins it for models whose lag-0 path is weak or absent
    (a strictly causal shift, an output read one step later), whose scale would otherwise be a near-zero lag 0.
    lags: (L,) ascending; influence: (L,) (NaN lags are unknown and skipped). A profile still above the
    threshold at its last lag gives last lag + 1: the memory reaches past the window measured, a lower bound.
    NaN with fewer than two lags, or a reference that is not finite and positive."""
    if not 0 < fraction < 1:
        raise ValueError(f"fraction must lie in (0, 1), got {fraction}")
    lg = torch.as_tensor(lags).reshape(-1).double()
    infl = torch.as_tensor(influence).reshape(-1).double()
    if len(lg) != len(infl):
        raise ValueError(f"lags and influence differ in length: {len(lg)} and {len(infl)}")
    if len(lg) < 2:
        return NAN
    near = infl[(lg <= 1) & torch.isfinite(infl)]
    ref = float(near.max()) if len(near) else NAN
    if not (math.isfinite(ref) and ref > 0):
        return NAN
    above = torch.isfinite(infl) & (infl >= fraction * ref)
    if not bool(above.any()):
        return float(lg[0])
    return float(lg[above].max()) + 1.0


def effective_memory_interval(
    lags, per_example, fraction: float = 0.01, *, n_boot: int = 200, seed: int = 0
) -> tuple[float, float]:
    """95% percentile bootstrap interval (lo, hi) of ``effective_memory`` of the mean profile, the rows of
    per_example (N, L) resampled with replacement; (NaN, NaN) when no resample gives a value."""
    lg, pe = _as_profile(lags, per_example)
    return _interval([effective_memory(lg, _mean(pe[idx]), fraction) for idx in _resamples(len(pe), n_boot, seed)])
