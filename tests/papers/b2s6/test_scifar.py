"""b2s6 spec E2 and E6 (Table 1): S4D's tied B, C option against a hand-built recurrence, the two sCIFAR tables
rendered on hand-built specs (the paper's numbers beside ours, seed counts, the data-source label), the
relations the e6-* claims read, and the E2/E6 blocks of config/papers/b2s6.yaml at every scale. Each would fail
on a main without E2/E6 (no tables, no relations, no experiments); the tie test guards the S4D option E2 uses."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch

from seqmix.config.leaves import expand_leaves
from seqmix.config.loading import load_paper
from seqmix.mixers.ssm import S4D
from seqmix.papers.b2s6 import ARTEFACTS, e2_tied, e6_ablation, scifar

PAPER_FILE = "config/papers/b2s6.yaml"


def test_s4d_tied_bc_shares_one_b_and_c_and_matches_a_hand_built_recurrence():
    """tie_BC (the E2 variant) keeps one complex B and C for all channels (shape (1, n, 2)) and computes, per
    channel i, x_k = exp(dt_i A) x_{k-1} + dt_i phi1(dt_i A) B u_k^(i), y_k = Re(C x_k): a wrong broadcast
    (per-channel B, C left in, or the channels' dt ignored) fails here."""
    torch.manual_seed(0)
    d, n, L = 3, 4, 7
    m = S4D(d, d_state=n, tie_BC=True).double()
    assert m.B.shape == (1, n, 2) and m.C.shape == (1, n, 2)
    assert sum(p.numel() for p in m.parameters()) == 2 * n + 2 * n * 2 + d  # A (re, im), B, C, log_dt
    with torch.no_grad():
        m.B.normal_()
        m.log_dt.copy_(torch.log(torch.tensor([0.05, 0.3, 1.0])))
    u = torch.randn(2, L, d, dtype=torch.float64)
    A = torch.complex(-torch.exp(m.A.log_re), m.A.im)  # (n,)
    B, C = torch.view_as_complex(m.B)[0], torch.view_as_complex(m.C)[0]
    y_ref = torch.zeros(2, L, d, dtype=torch.float64)
    for i in range(d):
        dt = torch.exp(m.log_dt[i])
        abar = torch.exp(dt * A)
        bbar = (abar - 1) / A * B  # = dt phi1(dt A) B
        x = torch.zeros(2, n, dtype=torch.complex128)
        for k in range(L):
            x = abar * x + bbar * u[:, k, i, None]
            y_ref[:, k, i] = (x * C).sum(-1).real
    torch.testing.assert_close(m(u), y_ref, rtol=1e-10, atol=1e-12)
    # the same values as per-channel parameters give the same outputs (tying is the only difference)
    untied = S4D(d, d_state=n).double()
    with torch.no_grad():
        untied.load_state_dict({**m.state_dict(), "B": m.B.expand(d, n, 2), "C": m.C.expand(d, n, 2)})
    torch.testing.assert_close(untied(u), y_ref, rtol=1e-10, atol=1e-12)


def _summary(tmp_path, exp: str, rows: list[dict]) -> str:
    path = tmp_path / f"{exp}.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return str(path)


def _spec(tmp_path, exp: str, rows: list[dict], reported: dict, task: dict, d_model: int = 32) -> dict:
    cfg = {"task": {"name": "lra_image", **task}, "model": {"d_model": d_model}}
    variants = ("s4d",) if exp == "e2" else tuple(e6_ablation.VARIANTS)
    return {
        "name": "t",
        "scale": "cpu",
        "inputs": {"summaries": {exp: _summary(tmp_path, exp, rows)}},
        "resolved": {exp: {v: cfg for v in variants}},
        "reported": reported,
    }


def test_e2_table_shows_the_papers_values_beside_ours_with_seeds_and_data_source(tmp_path):
    """Two rows; paper cells come from the claims' reported values, ours in % mean ± std, the seed count and
    the substitute label in the column header and the caption."""
    rows = [
        {"variant": "s4d", "sweep_value": tied, "seed": s, "accuracy": a}
        for tied, accs in ((True, (0.70, 0.74)), (False, (0.90, 0.94)))
        for s, a in zip((0, 1), accs)
    ]
    reported = {"e2-untied-accuracy": "about 88", "e2-tied-accuracy": "below 80"}
    spec = _spec(tmp_path, "e2", rows, reported, {"source": "digits"})
    df = e2_tied.e2_frame(spec)
    ours = "ours accuracy % (sklearn-digits (substitute))"
    assert list(df["paper accuracy % (grayscale sCIFAR-10)"]) == ["about 88", "below 80"]
    assert list(df[ours]) == ["92.00 ± 2.83", "72.00 ± 2.83"]
    assert list(df["seeds"]) == [2, 2]
    ARTEFACTS["e2_tied_bc"](spec, tmp_path)
    md = (tmp_path / "e2_tied_bc.md").read_text()
    assert "about 88" in md and "below 80" in md and "sklearn-digits (substitute)" in md and "not comparable" in md


def _e6_rows(means: dict[tuple[int, str], float], seeds=(0, 1)) -> list[dict]:
    return [
        {"variant": v, "sweep_value": h, "seed": s, "accuracy": m + (0.01 if s else -0.01)}
        for (h, v), m in means.items()
        for s in seeds
    ]


PAPER_TABLE = {
    "source": "paper Table 1",
    "d": 128,
    "rows": [
        {"h": 1, "complex": [81.56, 1.22], "nobias": [71.77, 1.88], "real": [47.82, 5.42]},
        {"h": 128, "complex": [85.32, 0.55], "nobias": [84.79, 0.43], "real": [56.45, 0.71]},
    ],
}


def test_table1_puts_the_papers_cells_beside_ours_and_labels_the_data(tmp_path):
    """Rows are the union of our h and the paper's (ours '—' where not run, the paper's '—' where it has no
    such h), each paper cell is analysis.table1_paper's [mean, std], ours is % mean ± std with its seed count;
    the header and the caption name the substitute data."""
    means = {(h, v): 0.5 + 0.1 * i for h in (1, 2) for i, v in enumerate(e6_ablation.VARIANTS)}
    spec = _spec(tmp_path, "e6", _e6_rows(means), {}, {"source": "digits"})
    spec["analysis"] = {"table1_paper": PAPER_TABLE}
    df = e6_ablation.table1_frame(spec).set_index("h")
    assert list(df.index) == [1, 2, 128] and set(df["data (ours)"]) == {"sklearn-digits (substitute)"}
    assert df.loc[1, "paper with B_bias (complex)"] == "81.56 ± 1.22"
    assert df.loc[128, "paper with B_bias (real)"] == "56.45 ± 0.71"
    assert df.loc[2, "paper with B_bias (complex)"] == "—"
    assert df.loc[1, "ours without B_bias (complex)"] == "60.00 ± 1.41"
    assert df.loc[128, "ours with B_bias (real)"] == "—" and df.loc[128, "seeds real"] == 0
    assert df.loc[2, "seeds nobias"] == 2
    assert (df.loc[1, "p (ours)"], df.loc[1, "p (paper)"], df.loc[128, "p (ours)"]) == ("32", 128, "—")
    ARTEFACTS["table1"](spec, tmp_path)
    md = (tmp_path / "table1.md").read_text()
    assert "sklearn-digits (substitute)" in md and "81.56 ± 1.22" in md and "not comparable" in md


def test_table1_needs_the_papers_table(tmp_path):
    spec = _spec(tmp_path, "e6", _e6_rows({(1, "complex"): 0.5}), {}, {"source": "digits"})
    with pytest.raises(KeyError, match="analysis.table1_paper"):
        e6_ablation.table1_frame(spec)


@pytest.mark.parametrize(
    "task, label, substitute",
    [
        ({"source": "cifar10", "channels": 1}, "grayscale sCIFAR-10", False),
        ({"source": "digits", "image_size": 4}, "sklearn-digits (substitute), resized to 4x4 (L = 16)", True),
        ({"source": "auto"}, scifar.AUTO, True),
    ],
)
def test_data_label_names_the_source_from_the_resolved_task(task, label, substitute):
    spec = {"resolved": {"e6": {"complex": {"task": task}, "real": {"task": task}}}}
    assert scifar.data_label(spec, "e6") == label
    assert scifar.is_substitute(label) is substitute


def test_relations_count_bias_wins_monotone_drops_and_best_h():
    """Hand-built means: bias helps at h = 1, 4 but not 2; no-bias rises except 2 -> 4 (one drop); complex
    peaks at h = 2; complex beats real everywhere."""
    means = {
        (1, "complex"): 0.80, (2, "complex"): 0.90, (4, "complex"): 0.85,
        (1, "nobias"): 0.70, (2, "nobias"): 0.95, (4, "nobias"): 0.75,
        (1, "real"): 0.50, (2, "real"): 0.55, (4, "real"): 0.60,
    }  # fmt: skip
    r = e6_ablation.relations(pd.DataFrame(_e6_rows(means)))
    assert r["n_h"] == 3 and r["bias_helps_count"] == 2 and r["bias_helps_fraction"] == pytest.approx(2 / 3)
    assert r["complex_beats_real_count"] == 3 and r["complex_beats_real_fraction"] == 1
    assert r["nobias_violations"] == 1 and r["nobias_spearman"] == pytest.approx(0.5)
    assert r["bias_best_h"] == 2 and r["mean_real"] == pytest.approx(0.55)
    assert (r["seeds_min"], r["seeds_max"]) == (2, 2)
    missing = e6_ablation.relations(pd.DataFrame(_e6_rows({(1, "complex"): 0.8, (2, "complex"): 0.9})))
    assert math.isnan(missing["bias_helps_fraction"]) and math.isnan(missing["nobias_violations"])


@pytest.mark.parametrize(
    "scale, n_e2, n_e6, hs, d",
    [
        ("tiny", 2, 6, {1, 4}, 8),
        ("cpu", 6, 54, {1, 2, 4, 8, 16, 32}, 32),
        ("paper", 6, 120, {1, 2, 4, 8, 16, 32, 64, 128}, 128),
    ],
)
def test_e2_e6_config_at_every_scale(scale, n_e2, n_e6, hs, d):
    """The E2/E6 leaves per scale: counts (3 seeds at cpu), h dividing d, each variant's switch (tie_BC, bias,
    complex with twice the real states), the data (CIFAR-10 at paper, Fashion-MNIST at cpu, digits pinned at
    tiny), and one claim per Table 1 cell, expected at paper scale only."""
    cfg = load_paper(PAPER_FILE, scale)
    leaves = [leaf for leaf in expand_leaves("b2s6", cfg, scale) if leaf.experiment in ("e2", "e6")]
    e2 = [leaf.config for leaf in leaves if leaf.experiment == "e2"]
    e6 = [leaf.config for leaf in leaves if leaf.experiment == "e6"]
    assert (len(e2), len(e6)) == (n_e2, n_e6)
    assert sorted(c["model"]["mixer"]["tie_BC"] for c in e2) == [False] * (n_e2 // 2) + [True] * (n_e2 // 2)
    assert {c["model"]["mixer"]["blocks"] for c in e6} == hs and all(c["model"]["d_model"] == d for c in e6)
    for c in e6:
        mixer = c["model"]["mixer"]
        assert mixer.get("bias", True) is (c["variant"] != "nobias")
        assert mixer.get("complex", True) is (c["variant"] != "real")
    states = {c["variant"]: c["model"]["mixer"]["d_state"] for c in e6}
    assert states["real"] == 2 * states["complex"] == 2 * states["nobias"]
    sources = {c["task"]["source"] for c in e2 + e6}
    assert sources == {{"paper": "cifar10", "cpu": "fashion-mnist", "tiny": "digits"}[scale]}
    cells = {c["id"]: c for c in cfg["claims"] if c["id"].startswith("table1-h")}
    assert len(cells) == 24 and all(c["expected_at"] == ["paper"] for c in cells.values())
    assert {(c["ours"]["where"]["sweep_value"], c["ours"]["where"]["variant"]) for c in cells.values()} == {
        (r["h"], v) for r in cfg["analysis"]["table1_paper"]["rows"] for v in ("complex", "nobias", "real")
    }
    paper = cfg["analysis"]["table1_paper"]
    assert [r["h"] for r in paper["rows"]] == [1, 2, 4, 8, 16, 32, 64, 128] and paper["d"] == 128
    assert cfg["artefacts"]["table1"]["analysis"] == ["table1_paper"]
    e2_shown = set(cfg["artefacts"]["e2_tied_bc"]["claims"])
    assert e2_shown == set(e2_tied.ROWS[v][1] for v in e2_tied.ROWS) <= {c["id"] for c in cfg["claims"]}


def test_digits_read_without_sklearn_equal_load_digits():
    """The E2/E6 cpu and tiny data: image_data reads scikit-learn's digits file itself (no 1-3 s sklearn import
    per job) and must give exactly load_digits' images (rescaled 0-16 -> 0-255) and labels, in its order."""
    from sklearn.datasets import load_digits

    from seqmix.tasks.image_data import load_digits_images

    images, labels = load_digits_images()["all"]
    ref = load_digits()
    assert images.shape == (1797, 8, 8, 1) and images.dtype.name == "uint8"
    assert (labels == ref.target).all()
    assert (images[..., 0] == (ref.images * (255.0 / 16.0)).round().clip(0, 255).astype("uint8")).all()
