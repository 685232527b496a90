"""A float64 numpy Sessa block as the theory states it (sessa spec §2.1-2.2 with Norm = Id, one forward head,
no RoPE): the object of the block stability bound (T2, Lemma B.3 / Prop. 25) and of the positional-code
construction (T6 / D3, Cor. I.8). Written from the equations, independent of seqmix.mixers::

    (a, g) = x W_in + b_in ;  a_bar = GELU(a)
    f_t    = sum_{j<=t} softmax_j(<q_f[t], k_f[j]>/sqrt D) v_j          (q_f, k_f, v affine in a_bar)
    alpha_fb[t, j] = softmax_{j<t}(<q_b[t], k_b[j]>/sqrt D),  gamma_t = tanh(<a_bar_t, w_gamma> + b_gamma)
    s      = (I - B)^{-1} f,  B[t, j] = gamma_t alpha_fb[t, j]
    y      = x + (s * g) W_out + b_out
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import erf

from .solve import solve

NAMES = ("W_in", "b_in", "W_qf", "W_kf", "W_v", "b_v", "W_qb", "W_kb", "w_gamma", "b_gamma", "W_out", "b_out")


def gelu(z: np.ndarray) -> np.ndarray:
    return 0.5 * z * (1 + erf(z / math.sqrt(2)))


def random_block(d: int, rng: np.random.Generator, scale: float = 1.0) -> dict:
    """Random weights (entries N(0, scale^2 / d)), biases N(0, scale^2 / d)."""
    shapes = {
        "W_in": (d, 2 * d), "b_in": (2 * d,), "W_qf": (d, d), "W_kf": (d, d), "W_v": (d, d), "b_v": (d,),
        "W_qb": (d, d), "W_kb": (d, d), "w_gamma": (d,), "b_gamma": (), "W_out": (d, d), "b_out": (d,),
    }  # fmt: skip
    return {k: rng.standard_normal(s) * scale / math.sqrt(d) for k, s in shapes.items()}


def _softmax_rows(logits: np.ndarray, mask: np.ndarray) -> np.ndarray:
    z = np.where(mask, logits, -np.inf)
    zmax = np.where(mask.any(axis=1, keepdims=True), z.max(axis=1, keepdims=True), 0.0)
    w = np.where(mask, np.exp(z - zmax), 0.0)
    rows = w.sum(axis=1, keepdims=True)
    return np.divide(w, rows, out=np.zeros_like(w), where=rows > 0)


def block_forward(p: dict, x: np.ndarray) -> dict:
    """x: (T, D) -> {'y': (T, D), 'f', 's', 'g': (T, D), 'gamma': (T,), 'alpha_fb': (T, T)}."""
    T, d = x.shape
    ag = x @ p["W_in"] + p["b_in"]
    a_bar, g = gelu(ag[:, :d]), ag[:, d:]
    causal = np.tril(np.ones((T, T), dtype=bool))
    alpha_f = _softmax_rows((a_bar @ p["W_qf"]) @ (a_bar @ p["W_kf"]).T / math.sqrt(d), causal)
    f = alpha_f @ (a_bar @ p["W_v"] + p["b_v"])
    alpha_fb = _softmax_rows((a_bar @ p["W_qb"]) @ (a_bar @ p["W_kb"]).T / math.sqrt(d), np.tril(causal, -1))
    gamma = np.tanh(a_bar @ p["w_gamma"] + p["b_gamma"])
    s = solve(gamma[:, None] * alpha_fb, f)
    y = x + (s * g) @ p["W_out"] + p["b_out"]
    return {"y": y, "f": f, "s": s, "g": g, "gamma": gamma, "alpha_fb": alpha_fb}


def block_bound(p: dict, radius: float) -> dict:
    """Lemma B.3 / Prop. 25 for inputs with ||x_t|| <= R: ||G(x)||_{inf,2} <= R + ||W_out|| F_R G_R / (1 -
    rho_R) + ||b_out||, with the constants of this block (spectral norms; |GELU(z)| <= |z|):
    A_R = ||W_a|| R + ||b_a|| bounds ||a_bar_t||, F_R = ||W_v|| A_R + ||b_v|| bounds ||f_t|| (a convex
    combination of v), G_R = ||W_g|| R + ||b_g|| bounds ||g_t||, rho_R = tanh(c_gamma + L_gamma R) with
    c_gamma = |b_gamma| and L_gamma R = ||w_gamma|| A_R. -> the constants and the bound."""
    d = p["W_out"].shape[0]
    op = lambda m: float(np.linalg.norm(m, 2))
    a_r = op(p["W_in"][:, :d]) * radius + float(np.linalg.norm(p["b_in"][:d]))
    f_r = op(p["W_v"]) * a_r + float(np.linalg.norm(p["b_v"]))
    g_r = op(p["W_in"][:, d:]) * radius + float(np.linalg.norm(p["b_in"][d:]))
    rho_r = math.tanh(abs(float(p["b_gamma"])) + float(np.linalg.norm(p["w_gamma"])) * a_r)
    bound = radius + op(p["W_out"]) * f_r * g_r / (1 - rho_r) + float(np.linalg.norm(p["b_out"]))
    return {"F_R": f_r, "G_R": g_r, "rho_R": rho_r, "bound": bound}


def positional_block(d: int, gamma: float, lam: float, u: np.ndarray) -> dict:
    """Cor. I.8's construction: W_in = 0 with b_in giving a constant a_bar and a unit gate; forward and
    feedback q/k = 0 (uniform attentions); w_gamma = 0, b_gamma = artanh(gamma); v = lam u; W_out = I,
    b_out = 0. Its output is x_t + lam c_t u. u: (D,) unit."""
    p = {k: np.zeros_like(v) for k, v in random_block(d, np.random.default_rng(0)).items()}
    p["b_in"] = np.concatenate([np.ones(d), np.ones(d)])  # a_bar = GELU(1), g = 1
    p["b_v"] = lam * u
    p["b_gamma"] = np.array(math.atanh(gamma))
    p["W_out"] = np.eye(d)
    return p
