"""The B2S6 paper's artefacts on hand-built specs: Figure 5's analysis (exact c-slopes 3 and 2) and the figure
with the paper's reference slopes, the spec §4 theory checks on small sizes (every identity below its
tolerance, the S6 rank 1), the E5 stability analysis and Figures 1-4 and 6 from fake leaves and summaries.
Every figure drawn here passes the style check (the autouse ``figure_style`` of tests/papers/conftest.py)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from seqmix.config.loading import load_paper
from seqmix.io import write_json
from seqmix.papers.b2s6 import analysis, figures, schematics, tables
from seqmix.results import leaf_marker


def test_gradient_scaling_slopes(tmp_path):
    st = {"n": 4, "kappa": 1.0, "c_values": [1.0, 10.0, 100.0], "L_fixed": 40, "L_values": [50, 200, 800],
          "trials": 3, "draws": 40, "seed": 0}  # fmt: skip
    analysis.gradient_scaling({"analysis": {"gradient_scaling": st}}, tmp_path)
    df = pd.read_csv(tmp_path / "summary.csv").set_index("quantity")
    assert df.loc["slope_c_w", "value"] == pytest.approx(3.0, abs=1e-9)
    assert df.loc["slope_c_b", "value"] == pytest.approx(2.0, abs=1e-9)
    assert 0.3 < df.loc["slope_L_b", "value"] < 0.7


def test_figure5_draws_the_papers_reference_slopes_from_the_claims(root, tmp_path, figure_style):
    """Each panel's "paper" line has the slope its claim reports (a changed reported value moves the line),
    and the L panel's ticks are the swept lengths, none on top of another (the style fixture checks)."""
    st = {"n": 4, "kappa": 1.0, "c_values": [1.0, 3.0, 10.0, 30.0, 100.0], "L_fixed": 40,
          "L_values": [50, 100, 200, 400, 800], "trials": 2, "draws": 20, "seed": 0}  # fmt: skip
    analysis.gradient_scaling({"analysis": {"gradient_scaling": st}}, tmp_path)
    claims = {c["id"]: c["reported"] for c in load_paper(root / "config" / "papers" / "b2s6.yaml", "tiny")["claims"]}
    reported = {c: claims[c] for c in ("e4-slope-c-w", "e4-slope-c-b", "e4-slope-L-b")}
    for edit in ({}, {"e4-slope-c-b": 2.5}):
        spec = {"inputs": {"artefacts": {"gradient_scaling": [str(tmp_path / "summary.csv")]}},
                "reported": reported | edit}  # fmt: skip
        figures.figure5(spec, tmp_path)
        fig = figure_style[-1].fig
        for ax, claim in zip(fig.axes, reported):
            (line,) = [ln for ln in ax.get_lines() if ln.get_label().startswith("paper")]
            x, y = (np.log(np.asarray(v, dtype=float)) for v in line.get_data())
            assert (y[-1] - y[0]) / (x[-1] - x[0]) == pytest.approx(float(spec["reported"][claim]))
            assert line.get_label() == f"paper: slope {float(spec['reported'][claim]):g} (Thm 3)"
        assert [t.get_text() for t in fig.axes[2].get_xticklabels()] == ["50", "100", "200", "400", "800"]


@pytest.mark.parametrize("name", ["figure1", "figure2"])
def test_schematics(tmp_path, figure_style, name):
    getattr(schematics, name)({}, tmp_path)
    assert (tmp_path / f"{name}.png").stat().st_size > 0 and len(figure_style) == 1


def test_figure3_one_curve_per_width_and_unit(tmp_path, figure_style):
    leaves = []
    for unit in ("s4d", "s6", "b2s6"):
        for d in (4, 16, 64):
            out = tmp_path / f"{unit}-{d}"
            out.mkdir()
            history = {"diagnostics": {"step": [0, 10, 20, 30], "test_l2": [2.0, 1.5, 1.2, 1.0 + 1 / d]}}
            write_json(out / "history.json", history, checksum=True)
            cfg = {
                "variant": unit,
                "seed": 1,
                "model": {"width": d},
                "task": {"train_size": 100},
                "train": {"batch": 10},
            }
            leaves.append({"id": out.name, "hash": "h", "out_dir": str(out), "config": cfg})
    figures.figure3({"inputs": {"leaves": {"e1": leaves}}}, tmp_path)
    df = pd.read_csv(tmp_path / "figure3.csv")
    assert len(df) == 3 * 3 * 3 and sorted(df["epoch"].unique()) == [1.0, 2.0, 3.0]
    legends = [ax.get_legend() for ax in figure_style[0].fig.axes]
    assert [t.get_text() for t in legends[2].get_texts()] == ["(h, p) = (2, 2)", "(h, p) = (4, 4)", "(h, p) = (8, 8)"]


def test_theory_checks_small(tmp_path):
    st = {
        "rank": {"d": 6, "L": 10, "n": 4, "h": 2, "seed": 0},
        "constructions": {"d": 3, "L": 6, "n": 2, "seed": 0},
        "profiles": {"d": 2, "n": 2, "L": 4, "k0": 1, "cs": [1.0, 100.0], "seed": 0},
        "signs": {"h": 3, "p": 2, "draws": 20000, "seed": 0},
        "gradients": {"n": 3, "L": 10, "draws": 2, "seed": 0},
        "reference": {"draws": 20000, "seed": 0},
        "copy_me": {"d": 3, "n": 2, "L": 8, "seed": 0},
    }
    analysis.theory_checks({"analysis": {"theory_checks": st}}, tmp_path)
    df = pd.read_csv(tmp_path / "summary.csv")
    value = dict(zip(df["quantity"], df["value"]))
    assert value["rank_s6"] == 1 and value["rank_b2s6_nobias_minus_h"] <= 0 and value["rank_b2s6_deficit"] == 0
    errors = [q for q in value if q.endswith("rel_err")]
    assert len(errors) >= 10 and all(value[q] < 1e-10 for q in errors), {q: value[q] for q in errors}
    assert value["one_sign_fraction"] == pytest.approx(0.25, abs=0.02)


def _fake_e5_leaf(root, variant: str, c: float, losses: list[float]) -> dict:
    out = root / f"{variant}-{c}"
    out.mkdir()
    write_json(out / "history.json", {"step": list(range(1, len(losses) + 1)), "train_loss": losses,
                                      "grad_norm_b": [0.5] * len(losses)}, checksum=True)  # fmt: skip
    write_json(leaf_marker(out, "train"), {"hash": "h"}, checksum=True)
    cfg = {"variant": variant, "seed": 0, "task": {"scale": c}}
    return {"id": out.name, "hash": "h", "out_dir": str(out), "config": cfg}


def test_stability_reads_histories_and_draws_figure6(tmp_path):
    smooth = [1.0 / (t + 1) for t in range(40)]
    spiky = list(smooth)
    spiky[30] = 1.0  # RMS 1 against a running minimum of 0.18: one spike
    leaves = [_fake_e5_leaf(tmp_path, "s4d", 1.0, smooth), _fake_e5_leaf(tmp_path, "s6", 1.0, spiky)]
    spec = {
        "analysis": {"stability": {"spike_factor": 3.0, "after_fraction": 0.1}},
        "inputs": {"leaves": {"e5": leaves}},
    }
    analysis.stability(spec, tmp_path)
    df = pd.read_csv(tmp_path / "summary.csv").set_index("variant")
    assert df.loc["s4d", "spikes"] == 0 and df.loc["s6", "spikes"] == 1
    assert df.loc["s6", "max_grad_norm_b"] == 0.5 and pd.isna(df.loc["s6", "max_grad_norm_w"])
    figures.figure6(spec, tmp_path)
    tables.e5_stability({"inputs": {"artefacts": {"stability": [str(tmp_path / "summary.csv")]}}}, tmp_path)
    assert (tmp_path / "figure6.png").stat().st_size > 0 and "s6" in (tmp_path / "e5_stability.md").read_text()


def test_stability_ratio_of_delta_gradients_to_s4d():
    """grad_b_ratio_to_s4d pairs each leaf with S4D at the same c and seed (Thm 3's ratio), NaN without one."""
    rows = [
        {"variant": "s4d", "c": 1.0, "seed": 0, "max_grad_norm_b": 2.0},
        {"variant": "s6", "c": 1.0, "seed": 0, "max_grad_norm_b": 0.5},
        {"variant": "s6", "c": 3.0, "seed": 0, "max_grad_norm_b": 0.5},
        {"variant": "s4d", "c": 3.0, "seed": 1, "max_grad_norm_b": 4.0},
        {"variant": "s6", "c": 3.0, "seed": 1, "max_grad_norm_b": 2.0},
    ]
    analysis._ratio_to_s4d(rows)
    ratios = [r["grad_b_ratio_to_s4d"] for r in rows]
    assert ratios[1] == 0.25 and ratios[4] == 0.5
    assert math.isnan(ratios[0]) and math.isnan(ratios[2]) and math.isnan(ratios[3])


def test_figure4_heat_maps(tmp_path):
    rows = [
        {"variant": v, "seed": 0, "sigma1": s1, "sigma2": s2, "rel_err": 0.1 + (v == "s6") * (s1 < s2)}
        for v in ("s4d", "s6", "b2s6")
        for s1 in (0.01, 100.0)
        for s2 in (0.01, 100.0)
    ]
    pd.DataFrame(rows).to_csv(tmp_path / "e3.csv", index=False)
    figures.figure4({"inputs": {"summaries": {"e3": str(tmp_path / "e3.csv")}}}, tmp_path)
    cells = pd.read_csv(tmp_path / "figure4.csv")
    assert len(cells) == 12 and cells["rel_err"].max() == pytest.approx(1.1)
