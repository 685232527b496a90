"""B2S6 E9 (paper App. G, Figure 7): the three language models of config/papers/b2s6.yaml differ only in the
unit Gamma of their Mamba blocks; ``byte_lm`` logs the validation perplexity during training; the cosine
schedule's floor (``train.min_lr_ratio``); and the e9_lm analysis reads the 11 in-training points, tokens/s and
the final perplexity from trained leaves."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
import torch

from seqmix.config.leaves import leaf_config
from seqmix.config.loading import load_paper
from seqmix.io import write_json
from seqmix.mixers.ssm import B2S6, S4D, S6
from seqmix.models import build_model
from seqmix.papers.b2s6 import e9_lm
from seqmix.tasks import byte_lm
from seqmix.tasks.byte_lm import ByteLM
from seqmix.training.optim import lr_factor

ROOT = Path(__file__).resolve().parents[3]
UNITS = {"s6": S6, "b2s6": B2S6, "s4d": S4D}


@pytest.fixture(autouse=True)
def _no_shared_cache(monkeypatch):
    monkeypatch.delenv("SEQMIX_DATA_CACHE", raising=False)
    byte_lm.load_corpus.cache_clear()


@pytest.fixture(scope="module")
def byte_task(tmp_path_factory):
    return ByteLM(
        source="procedural",
        max_bytes=40_000,
        segment_len=32,
        eval_segments=3,
        cache_dir=str(tmp_path_factory.mktemp("c")),
    )


@pytest.mark.parametrize("scale", ["tiny", "cpu"])
def test_e9_models_differ_only_in_the_unit(scale, byte_task):
    """Spec §2.7 / E9: 'Gamma in {S6, B2S6, S4D} is the only change'. Every parameter outside ``.unit.`` has
    the same name and shape in the three models, and the units are the named classes (B2S6 with p = 16)."""
    paper = load_paper(ROOT / "config" / "papers" / "b2s6.yaml", scale)
    exp = paper["experiments"]["e9"]
    assert exp["stages"] == ["train"] and set(exp["variants"]) == set(UNITS)
    outside = {}
    for variant, cls in UNITS.items():
        cfg = leaf_config(exp, variant, scale)
        assert cfg["model"]["mixer"]["name"] == "mamba" and cfg["model"]["block"] == "native"
        assert cfg["eval"]["every"] * 11 == cfg["train"]["steps"], "perplexity at every 1/11 of the run"
        torch.manual_seed(0)
        model = build_model(cfg["model"], byte_task)
        units = [blk.mixer.unit for blk in model.blocks]
        assert all(type(u) is cls for u in units)
        if cls is B2S6:
            assert all(u.p == 16 for u in units), "spec §5 item 15: h = d_inner / 16 blocks of 16 channels"
        outside[variant] = {n: p.shape for n, p in model.named_parameters() if ".unit." not in n}
    assert outside["s6"] == outside["b2s6"] == outside["s4d"]


def test_byte_lm_diagnostics_is_the_validation_perplexity(byte_task):
    """In-training evaluation (eval.every) reads eval_segments validation segments: a uniform model has
    perplexity 256 and 8 bits per byte; a model that knows the next byte has perplexity ~1."""
    seen = []

    class Uniform(torch.nn.Module):
        def forward(self, x):
            seen.append(len(x))
            return torch.zeros(*x.shape, 256)

    out = byte_task.diagnostics(Uniform())
    assert set(out) == {"val_ppl", "val_nll", "val_bits_per_byte"}
    assert out["val_ppl"] == pytest.approx(256.0) and out["val_bits_per_byte"] == pytest.approx(8.0)
    assert sum(seen) == 3
    vx, vy = byte_task.split_set("val")

    class Oracle(torch.nn.Module):
        def forward(self, x):
            hit = next(i for i in range(len(vx)) if torch.equal(vx[i], x[0]))
            return 30.0 * torch.nn.functional.one_hot(vy[hit : hit + len(x)], 256).float()

    assert byte_task.diagnostics(Oracle())["val_ppl"] < 1.01


def test_cosine_floor():
    """train.min_lr_ratio (the LM recipes' 0.1x floor): the cosine ends there; without it, at 0 as before."""
    assert lr_factor(100, 100, "cosine", 0, 0.1) == pytest.approx(0.1)
    assert lr_factor(50, 100, "cosine", 0, 0.1) == pytest.approx(0.55)
    assert lr_factor(100, 100, "cosine") == pytest.approx(0.0)
    assert lr_factor(3, 100, "constant", 0, 0.1) == 1.0


def _fake_leaf(tmp: Path, variant: str, cfg: dict, ppl: list[float], seconds: float, **marker) -> dict:
    """A trained leaf as the e9_lm analysis reads it: its history (in-training points from step 0) and marker."""
    out = tmp / variant
    out.mkdir()
    steps = cfg["train"]["steps"]
    every = steps // (len(ppl) - 1)
    history = {"diagnostics": {"step": [i * every for i in range(len(ppl))], "val_ppl": ppl}}
    write_json(out / "history.json", history, checksum=True)  # as the train stage writes them
    done = {"hash": "h", "steps": steps, "seconds": seconds, "diagnostics_seconds": 1.0, **marker}
    write_json(out / "train.done.json", done, checksum=True)
    return {"config": {**cfg, "variant": variant, "seed": 0}, "out_dir": str(out), "hash": "h", "id": variant}


def test_e9_lm_reads_points_throughput_and_final_perplexity(tmp_path, monkeypatch, figure_style):
    """The 11 points (step 0 left out), tokens/s = steps x batch x L / training seconds without the validations,
    the final perplexity the claims read, and the table beside the paper's 11 x 3 numbers."""
    paper = load_paper(ROOT / "config" / "papers" / "b2s6.yaml", "tiny")
    exp = paper["experiments"]["e9"]
    monkeypatch.setattr(e9_lm, "is_done", lambda marker, h: True)
    leaves = [
        _fake_leaf(tmp_path, v, leaf_config(exp, v, "tiny"), [256.0 - 10 * i - k for i in range(12)], s)
        for k, (v, s) in enumerate((("s6", 3.0), ("b2s6", 5.0), ("s4d", 2.0)))
    ]
    out = tmp_path / "out"
    out.mkdir()
    e9_lm.e9_lm({"inputs": {"leaves": {"e9": leaves}}}, out)
    summary = pd.read_csv(out / "summary.csv").set_index("variant")
    tokens = 11 * 4 * 32
    assert summary.loc["b2s6", "tokens_per_s"] == pytest.approx(tokens / 4.0)
    assert summary.loc["s4d", "val_ppl"] == pytest.approx(256.0 - 110 - 2) and summary.loc["s6", "final_step"] == 11
    curves = pd.read_csv(out / "figure7.csv")
    assert len(curves) == 33 and curves["step"].min() == 1 and math.isclose(curves["point"].max(), 11.0)
    table = pd.read_csv(out / "e9_lm.csv").set_index("point")
    final = table.loc["11/11"]
    assert float(final["S6 (paper)"]) == 21.0785 and float(final["S6 (ours)"]) == pytest.approx(146.0)
    assert table.loc["time per token vs S6", "B2S6 (ours)"] == "+100.0%"
    assert "not comparable" in (out / "e9_lm.md").read_text()
    # Figure 7's right panel: the paper's App. G numbers, one dashed series per unit labelled "paper: <unit>"
    (fig7,) = [d.fig for d in figure_style]
    paper = {ln.get_label(): ln for ln in fig7.axes[1].get_lines()}
    assert sorted(paper) == ["paper: B2S6", "paper: S4D", "paper: S6"]
    assert list(paper["paper: S4D"].get_xdata()) == list(e9_lm.PAPER_PPL)
    assert list(paper["paper: S4D"].get_ydata()) == [v[2] for v in e9_lm.PAPER_PPL.values()]
    assert [t.get_text() for t in fig7.legends[0].get_texts()][:3] == ["ours: S6", "ours: B2S6", "ours: S4D"]


def test_e9_lm_names_the_corpus_and_device_its_runs_recorded(tmp_path, monkeypatch):
    """A leaf trained elsewhere (a GPU box with other installed text) is labelled with what its train marker
    recorded there, not with what the task finds on the machine drawing the table."""
    paper = load_paper(ROOT / "config" / "papers" / "b2s6.yaml", "tiny")
    exp = paper["experiments"]["e9"]
    monkeypatch.setattr(e9_lm, "is_done", lambda marker, h: True)
    rec = {"data_source": "installed text: elsewhere (substitute)", "device": "cuda"}
    leaves = [
        _fake_leaf(tmp_path, v, leaf_config(exp, v, "tiny"), [9.0 - i for i in range(12)], 2.0, **rec)
        for v in ("s6", "b2s6", "s4d")
    ]
    out = tmp_path / "out"
    out.mkdir()
    e9_lm.e9_lm({"inputs": {"leaves": {"e9": leaves}}}, out)
    caption = (out / "e9_lm.md").read_text()
    assert "installed text: elsewhere (substitute)" in caption and "(cuda;" in caption
