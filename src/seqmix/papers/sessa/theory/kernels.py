"""Influence kernels of the Sessa paper's theory, float64 numpy (sessa spec §2.7, §3.6 D1/D5, §4 T9-T13).

One-layer kernels as functions of the lag (attention 1/(t+1), SSM exp(-lambda c l), the Sessa solve), and
deep stacks: the k-fold positive-lag convolution of n^{-beta} (Lemma G.1), powers of the harmonic kernel
(Lemma H.1), stacks of macro-layers I + a K applied to an impulse (Thm. 12, Cor. 4.8) and the
horizon-uniform deep envelopes of Cor. 4.7. Every stack is applied in O(T) per layer (a cumulative sum or a
one-step recursion), never as a dense T x T power, so lags up to 4096 cost nothing.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.signal import fftconvolve
from scipy.special import comb


def power_law_convolution(beta: float, k: int, n_max: int) -> np.ndarray:
    """Lemma G.1: the k-fold positive-lag convolution of n^{-beta}, (n >= 1; index 0 is 0), by direct
    O(n^2) convolution (exact sums, no FFT round-off). -> (n_max + 1,), ~ n^{k(1-beta)-1} for n >= k."""
    a = np.zeros(n_max + 1)
    a[1:] = np.arange(1, n_max + 1, dtype=float) ** (-beta)
    out = a.copy()
    for _ in range(k - 1):
        out = np.convolve(out, a)[: n_max + 1]
    return out


def lemma_b6_sum(tau: int, beta: float, lag_max: int) -> np.ndarray:
    """Lemma B.6's left side S(l) = sum_{k=tau}^{tau+l-1} (tau+l-k)^{-beta} / (k+1), l = 1..lag_max: a
    convolution of m^{-beta} with 1/(tau+j+1) (FFT, relative round-off ~1e-15). -> (lag_max,)."""
    m = np.arange(1, lag_max + 1, dtype=float)
    return fftconvolve(m ** (-beta), 1.0 / (tau + np.arange(lag_max, dtype=float) + 1.0))[:lag_max]


def lemma_b6_bound(lags: np.ndarray, beta: float) -> np.ndarray:
    """C_beta l^{-beta} (1 + log(1 + l)), C_beta = 2^beta + 2^beta / (1 - beta)."""
    lags = np.asarray(lags, dtype=float)
    c_beta = 2**beta + 2**beta / (1 - beta)
    return c_beta * lags ** (-beta) * (1 + np.log1p(lags))


# ----------------------------------------------------------------------------- macro-layer stacks (T10, T13, D5)


def _strict_past_sum(v: np.ndarray) -> np.ndarray:
    """sum_{j<i} v_j for every i."""
    return np.concatenate([[0.0], np.cumsum(v)[:-1]])


def apply_power_kernel(v: np.ndarray, beta: float) -> np.ndarray:
    """(K v)_i with K[i, j] = (i+1)^{-beta} 1[j < i] (the macro-layer kernel of Thm. 12)."""
    return (np.arange(v.size) + 1.0) ** (-beta) * _strict_past_sum(v)


def apply_harmonic(v: np.ndarray) -> np.ndarray:
    """(H v)_t with H(t, tau) = 1[tau < t] / (t + 1) (Lemma H.1's kernel; uniform causal attention)."""
    return _strict_past_sum(v) / (np.arange(v.size) + 1.0)


def apply_exponential(v: np.ndarray, c: float) -> np.ndarray:
    """(E v)_t = sum_{tau<t} e^{-c (t - tau)} v_tau (the Mamba kernel), by the recursion r_t = e^{-c}(r_{t-1} +
    v_{t-1})."""
    decay, out, r = math.exp(-c), np.zeros_like(v), 0.0
    for t in range(1, v.size):
        r = decay * (r + v[t - 1])
        out[t] = r
    return out


def stack_transport(apply, v0: np.ndarray, k: int, a: float = 1.0) -> np.ndarray:
    """(I + a K)^k v0 for a kernel given as ``apply(v) = K v``: k residual macro-layers. v0: (T,) -> (T,)."""
    v = v0.copy()
    for _ in range(k):
        v = v + a * apply(v)
    return v


def impulse(T: int, at: int = 0) -> np.ndarray:
    v = np.zeros(T)
    v[at] = 1.0
    return v


def harmonic_power_column(k: int, T: int, tau: int = 0) -> np.ndarray:
    """(H^k)(t, tau) for t = 0..T-1 (k applications of H to e_tau)."""
    v = impulse(T, tau)
    for _ in range(k):
        v = apply_harmonic(v)
    return v


def lemma_h1_bound(t: np.ndarray, k: int) -> np.ndarray:
    """Lemma H.1: H_t^{k-1} / ((t+1) (k-1)!), H_t = sum_{m=1}^t 1/m (H_0 = 0)."""
    t = np.asarray(t, dtype=int)
    harmonic = np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, t.max() + 1))])[t]
    return harmonic ** (k - 1) / ((t + 1.0) * math.factorial(k - 1))


def count_paths_brute(lag: int, k: int) -> int:
    """The number of k-hop increasing paths over a lag l (Prop. 33), by enumerating the k - 1 intermediate
    times strictly between the ends."""
    return sum(1 for _ in itertools.combinations(range(1, lag), k - 1))


def count_paths_matrix(lag: int, k: int) -> int:
    """The same count as (N^k)[l, 0] of the strictly lower all-ones N, by repeated summation."""
    v = impulse(lag + 1)
    for _ in range(k):
        v = _strict_past_sum(v)
    return int(round(v[lag]))


def paths_closed_form(lag: int, k: int) -> int:
    """Prop. 33: C(l - 1, k - 1)."""
    return int(comb(lag - 1, k - 1, exact=True))


# ----------------------------------------------------------------------------- deep envelopes (T12)


def envelope_transformer(lags: np.ndarray, depth: int) -> np.ndarray:
    """Cor. 4.7: (log(1+l))^{N-1} / (1+l)."""
    lags = np.asarray(lags, dtype=float)
    return np.log1p(lags) ** (depth - 1) / (1 + lags)


def envelope_mamba(lags: np.ndarray, depth: int, c: float) -> np.ndarray:
    """Cor. 4.7: (1+l)^{N-1} e^{-c l}."""
    lags = np.asarray(lags, dtype=float)
    return (1 + lags) ** (depth - 1) * np.exp(-c * lags)


def envelope_sessa_log(lags: np.ndarray, depth: int, beta: float) -> np.ndarray:
    """log of Cor. 4.7's Sessa envelope sum_{k=1}^N l^{k(1-beta)-1} (1+log(1+l))^k (in logs: lags up to
    1e300 do not overflow)."""
    lags = np.asarray(lags, dtype=float)
    terms = [(k * (1 - beta) - 1) * np.log(lags) + k * np.log1p(np.log1p(lags)) for k in range(1, depth + 1)]
    return np.logaddexp.reduce(np.stack(terms), axis=0)


def envelope_far_slope(depth: int, beta: float, lag: float) -> float:
    """The local log-log slope of the Sessa envelope at ``lag`` (central difference in log l): negative far
    out iff the envelope tends to 0, i.e. iff N (1 - beta) < 1 (the log factors decide the edge case, where it
    grows)."""
    h = 1e-3
    lo, hi = envelope_sessa_log(np.array([lag * math.exp(-h), lag * math.exp(h)]), depth, beta)
    return float((hi - lo) / (2 * h))
