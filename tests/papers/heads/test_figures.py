"""The heads paper's figures called directly on inputs built here (no DAG): each writes its files, and the
autouse ``figure_style`` fixture (tests/papers/conftest.py) fails the test when a figure has a legend over
its data or tick labels on each other. The paper prints no values for any of them (its config says why)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from seqmix.config.loading import load_paper
from seqmix.papers.heads import ARTEFACTS


@pytest.fixture(scope="module")
def heads(root) -> dict:
    return load_paper(root / "config" / "papers" / "heads.yaml", "tiny")


def written(out, name: str) -> set[str]:
    return {p.name for p in out.iterdir() if p.name.startswith(name)}


@pytest.mark.parametrize("name", ["figure1", "figure2"])
def test_schematics(heads, tmp_path, figure_style, name):
    ARTEFACTS[name]({"analysis": {"figure1": heads["analysis"]["figure1"]}}, tmp_path)
    assert {f"{name}.png", f"{name}.pdf"} <= written(tmp_path, name)
    assert len(figure_style) == 1 and figure_style[0].problems == []


def test_figure3_left(heads, tmp_path, figure_style):
    n, ks, heads_ = 16, (2, 4, 8), range(1, 10)
    rows = [
        {"variant": f"k{k}", "sweep_value": H, "seed": s, "test_mse": max(k - H, 0) + 1e-3 * (s + 1)}
        for k in ks
        for H in heads_
        for s in (0, 1)
    ]
    theory = [{"quantity": "mse_opt", "k": k, "n": n, "H": H, "value": float(k - H)} for k in ks for H in range(k)]
    pd.DataFrame(rows).to_csv(tmp_path / "exp1.csv", index=False)
    (tmp_path / "theory").mkdir()
    pd.DataFrame(theory).to_csv(tmp_path / "theory" / "summary.csv", index=False)
    spec = {
        "inputs": {
            "summaries": {"exp1": str(tmp_path / "exp1.csv")},
            "artefacts": {"theory": [str(tmp_path / "theory" / "summary.csv")]},
        },
        "resolved": {"exp1": {"k2": {"task": {"n": n}}}},
    }
    ARTEFACTS["figure3_left"](spec, tmp_path)
    drawn = pd.read_csv(tmp_path / "figure3_left.csv")
    assert len(drawn) == len(ks) * len(heads_) and set(drawn["seeds"]) == {2}
    assert figure_style[0].problems == []


def test_figure3_right(tmp_path, figure_style):
    k, n = 4, 16
    rows = [{"source": "teacher", "k": k, "n": n, "H": "", "seed": "", "index": i, "sigma_rel": 1.0 if i <= k else 0.0}
            for i in range(1, n + 1)]  # fmt: skip
    for H in (4, 9):
        for seed in (0, 1):
            rows += [
                {"source": "student", "k": k, "n": n, "H": H, "seed": seed, "index": i,
                 "sigma_rel": 1.0 if i <= k else 10.0 ** -(3 + i + seed)}
                for i in range(1, n + 1)
            ]  # fmt: skip
    pd.DataFrame(rows).to_csv(tmp_path / "spectrum.csv", index=False)
    ARTEFACTS["figure3_right"]({"inputs": {"artefacts": {"spectrum": [str(tmp_path / "spectrum.csv")]}}}, tmp_path)
    assert {"figure3_right.png", "figure3_right.csv"} <= written(tmp_path, "figure3_right")
    assert len(figure_style[0].fig.axes) == 2 and figure_style[0].problems == []


def test_figure4(heads, tmp_path, figure_style):
    """Exp. II rows as the diagnose stage writes them: a decaying SSM, attention ~ 1/T on the extended grid,
    and two A = rho Q ablations, one of which crosses attention."""
    grid, extra = [10, 20, 40, 70, 100], [300, 1000]
    rows = []
    for seed in (0, 1):
        for draw in (0, 1):
            noise = 1 + 0.01 * (seed + draw)
            for T in grid + extra:
                rows.append({"variant": "attn", "seed": seed, "draw": draw, "T": T, "fro": noise / T,
                             "uniform_approx": 0.8 / T})  # fmt: skip
            for variant, rho in (("ssm", 0.57), ("ssm_rho0.9", 0.9), ("ssm_rho0.99", 0.99)):
                for T in grid:
                    fro = noise * rho ** (T - 1) * (3 if variant != "ssm" else 1)
                    rows.append({"variant": variant, "seed": seed, "draw": draw, "T": T, "fro": fro, "rho": rho,
                                 "spec": 0.8 * fro, "bound": 2 * fro})  # fmt: skip
    pd.DataFrame(rows).to_csv(tmp_path / "exp2.csv", index=False)
    spec = {
        "inputs": {"summaries": {"exp2": str(tmp_path / "exp2.csv")}},
        "resolved": {"exp2": {"ssm": {"task": {"T": grid}}}},
        "analysis": {"figure4": heads["analysis"]["figure4"]},
    }
    ARTEFACTS["figure4"](spec, tmp_path)
    drawn = pd.read_csv(tmp_path / "figure4.csv")
    assert set(drawn["variant"]) == {"attn", "ssm", "ssm_rho0.9", "ssm_rho0.99"}
    assert np.isfinite(drawn.loc[drawn["note"].eq("crossing with attention"), "T"]).all()
    assert len(figure_style[0].fig.axes) == 3 and figure_style[0].problems == []
