"""Figures 1 and 2 of the B2S6 paper (spec E10): schematics, no data (matplotlib boxes and arrows).

- ``figure1``: the three units side by side: S4D (independent per-channel LTI units), S6 (one selective
  B, C, Delta shared by all channels), B2S6 (blockwise selective B, C, Delta plus a per-channel bias B_bias)
- ``figure2``: the eq. (5) probe N sigma(Gamma(M u)_L + theta); green marks linear parts, orange nonlinear
  ones (the paper's colour code)
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt

from ...report.plots import save

LINEAR, NONLINEAR, SHARED = "#b7e4b0", "#f9c78b", "#c6d8f0"


def _box(ax, x, y, w, h, text, color, fs=8):
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02", fc=color, ec="0.3", lw=0.8))
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=fs)


def _arrow(ax, p, q):
    ax.annotate("", q, p, arrowprops={"arrowstyle": "-|>", "color": "0.35", "lw": 0.8})


def _channels(ax, d: int = 4):
    for i in range(d):
        y = 0.78 - 0.18 * i
        ax.text(0.02, y + 0.05, f"$u^{{({i + 1})}}$", fontsize=8)
        _arrow(ax, (0.1, y + 0.06), (0.3, y + 0.06))
        _arrow(ax, (0.7, y + 0.06), (0.88, y + 0.06))
        ax.text(0.9, y + 0.05, f"$y^{{({i + 1})}}$", fontsize=8)


def figure1(spec: dict, out: Path) -> None:
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    s4d, s6, b2s6 = axes
    _channels(s4d)
    for i in range(4):
        _box(
            s4d,
            0.3,
            0.78 - 0.18 * i,
            0.4,
            0.12,
            rf"$\bar A^{{({i + 1})}}, \bar B^{{({i + 1})}}, \bar C^{{({i + 1})}}$",
            LINEAR,
        )
    s4d.set_title("S4D:\nindependent LTI units per channel", fontsize=9)
    _channels(s6)
    for i in range(4):
        _box(s6, 0.3, 0.78 - 0.18 * i, 0.4, 0.12, rf"$\Delta_k^{{({i + 1})}}$ scan", LINEAR)
    _box(s6, 0.25, 0.02, 0.5, 0.1, r"shared $B u_k$, $u_k^\top C$, $w \cdot u_k$", SHARED)
    s6.set_title("S6:\nB, C and the step logit shared by all channels", fontsize=9)
    _channels(b2s6)
    for j, y in enumerate((0.6, 0.24)):
        _box(b2s6, 0.27, y, 0.46, 0.3, "", SHARED)
        b2s6.text(
            0.5,
            y + 0.27,
            rf"block {j + 1}: $B_w^{{[{j + 1}]}}, C^{{[{j + 1}]}}, w^{{[{j + 1}]}}$",
            ha="center",
            fontsize=7,
        )
        for i in range(2):
            _box(b2s6, 0.32, y + 0.02 + 0.12 * i, 0.36, 0.09, r"scan $+\,B_{\mathrm{bias}}^{(i)}$", LINEAR, fs=7)
    b2s6.set_title("B2S6:\nblockwise selective units, per-channel bias", fontsize=9)
    for ax in axes:
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.axis("off")
    fig.suptitle("Figure 1 (schematic): S4D, S6 and B2S6 units", fontsize=10, y=1.04)
    save(fig, out / "figure1")


def figure2(spec: dict, out: Path) -> None:
    fig, ax = plt.subplots(figsize=(10, 2.6))
    steps = [
        (r"$u_1, \ldots, u_L$", "white"),
        (r"$M$ (encoder, per position)", LINEAR),
        (r"$\Gamma$: S4D / S6 / B2S6 (along the sequence)", LINEAR),
        (r"read step $L$, $+\,\theta$", LINEAR),
        (r"$\sigma$ (GELU)", NONLINEAR),
        (r"$N$ (decoder)", LINEAR),
    ]
    for i, (text, color) in enumerate(steps):
        _box(ax, 0.01 + 0.165 * i, 0.35, 0.14, 0.3, text, color, fs=8)
        if i:
            _arrow(ax, (0.01 + 0.165 * i - 0.025, 0.5), (0.01 + 0.165 * i, 0.5))
    ax.text(
        0.5,
        0.1,
        r"$\tilde G(u) = N\,\sigma(\Gamma(Mu_1, \ldots, Mu_L)_L + \theta)$  (eq. 5); green: linear, orange: nonlinear",
        ha="center",
        fontsize=9,
    )
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.axis("off")
    fig.suptitle("Figure 2 (schematic): the single-layer probe", fontsize=10)
    save(fig, out / "figure2")
