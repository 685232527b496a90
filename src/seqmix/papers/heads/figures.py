"""The heads paper's figures, one function per figure, each beside the CSV it is drawn from.

- ``figure1``: the four n x n interaction heatmaps (schematic; spec §3.2 parameters from ``analysis.figure1``)
- ``figure2``: the gradient-path schematic (spec §3.3)
- ``figure3_left``: Exp. I test MSE vs H, median and min-max band over seeds, MSE*(H) overlaid
- ``figure3_right``: singular values of the trained k = 4 students (H = 4 as in the paper, H = 9 as the
  spec's extension), from the ``spectrum`` analysis
- ``figure4``: Exp. II, ||dy_{T-1}/dx_0|| vs T at initialisation (figure4.py)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...report.tables import write_csv

# k = 8 is blue in the paper; orange and green for k = 4, 2 are the spec's choice (U-I-11)
K_COLORS = {2: "tab:green", 4: "tab:orange", 8: "tab:blue"}
FLOAT32_EPS = float(np.finfo(np.float32).eps)


def figure1_matrices(st: dict) -> dict[str, np.ndarray]:
    """The four n x n weight matrices A (Y = V X A^T) of Figure 1: identity, banded Toeplitz (``kernel``),
    causal a^(i-j), and row-softmax(Q K^T / sqrt(d_k)) of X ~ N(0, 1)^(n x d_k), W ~ N(0, 1/d_k), non-causal."""
    n = st["n"]
    idx = np.arange(n)
    lag = idx[:, None] - idx[None, :]
    kernel = np.array(st["kernel"])
    r = len(kernel) // 2
    cnn = np.where(np.abs(lag) <= r, kernel[np.clip(lag + r, 0, 2 * r)], 0.0)
    ssm = np.where(lag >= 0, st["a"] ** np.maximum(lag, 0), 0.0)
    rng = np.random.default_rng(st["seed"])
    dk = st["d_k"]
    X = rng.standard_normal((n, dk))
    W_Q, W_K = (rng.standard_normal((dk, dk)) / np.sqrt(dk) for _ in range(2))
    S = (X @ W_Q.T) @ (X @ W_K.T).T / np.sqrt(dk)
    att = np.exp(S - S.max(axis=1, keepdims=True))
    att /= att.sum(axis=1, keepdims=True)
    return {
        "MLP (Identity)": np.eye(n),
        "CNN (Banded/Toeplitz)": cnn,
        "RNN / SSM (Causal History)": ssm,
        "Attention (Input-Dependent)": att,
    }


def figure1(spec: dict, out: Path) -> None:
    import matplotlib.pyplot as plt

    from ...report.plots import save

    st = spec["analysis"]["figure1"]
    fig, axes = plt.subplots(1, 4, figsize=(12, 3.3))
    cmap = plt.get_cmap("Blues").copy()
    cmap.set_bad("white")
    rows = []
    for ax, (title, M) in zip(axes, figure1_matrices(st).items()):
        ax.imshow(np.ma.masked_where(M == 0, M), cmap=cmap, vmin=0, vmax=M.max(), interpolation="nearest")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("input position j", fontsize=8)
        ax.set_xticks([])
        ax.set_yticks([])
        rows += [{"panel": title, "i": i + 1, "j": j + 1, "weight": float(v)} for (i, j), v in np.ndenumerate(M)]
    axes[0].set_ylabel("output position i", fontsize=8)
    fig.suptitle(f"Interaction structure A(X) of y = V X A(X)^T (schematic; n = {st['n']})", fontsize=10)
    save(fig, out / "figure1")
    write_csv(out / "figure1.csv", rows)


def figure2(spec: dict, out: Path) -> None:
    """The gradient-path schematic: the RNN's chain through A^T (top), attention's one-step highway (bottom)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Circle, FancyArrowPatch

    from ...report.plots import save

    red, blue = "tab:red", "tab:blue"
    fig, (top, bot) = plt.subplots(2, 1, figsize=(8, 5.2))
    labels = ["1", "2", "3", "T-1", "T"]
    xs = np.array([0.0, 1.5, 3.0, 5.5, 7.0])

    def node(ax, x, y, text, color):
        ax.add_patch(Circle((x, y), 0.32, fc="white", ec=color, lw=1.6, zorder=3))
        ax.text(x, y, text, ha="center", va="center", fontsize=10, zorder=4)

    def arrow(ax, p, q, color, rad=0.0, lw=1.5, style="-|>"):
        ax.add_patch(
            FancyArrowPatch(
                p,
                q,
                arrowstyle=style,
                mutation_scale=12,
                color=color,
                lw=lw,
                connectionstyle=f"arc3,rad={rad}",
                shrinkA=11,
                shrinkB=11,
                zorder=2,
            )
        )

    for x, lab in zip(xs, labels):
        node(top, x, 0, f"$h_{{{lab}}}$", "0.3")
    for a, b in zip(xs[:-1], xs[1:]):
        if b - a > 2:
            top.text((a + b) / 2, 0, "…", ha="center", va="center", fontsize=14)
            continue
        arrow(top, (a, 0), (b, 0), "0.6")
        arrow(top, (b, 0.05), (a, 0.05), red, rad=0.5)
        top.text((a + b) / 2, 0.62, r"$\times A^{\top}$", color=red, ha="center", fontsize=9)
    top.text(xs[-1] + 0.8, 0, r"$\partial \mathcal{L}/\partial h_T$", va="center", fontsize=9)
    top.text(
        3.5,
        -0.85,
        r"path length $O(n)$: $\|\partial y_T/\partial x_1\| \leq \|C\|\,\|B\|\,\|A\|^{T-1}$"
        " (exponential decay)",
        ha="center",
        color=red,
        fontsize=9,
    )
    top.set_title("RNN Gradient Path (Sequential)", fontsize=11)
    node(bot, 3.5, 1.2, "$y_T$", blue)
    for x, lab in zip(xs, labels):
        node(bot, x, -0.4, f"$x_{{{lab}}}$", "0.3")
        arrow(bot, (x, -0.4), (3.5, 1.2), blue)
    bot.text(
        3.5,
        -1.25,
        r"one step from every $x_t$: $\partial y_T/\partial x_t = \alpha_{Tt} V + \ldots$"
        r" ($O(1)$ gradient highway)",
        ha="center",
        color=blue,
        fontsize=9,
    )
    bot.set_title("Attention Gradient Path (Direct)", fontsize=11)
    for ax, (lo, hi) in ((top, (-1.2, 1.1)), (bot, (-1.6, 1.7))):
        ax.set_xlim(-0.8, 8.6)
        ax.set_ylim(lo, hi)
        ax.set_aspect("equal")
        ax.axis("off")
    save(fig, out / "figure2")


def figure3_left(spec: dict, out: Path) -> None:
    import matplotlib.pyplot as plt

    from ...report.plots import legend_outside, save

    df = pd.read_csv(spec["inputs"]["summaries"]["exp1"])
    theory_df = pd.read_csv(next(p for p in spec["inputs"]["artefacts"]["theory"] if p.endswith("summary.csv")))
    df["k"] = df["variant"].str.slice(1).astype(int)
    df["H"] = df["sweep_value"].astype(int)
    n = int(next(iter(spec["resolved"]["exp1"].values()))["task"]["n"])
    fig, ax = plt.subplots(figsize=(5.2, 3.8))
    rows = []
    for k, g in sorted(df.groupby("k")):
        stats = g.groupby("H")["test_mse"].agg(["median", "min", "max", "count"]).reset_index()
        color = K_COLORS.get(k)
        ax.plot(stats["H"], stats["median"], "o-", color=color, label=f"k = {k}", ms=4)
        ax.fill_between(stats["H"], stats["min"], stats["max"], color=color, alpha=0.2, lw=0)
        opt = theory_df[(theory_df.quantity == "mse_opt") & (theory_df.k == k) & (theory_df.n == n)]
        opt = opt[opt["H"].astype(int).between(1, k - 1)]
        ax.plot(opt["H"].astype(int), opt["value"], "--", color=color, lw=1, alpha=0.8)
        ax.axvline(k, color=color, ls=":", lw=0.8)
        rows += [
            {
                "k": k,
                "H": int(r["H"]),
                "median": r["median"],
                "min": r["min"],
                "max": r["max"],
                "seeds": int(r["count"]),
            }
            for _, r in stats.iterrows()
        ]
    ax.plot([], [], "k--", lw=1, label="Eckart–Young optimum (H < k)")
    ax.set_yscale("log")
    ax.set_xticks(range(1, int(df["H"].max()) + 1))
    ax.set_xlabel("number of heads H")
    ax.set_ylabel("test MSE")
    ax.set_title(f"Exp. I: rank-k teacher, H-head student (n = {n}, {df['seed'].nunique()} seeds)", fontsize=9)
    ax.grid(alpha=0.3, which="both", lw=0.4)
    legend_outside(ax, fontsize=8)
    save(fig, out / "figure3_left")
    write_csv(out / "figure3_left.csv", rows)


def figure3_right(spec: dict, out: Path) -> None:
    import matplotlib.pyplot as plt

    from ...report.plots import legend_outside, save

    df = pd.read_csv(spec["inputs"]["artefacts"]["spectrum"][0])
    teacher = df[df.source == "teacher"].sort_values("index")
    students = df[df.source == "student"].astype({"H": int, "seed": int})
    seed0 = min(students["seed"])
    heads = sorted(students["H"].unique())
    k, n = int(teacher["k"].iloc[0]), int(teacher["n"].iloc[0])
    fig, axes = plt.subplots(1, len(heads), figsize=(4.6 * len(heads), 3.8), sharey=True, squeeze=False)
    floor = 1e-18  # the teacher's zero singular values (round-off, ~1e-16) are drawn at the floor
    plotted = []
    for ax, H in zip(axes[0], heads):
        st = students[(students.H == H) & (students.seed == seed0)].sort_values("index")
        others = students[(students.H == H) & (students.seed != seed0)]
        if len(others):
            ax.plot(
                others["index"],
                others["sigma_rel"].clip(lower=floor),
                ".",
                color="0.7",
                ms=3,
                label=f"other seeds ({others['seed'].nunique()})",
            )
        ax.plot(
            st["index"],
            st["sigma_rel"].clip(lower=floor),
            "o",
            color="tab:orange",
            ms=6,
            label=f"learned (H = {H}, seed {seed0})",
        )
        ax.plot(teacher["index"], teacher["sigma_rel"].clip(lower=floor), "kx", ms=6, label=f"teacher (rank {k})")
        ax.axhline(FLOAT32_EPS, color="0.4", ls="--", lw=1, label="float32 eps")
        ax.axvline(k + 0.5, color="0.8", ls=":", lw=1)
        ax.set_yscale("log")
        ax.set_xlabel(r"index $\ell$")
        ax.set_xticks(range(1, len(teacher) + 1))
        ax.tick_params(axis="x", labelsize=7)
        ax.set_title(f"k = {k}, H = {H} ({'as in the paper' if H == k else 'extension (spec §3.5)'})", fontsize=9)
        ax.grid(alpha=0.3, which="both", lw=0.4)
        plotted += st.to_dict("records")
    axes[0][0].set_ylabel(r"$\sigma_\ell / \sigma_1$ of the learned interaction operator")
    fig.suptitle(
        r"Exp. I: singular values of the pair unfolding of $K_{ij} = \sum_h \alpha_{ij}^{(h)} V^{(h)}$"
        f" (float64; n = {n}; zeros drawn at {floor:g})",
        fontsize=9,
        y=1.04,
    )
    for ax in axes[0]:
        legend_outside(ax, below=True)
    save(fig, out / "figure3_right")
    write_csv(out / "figure3_right.csv", plotted + teacher.astype(object).fillna("").to_dict("records"))
