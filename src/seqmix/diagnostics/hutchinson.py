"""Hutchinson estimates of Jacobian-block norms against the lag, and lag binning (sessa spec §3.6 D4, D6, D8).

For a causal map y = f(x), x, y: (B, T, d), the block J_{t,tau} = dy_t/dx_tau has E_v ||J_{t,tau} v||^2 =
||J_{t,tau}||_F^2 for v ~ N(0, I). Two directions, each giving a whole lag profile per pass:

- forward mode (``jvp_lag_norms``, torch.autograd.forward_ad: the JVP of torch.func.jvp without the cost of
  importing torch.func): one tangent at x_tau only; one JVP gives J_{t,tau} v for every t, i.e.
  every lag l = t - tau from one source (D4);
- reverse mode (``vjp_source_norms``): one random probe u at a fixed target; one VJP gives u^T J_{t,tau} for
  every source tau (D6).

Both average K draws in float64 and return sqrt(mean ||.||^2), so K = 1 is an unbiased estimate of ||J||_F^2
(not of ||J||_F) and the spread shrinks like 1/sqrt(K d). PyTorch's fused CPU attention kernel has no
forward-mode derivative, so JVPs run with the math backend of scaled_dot_product_attention.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.autograd.forward_ad as fwAD
from torch.nn.attention import SDPBackend, sdpa_kernel

Fn = Callable[[torch.Tensor], torch.Tensor]


def jvp_lag_norms(fn: Fn, x: torch.Tensor, source: int, tangents: int, generator: torch.Generator) -> torch.Tensor:
    """Estimates of ||dy_t/dx_source||_F for every t: (B, T), float64 (zero for t < source in a causal fn).

    ``fn`` maps (N, T, d) -> (N, T, p), batch elements independently; the K tangents ride along the batch
    (x repeated K times), so one JVP serves them all."""
    B, T, d = x.shape
    if not 0 <= source < T:
        raise ValueError(f"source must be in [0, {T - 1}], got {source}")
    xs = x.detach().repeat_interleave(tangents, dim=0)
    v = torch.zeros_like(xs)
    v[:, source] = torch.randn(B * tangents, d, generator=generator, dtype=xs.dtype).to(xs.device)
    with sdpa_kernel(SDPBackend.MATH), torch.no_grad(), fwAD.dual_level():
        jv = fwAD.unpack_dual(fn(fwAD.make_dual(xs, v))).tangent
    if jv is None:  # the output does not depend on x at all
        jv = torch.zeros(B * tangents, T, 1, dtype=xs.dtype, device=xs.device)
    sq = jv.detach().double().pow(2).sum(-1).view(B, tangents, T).mean(1)
    return sq.sqrt()


def vjp_source_norms(target: Fn, e: torch.Tensor, probes: int, generator: torch.Generator) -> torch.Tensor:
    """Estimates of ||d target(e)[b] / d e[b, tau]||_F for every source tau: (B, T), float64.

    ``target`` maps e: (B, T, d) to one output per sequence, (B, p), batch elements independently; each of
    the K probes u ~ N(0, I_p) costs one backward pass through the same graph."""
    e = e.detach().requires_grad_(True)
    y = target(e)
    if y.dim() != 2 or y.shape[0] != e.shape[0]:
        raise ValueError(f"target must return (B, p) for e of shape {tuple(e.shape)}, got {tuple(y.shape)}")
    acc = torch.zeros(e.shape[:2], dtype=torch.float64, device=e.device)
    for k in range(probes):
        u = torch.randn(y.shape, generator=generator, dtype=y.dtype).to(y.device)
        (g,) = torch.autograd.grad(y, e, grad_outputs=u, retain_graph=k < probes - 1, allow_unused=True)
        if g is not None:
            acc += g.detach().double().pow(2).sum(-1)
    return (acc / probes).sqrt()


def log2_lag_edges(max_lag: int) -> list[int]:
    """Bin edges [0, 1, 2, 4, ..., 2^k] with 2^k > max_lag: bin 0 is lag 0, bin b >= 1 holds [2^(b-1), 2^b)."""
    edges = [0, 1]
    while edges[-1] <= max_lag:
        edges.append(2 * edges[-1])
    return edges


def bin_by_lag(values: torch.Tensor, lags: torch.Tensor, valid: torch.Tensor | None = None) -> list[dict]:
    """Mean of ``values`` per log2 lag bin (``log2_lag_edges``): one dict per non-empty bin with lag_lo,
    lag_hi (exclusive), lag_mid (the geometric middle of the bin's lags; 0 for bin 0), mean, count.
    values, lags and valid (bool, default all) have one shape; invalid entries are left out."""
    v, lg = values.detach().double().reshape(-1), lags.detach().reshape(-1).long()
    if valid is not None:
        keep = valid.reshape(-1).bool()
        v, lg = v[keep], lg[keep]
    if lg.numel() and int(lg.min()) < 0:
        raise ValueError(f"lags must be >= 0, got {int(lg.min())}")
    if not lg.numel():
        return []
    edges = log2_lag_edges(int(lg.max()))
    rows = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        m = (lg >= lo) & (lg < hi)
        n = int(m.sum())
        if n:
            mid = 0.0 if lo == 0 else math.sqrt(lo * (hi - 1))
            rows.append({"lag_lo": lo, "lag_hi": hi, "lag_mid": mid, "mean": float(v[m].mean()), "count": n})
    return rows


def loglog_slope(x, y) -> float:
    """Least-squares slope of log y against log x over the points where both are positive and finite; NaN
    with fewer than two such points."""
    x = torch.as_tensor(x, dtype=torch.float64).reshape(-1)
    y = torch.as_tensor(y, dtype=torch.float64).reshape(-1)
    ok = (x > 0) & (y > 0) & torch.isfinite(x) & torch.isfinite(y)
    if int(ok.sum()) < 2:
        return float("nan")
    lx, ly = x[ok].log(), y[ok].log()
    lx = lx - lx.mean()
    den = float((lx * lx).sum())
    return float((lx * (ly - ly.mean())).sum()) / den if den > 0 else float("nan")


def semilog_slope(x, y) -> float:
    """Least-squares slope of ln y against x over the points with positive, finite y (an exponential decay
    exp(-r x) gives -r); NaN with fewer than two such points."""
    x = torch.as_tensor(x, dtype=torch.float64).reshape(-1)
    y = torch.as_tensor(y, dtype=torch.float64).reshape(-1)
    ok = (y > 0) & torch.isfinite(y) & torch.isfinite(x)
    if int(ok.sum()) < 2:
        return float("nan")
    xx, ly = x[ok] - x[ok].mean(), y[ok].log()
    den = float((xx * xx).sum())
    return float((xx * (ly - ly.mean())).sum()) / den if den > 0 else float("nan")
