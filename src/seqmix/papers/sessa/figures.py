"""The Sessa paper's two figures, both schematics drawn from code (spec §3.5; no data, no CSV).

- ``figure1``: one-hop vs multi-hop routing over time nodes tau..t: the Transformer's direct edge tau -> t,
  Mamba's chain tau -> tau+1 -> ... -> t, Sessa's every forward edge j -> i (j < i), so many paths of
  every hop count (``routing_edges`` gives each panel's edges; ``count_paths`` the number of tau -> t paths)
- ``figure2``: the Sessa layer: LN -> Linear(D -> 2D) -> split(a, g) -> GELU(a) -> mixer [forward RoPE
  attention -> f; feedback attention (no PE, strict past) and gamma_t -> B_fb; solve (I - B_fb) s = f]
  -> s * g -> Linear(D -> D) -> + x (spec §2.1-2.2)
"""

from __future__ import annotations

from pathlib import Path

N_NODES = 5  # tau, tau+1, tau+2, tau+3, t = tau + 4
NODE_LABELS = (r"$\tau$", r"$\tau{+}1$", r"$\tau{+}2$", r"$\tau{+}3$", r"$t$")
PANELS = (
    ("transformer", "Transformer: one hop", "tab:blue"),
    ("mamba", "Mamba: a chain of one-step hops", "tab:red"),
    ("sessa", "Sessa: every forward edge (paths of 1 to 4 hops)", "tab:purple"),
)


def routing_edges(kind: str, n: int = N_NODES) -> list[tuple[int, int]]:
    """The edges (j, i), j < i, along which node j's content reaches node i in one layer of each mixer as
    Figure 1 draws it: nodes 0 = tau .. n-1 = t."""
    if kind == "transformer":
        return [(0, n - 1)]
    if kind == "mamba":
        return [(i, i + 1) for i in range(n - 1)]
    if kind == "sessa":
        return [(j, i) for i in range(n) for j in range(i)]
    raise ValueError(f"routing_edges: kind must be 'transformer', 'mamba' or 'sessa', got {kind!r}")


def count_paths(edges: list[tuple[int, int]], n: int = N_NODES) -> dict[int, int]:
    """Number of paths from node 0 to node n-1 by hop count: {hops: paths}."""
    ways = [dict() for _ in range(n)]  # ways[i][k]: paths 0 -> i with k hops
    ways[0] = {0: 1}
    for j, i in sorted(edges, key=lambda e: e[0]):  # sources in increasing order: ways[j] is final
        for k, c in ways[j].items():
            ways[i][k + 1] = ways[i].get(k + 1, 0) + c
    return dict(sorted(ways[n - 1].items()))


def figure1(spec: dict, out: Path) -> None:
    """Three panels over the nodes tau..t: each mixer's one-layer routing edges."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Circle, FancyArrowPatch

    from ...report.plots import save

    fig, axes = plt.subplots(3, 1, figsize=(7.5, 5.6))
    for ax, (kind, title, color) in zip(axes, PANELS, strict=True):
        for x, label in enumerate(NODE_LABELS):
            ax.add_patch(Circle((x, 0), 0.22, fc="white", ec="0.25", lw=1.4, zorder=3))
            ax.text(x, 0, label, ha="center", va="center", fontsize=10, zorder=4)
        for j, i in routing_edges(kind):
            rad = 0.0 if i - j == 1 else -0.25 - 0.05 * (i - j)  # longer edges arc higher
            ax.add_patch(
                FancyArrowPatch(
                    (j, 0),
                    (i, 0),
                    arrowstyle="-|>",
                    mutation_scale=11,
                    color=color,
                    lw=1.4,
                    connectionstyle=f"arc3,rad={rad}",
                    shrinkA=9,
                    shrinkB=9,
                    zorder=2,
                )
            )
        paths = count_paths(routing_edges(kind))
        shown = ", ".join(f"{p} of {h} hop{'s' * (h > 1)}" for h, p in paths.items())
        total = sum(paths.values())
        head = f"{total} path{'s' * (total > 1)} " + r"$\tau \to t$"
        ax.text(N_NODES - 1 + 0.4, -0.05, f"{head}:\n{shown}", fontsize=8)
        ax.set_title(title, fontsize=10, loc="left")
        ax.set_xlim(-0.4, N_NODES + 1.6)
        ax.set_ylim(-0.45, 1.25)
        ax.set_aspect("equal")
        ax.axis("off")
    fig.suptitle(r"How the content of token $\tau$ reaches token $t$ within one layer", fontsize=11)
    save(fig, out / "figure1")


def _box(ax, x, y, w, h, text, fc="white", ec="0.25", fontsize=8.5, **kw):
    """A rounded box centred at (x, y); returns its (left, right, bottom, top) edges."""
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(
        FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.04", fc=fc, ec=ec, lw=1.2, zorder=2, **kw)
    )
    ax.text(x, y, text, ha="center", va="center", fontsize=fontsize, zorder=3)
    return x - w / 2, x + w / 2, y - h / 2, y + h / 2


def _arrow(ax, points, color="0.2", text=None, text_at=0.5, text_dy=0.14):
    """A poly-line through ``points`` with an arrow head at the end, optionally labelled on its last leg."""
    xs, ys = zip(*points, strict=True)
    ax.plot(xs[:-1], ys[:-1], color=color, lw=1.2, zorder=1)
    ax.annotate("", xy=points[-1], xytext=points[-2], arrowprops={"arrowstyle": "-|>", "color": color, "lw": 1.2})
    if text:
        (x0, y0), (x1, y1) = points[-2], points[-1]
        ax.text(x0 + text_at * (x1 - x0), y0 + text_at * (y1 - y0) + text_dy, text, ha="center", fontsize=8)


def _mixer(ax, y0: float) -> tuple[float, float]:
    """The Sessa mixer's box (x 6.9..14.3) around its two branches and the solve; returns the x positions where
    a_bar enters and s leaves, both at height y0."""
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(
        FancyBboxPatch((6.9, y0 - 2.0), 7.4, 3.3, boxstyle="round,pad=0.05", fc="#f4f0fa", ec="tab:purple", lw=1.4)
    )
    ax.text(7.05, y0 + 1.02, "Sessa mixer", fontsize=9, color="tab:purple", weight="bold")
    fwd = _box(
        ax,
        9.2,
        y0 + 0.55,
        3.2,
        0.7,
        "forward attention $\\to f$\ncausal, RoPE on $q_f, k_f$, $H$ heads",
        fc="#e8f0fb",
        fontsize=8,
    )
    fb = _box(ax, 9.2, y0 - 0.7, 3.2, 0.75, "feedback attention $\\alpha_{fb}$\nno PE, strict past $j<t$", fc="#fbe8e8")
    gam = _box(ax, 9.2, y0 - 1.6, 3.2, 0.5, r"$\gamma_t=\gamma_{max}\tanh(b + \bar a_t\cdot w)$", fc="#fbe8e8")
    bfb = _box(ax, 11.75, y0 - 1.15, 1.3, 0.6, r"$B_{fb}=\gamma_t\,\alpha_{fb}$", fc="#fbe8e8")
    solve = _box(ax, 13.3, y0, 1.5, 0.8, "solve\n" + r"$(I-B_{fb})\,s=f$", fc="#efe6f7")
    x_in = 7.25
    for box in (fwd, fb, gam):  # a_bar fans out to the three projections
        _arrow(ax, [(x_in, y0), (x_in, (box[2] + box[3]) / 2), (box[0], (box[2] + box[3]) / 2)])
    _arrow(
        ax,
        [(fwd[1], y0 + 0.55), (12.2, y0 + 0.55), (12.2, y0 + 0.2), (solve[0], y0 + 0.2)],
    )
    ax.text(11.5, y0 + 0.62, "$f$", ha="center", fontsize=9)
    _arrow(ax, [(fb[1], y0 - 0.7), (bfb[0], y0 - 0.95)])
    _arrow(ax, [(gam[1], y0 - 1.6), (bfb[0], y0 - 1.35)])
    _arrow(ax, [(bfb[1], y0 - 1.15), (13.3, y0 - 1.15), (13.3, solve[2])])
    return x_in, solve[1]


def figure2(spec: dict, out: Path) -> None:
    """The Sessa layer's block diagram (spec §2.1-2.2)."""
    import matplotlib.pyplot as plt

    from ...report.plots import save

    fig, ax = plt.subplots(figsize=(13, 4.6))
    y = 2.4
    ax.text(0.0, y, "$x$", ha="center", va="center", fontsize=12)
    ln = _box(ax, 1.1, y, 0.9, 0.6, "LN")
    w_in = _box(ax, 2.75, y, 1.6, 0.6, "Linear\n$D \\to 2D$")
    split = _box(ax, 4.35, y, 0.9, 0.6, "split")
    gelu = _box(ax, 5.85, y, 0.9, 0.6, "GELU")
    _arrow(ax, [(0.2, y), (ln[0], y)])
    _arrow(ax, [(ln[1], y), (w_in[0], y)])
    _arrow(ax, [(w_in[1], y), (split[0], y)])
    _arrow(ax, [(split[1], y), (gelu[0], y)], text="$a$")
    x_in, x_out = _mixer(ax, y)
    _arrow(ax, [(gelu[1], y), (x_in, y)], text=r"$\bar a$")
    mul = _box(ax, 15.2, y, 0.5, 0.5, r"$\odot$", fontsize=12)
    _arrow(ax, [(x_out, y), (mul[0], y)], text="$s$")
    _arrow(ax, [(4.35, split[3]), (4.35, 4.0), (15.2, 4.0), (15.2, mul[3])], text="$g$ (linear gate)", text_at=0.0)
    w_out = _box(ax, 16.5, y, 1.4, 0.6, "Linear\n$D \\to D$")
    add = _box(ax, 17.8, y, 0.5, 0.5, "$+$", fontsize=12)
    _arrow(ax, [(mul[1], y), (w_out[0], y)])
    _arrow(ax, [(w_out[1], y), (add[0], y)])
    _arrow(ax, [(0.45, y), (0.45, 4.55), (17.8, 4.55), (17.8, add[3])], text="residual $x$", text_at=0.5, text_dy=0.1)
    _arrow(ax, [(add[1], y), (18.7, y)])
    ax.text(18.85, y, "$y$", ha="left", va="center", fontsize=12)
    ax.text(
        9.4,
        -0.05,
        "no separate MLP: the block itself is the gated MLP; $B_{fb}$ is one scalar $T\\times T$ matrix shared by "
        "all $D$ features",
        ha="center",
        fontsize=8,
        color="0.3",
    )
    ax.set_xlim(-0.3, 19.3)
    ax.set_ylim(-0.3, 4.9)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title("The Sessa layer (pre-LN; paper eqs. 9-22)", fontsize=11)
    save(fig, out / "figure2")
