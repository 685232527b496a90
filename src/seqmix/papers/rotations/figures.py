"""Figure 1 of the rotations paper: the dependency graph of its formal results (rotations spec E4).

The node labels are the paper's (Figure 1 of the seed text); the edges are reconstructed from the Appendix A
text (the figure's arrows are lost with the HTML), every one flagged ``inferred`` in ``figure1.csv``. Solid
edges are formal use, dashed ones motivation (the paper's legend). Drawn with matplotlib on a fixed layout:
score-side chains on the top left and centre, the lower-bound chain on the right, value-side and near-signal
chains at the bottom (the paper's arrangement)."""

from __future__ import annotations

from pathlib import Path

# node -> (label, x, y): the paper's labels, our layout
NODES = {
    "ex1-5": ("Examples 1-5\nverify spectral gap", 0.0, 6.0),
    "thm1": ("Thm 1\nSO(2) mixing window", 0.0, 5.0),
    "assump1": ("Assump. 1\nfirst-moment gap", 1.4, 5.0),
    "thm3": ("Thm 3\nfirst-moment decay\n(conceptual)", 1.4, 4.0),
    "thm2": ("Thm 2\nSO(2) score gap", 0.0, 4.0),
    "prop1": ("Prop 1\nsoftmax far-mass\nand l2 bounds", 0.0, 3.0),
    "lem1-2": ("Lemmas 1-2\nTV-mixing criteria", 3.0, 6.0),
    "ex6-8": ("Examples 6-8\nTV-mixing families", 4.4, 6.0),
    "prop2": ("Prop 2\nHouseholder TV mixing", 3.0, 5.0),
    "assump2": ("Assump. 2\ncomponent-TV mixing", 3.7, 4.3),
    "thm4": ("Thm 4\nTV convergence", 3.7, 3.6),
    "thm5": ("Thm 5\northogonal score\nseparation", 3.7, 2.9),
    "cor1": ("Cor 1\northogonal softmax\nbounds", 2.6, 2.2),
    "score": ("Score-side bounds\nrho_D <= rho*, ||alpha_D|| <= a*", 1.3, 1.5),
    "prop3": ("Prop 3\nfar-mass lower bound", 6.2, 5.0),
    "prop4": ("Prop 4\nnear-signal upper bound", 6.2, 4.0),
    "limit": ("Limitation:\nrotations alone\neventually fail", 6.2, 3.0),
    "assump3": ("Assump. 3\nsame-path coupling", -0.6, 0.6),
    "def1": ("Def. 1\nshared-background\nfar values", 1.0, 0.6),
    "thm6": ("Thm 6\nsame-path Q/K/V\ncovariance", 0.2, -0.5),
    "assump4": ("Assump. 4\nseparate V path", 2.6, 0.6),
    "thm7": ("Thm 7\nseparate-path\ncovariance", 2.6, -0.5),
    "cor3": ("Cor 3\nfar-weight\ncovariance bound", 2.6, -1.5),
    "lem4": ("Lemma 4\nsub-Gaussian angles", 4.4, 0.6),
    "lem3": ("Lemma 3\nnear-route gain", 4.4, -0.5),
    "cor2": ("Cor 2\nnear-signal\npreservation", 4.4, -1.5),
    "ex9": ("Ex. 9\nvalue coherence", 6.0, 0.6),
    "ex10": ("Ex. 10\nadaptive selection", 6.0, -0.5),
}
# (source, target, style): solid = formal use, dashed = motivation; all inferred from Appendix A (spec E4)
EDGES = [
    ("ex1-5", "thm1", "solid"),
    ("ex1-5", "assump1", "solid"),
    ("assump1", "thm3", "dashed"),
    ("lem1-2", "prop2", "solid"),
    ("prop2", "assump2", "solid"),
    ("lem1-2", "ex6-8", "solid"),
    ("ex6-8", "assump2", "solid"),
    ("assump2", "thm4", "solid"),
    ("thm4", "thm5", "solid"),
    ("thm5", "cor1", "solid"),
    ("prop1", "cor1", "solid"),
    ("thm1", "thm2", "solid"),
    ("thm2", "prop1", "solid"),
    ("prop1", "score", "solid"),
    ("cor1", "score", "solid"),
    ("prop3", "prop4", "solid"),
    ("prop4", "limit", "solid"),
    ("score", "thm6", "solid"),
    ("assump3", "thm6", "solid"),
    ("def1", "thm6", "solid"),
    ("assump4", "thm7", "solid"),
    ("def1", "thm7", "solid"),
    ("thm7", "cor3", "solid"),
    ("score", "cor3", "solid"),
    ("lem4", "lem3", "solid"),
    ("lem3", "cor2", "solid"),
    ("score", "cor2", "solid"),
    ("ex9", "def1", "dashed"),
    ("ex9", "thm6", "dashed"),
    ("ex10", "assump3", "dashed"),
    ("ex10", "assump4", "dashed"),
]


def edge_rows() -> list[dict]:
    """The edges as data (figure1.csv), each naming both ends' labels and that it is inferred."""
    unknown = {n for e in EDGES for n in e[:2]} - set(NODES)
    if unknown:
        raise ValueError(f"figure1: edges name unknown nodes {sorted(unknown)}")
    return [
        {
            "source": s,
            "target": t,
            "style": style,
            "source_label": NODES[s][0].replace("\n", " "),
            "target_label": NODES[t][0].replace("\n", " "),
            "provenance": "inferred from Appendix A",
        }
        for s, t, style in EDGES
    ]


def figure1(spec: dict, out: Path) -> None:
    """Writes figure1.png, figure1.pdf and figure1.csv (the edge list) into ``out``."""
    import matplotlib.pyplot as plt

    from ...report.plots import save_figure

    fig, ax = plt.subplots(figsize=(11, 8))
    for label, x, y in NODES.values():
        ax.text(
            x,
            y,
            label,
            ha="center",
            va="center",
            fontsize=7,
            bbox={"boxstyle": "round,pad=0.3", "fc": "white", "ec": "0.3"},
        )
    for s, t, style in EDGES:
        (_, x0, y0), (_, x1, y1) = NODES[s], NODES[t]
        ax.annotate(
            "",
            xy=(x1, y1 + 0.25 * (1 if y1 < y0 else -1 if y1 > y0 else 0)),
            xytext=(x0, y0),
            arrowprops={
                "arrowstyle": "->",
                "color": "0.35",
                "linestyle": "--" if style == "dashed" else "-",
                "shrinkA": 14,
                "shrinkB": 8,
            },
        )
    ax.set_xlim(-1.5, 7.2)
    ax.set_ylim(-2.2, 6.7)
    ax.axis("off")
    ax.set_title("Dependency graph of the formal results (edges reconstructed from Appendix A)", fontsize=10)
    save_figure(fig, Path(out) / "figure1", edge_rows())
    plt.close(fig)
