"""Sizes of the rotations paper's theory checks and of E6 (rotations spec §4, E6).

``TINY`` holds the small defaults (every check at these sizes runs in a few seconds on one core); the spec's
sizes (N = 10^5 samples, L up to 65,536, B = 48) belong in the paper config's ``analysis:`` block under
``scales: {cpu: ..., paper: ...}`` (config/papers/rotations.yaml). The grids that define a check (the
spec's a, eps, blocks, lambdas) are the spec's at every scale: only sample counts and lengths shrink.
A key added here must be added to analysis.schema.yaml beside this file (the config's types; a test compares
the two key trees).
"""

from __future__ import annotations

import copy
import math

TINY: dict = {
    "seed": 0,
    "t1": {"a": [0.5, 1.0, 2.0, math.pi], "m": [1, 2, 3], "n_max": 50, "samples": 2000, "eps": [0.1, 0.01, 0.001],
           "d_head": 96, "blocks": [0, 1, 2, 4, 8, 12, 16, 20, 24, 32, 40, 47], "block_eps": [0.01, 0.1],
           "lengths": [512, 8192, 65536], "score_n": [1, 16, 64, 512, 8192, 65536], "score_mc_n_max": 16,
           "score_mc_samples": 500},
    "t2": {"samples": 2000, "d": 96, "aniso_last_variance": 0.01, "givens_a": 1.0,
           "so3_theta": [math.pi / 2, 2 * math.pi / 3], "torus_lambda": [1.0, 2.0, 3.0, 4.0], "torus_a": 1.0,
           "product_n_max": 20, "product_d": 8, "product_samples": 300},
    "t3": {"samples": 500, "d": [8, 16], "det_n": [1, 2, 5], "n_rel": [0.25, 0.5, 1, 2], "tail_d": [64, 96],
           "tail_s": [0.3, 0.5], "near_d": 16, "near_scale": 0.02, "near_trials": 10},
    "t4": {"samples": 5000, "blocks": [48, 32], "s": [0.5, 0.7, 0.9], "eps_sc": 0.01, "walk_a": 2.0, "walk_n": 6,
           "union_m": [512, 65536], "near_delta": 0.3},
    "t5": {"m_max": 65536, "k_near": 1, "rho_star": 0.1, "a_star": 0.01, "g": 0.4, "m_sim": 2048, "trials": 10},
    "t6": {"lam": [2.0, 5.0, 8.0], "k": [1, 8], "m": [511, 8191, 65535], "m_sim": [511, 2047], "k_sim": 8,
           "trials": 10, "d": 8, "delta": 3.0, "alibi_slope": 0.03125, "alibi_window": 64,
           "alibi_L": [512, 8192, 65536]},
    "t7": {"d": 96, "m_keys": 8, "samples": 1000, "c0": 1.0, "sigma_w": 1.0, "rho": 1.0, "window": 64,
           "d_head": 96, "dense_L": 256, "lengths": [512, 65536], "blocks": [0, 8, 16, 24, 47], "lam": 10.0,
           "walk_mc_L": 256, "walk_mc_samples": 500},
    "t8": {"betas": [0.5, 0.84, 0.99], "windows": [10, 64], "blocks": 48, "eta": 0.05, "lengths": [512],
           "trials": 10, "rho": 1.0, "profiles": ["uniform", "geometric"], "geometric_ratio": 0.99},
    "t9": {"blocks": 48, "lam": 10.0, "beta": 0.5, "window": 10, "eta": 0.05, "lengths": [512, 2048], "trials": 5,
           "sandwich_max_L": 512, "worked": [[0.1, 0.01], [0.1, 0.1 / 256], [0.3, 0.3 / 256]]},
    "t10": {"m": 10000, "eps": 0.1, "trials": 100},
    "t11": {"sigma": [0.02, 0.1], "n_sig": 16, "blocks": 48, "near": 16, "eta": 0.05, "rho_star": 0.1,
            "trials": 100, "gain_d": 16, "gain_rank": 4, "gain_near": 8, "gain_scale": 0.02, "gain_trials": 10},
    "t12": {"m": [256, 1024, 4096, 16384, 65536], "lam": 5.0},
    "t13": {"harmonics": 5, "kappa": [0.5, 2.0, 8.0], "floor": [0.1, 0.5], "fisher_draws": 3, "fisher_scale": 1.0},
    "e6": {"lams": [5.0, 10.0, 20.0], "lengths": [512, 65536], "blocks": 48, "window": 64, "draws": 3,
           "alibi_slope": 0.03125},
}  # fmt: skip

FIGURE_TINY: dict = {
    "seed": 0,
    "harmonic_a": [0.5, 1.0, 2.0],
    "harmonic_n_max": 60,
    "harmonic_samples": 2000,
    "eps": 0.01,
    "lam": 10.0,
    "lengths": [128, 512, 2048, 8192],
    "blocks": 48,
    "window": 64,
    "draws": 2,
    "alibi_slope": 0.03125,
    "same_path": {"beta": 0.5, "window": 10, "eta": 0.05, "trials": 3},
}


def merged(defaults: dict, given: dict | None, where: str) -> dict:
    """``given`` over a deep copy of ``defaults``, one level of nested dicts deep; an unknown key is an error
    naming the key path (a typo must not silently fall back to a default)."""
    out = copy.deepcopy(defaults)
    for key, value in (given or {}).items():
        if key not in out:
            raise ValueError(f"{where}.{key}: unknown setting (expected one of {sorted(out)})")
        if isinstance(out[key], dict) and not isinstance(value, dict):
            raise ValueError(f"{where}.{key}: expected a mapping of settings, got {value!r}")
        if isinstance(out[key], dict):
            out[key] = merged(out[key], value, f"{where}.{key}")
        else:
            out[key] = value
    return out
