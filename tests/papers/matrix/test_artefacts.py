"""Every matrix artefact called directly (no Snakemake) on a spec built here: fake leaves (train.done.json,
metrics.json, diagnose.csv) for three tasks x up to three mixers x two learning rates x two seeds, with the
scores, parameter counts and influence profiles chosen so that each table's rows can be worked out by hand.

- symbolsoup (accuracy, test set of 500): rope 0.90 and sessa 0.88 overlap, s4d 0.60 is clearly worse; at
  each mixer's other lr the validation value is worse but the test value *better*, so a choice made on
  test data would show up;
- mqar (token accuracy, no test size, one lr): s4d 0.95 beats rope 0.70; sessa is excluded;
- lm (perplexity, lower is better, one mixer, no validation metric): the lr comes from the config.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from seqmix.config.base import ConfigError, load_yaml, validate
from seqmix.io import write_json
from seqmix.papers.matrix import ARTEFACTS
from seqmix.papers.matrix.families import family_of
from seqmix.papers.matrix.inputs import SpecError
from seqmix.papers.matrix.selection import bootstrap_interval, rng_for
from seqmix.report.tables import write_csv

MIXER_NAMES = {"rope": "rope", "s4d": "s4d", "sessa": "sessa"}
SEEDS = [0, 1]
LAGS = np.arange(32)
# (experiment, mixer) -> (base score, the lr validation prefers, lrs tried)
CELLS = {
    ("symbolsoup", "rope"): (0.90, 0.001, [0.001, 0.003]),
    ("symbolsoup", "s4d"): (0.60, 0.003, [0.001, 0.003]),
    ("symbolsoup", "sessa"): (0.88, 0.001, [0.001, 0.003]),
    ("mqar", "rope"): (0.70, 0.003, [0.003]),
    ("mqar", "s4d"): (0.95, 0.003, [0.003]),
    ("lm", "rope"): (12.0, None, [0.001, 0.003]),
}
N_PARAMS = {"rope": 1000, "s4d": 1100, "sessa": 900}
PROTOCOL = {
    "scores": {
        "symbolsoup": {
            "metric": "accuracy",
            "select": "val_accuracy",
            "higher_is_better": True,
            "label": "SymbolSoup",
            "test_size_key": "task.test_size",
        },
        "mqar": {"metric": "token_acc", "select": "val_token_acc", "higher_is_better": True},
        "lm": {"metric": "ppl", "select": "val_ppl", "higher_is_better": False},
    },
    "bootstrap": 2000,
    "confidence": 0.95,
    "seed": 0,
}
EXCLUDED = [{"experiment": "mqar", "variant": "sessa", "reason": "no recurrent state for MQAR decoding"}]


def _metrics(exp: str, base: float, good: float | None, lr: float, seed: int) -> dict:
    d = 0.005 * (1 if seed else -1)
    if exp == "lm":  # no validation metric at all
        return {"ppl": base + 0.1 * seed + (1.0 if lr == 0.003 else 0.0), "nll": 2.5}
    score, val = base + d, base + d
    if lr != good:  # worse on validation, better on test
        score, val = base + 0.05 + d, base - 0.1 + d
    if exp == "symbolsoup":
        return {"accuracy": score, "val_accuracy": val, "loss": 0.3, "chance": 0.1}
    return {"token_acc": score, "val_token_acc": val, "chance": 0.05}


def _diagnose(mixer: str) -> list[dict]:
    lag = LAGS.astype(float)
    profile = {"s4d": np.exp(-0.2 * lag), "rope": 1 / (lag + 1), "sessa": (lag + 1) ** -0.7}[mixer]
    rows = [
        {"quantity": "influence", "lag": int(k), "value": float(v), "lo": "", "hi": ""} for k, v in zip(LAGS, profile)
    ]
    fits = {
        "s4d": {"exp_rate": (0.2, 0.18, 0.22), "power": (1.5, 1.2, 1.8), "best_fit_power": 0.0},
        "sessa": {"exp_rate": (0.05, 0.04, 0.06), "power": (0.7, 0.6, 0.8), "best_fit_power": 1.0},
        "rope": {},  # no fit: every influence scalar is n/a
    }[mixer]
    for q, v in fits.items():
        lo_hi = {"lo": v[1], "hi": v[2]} if isinstance(v, tuple) else {"lo": "", "hi": ""}
        rows.append({"quantity": q, "lag": "", "value": v[0] if isinstance(v, tuple) else v} | lo_hi)
    rows.append({"quantity": "n_examples", "lag": "", "value": 64, "lo": "", "hi": ""})
    return rows


def _leaf(root, exp: str, mixer: str, lr: float, seed: int, cell: tuple) -> dict:
    base, good, _ = cell
    point = f"lr{lr:g}"
    leaf_id = f"{mixer}/{point}/seed{seed}"
    out = root / exp / mixer / point / f"seed{seed}"
    out.mkdir(parents=True)
    cfg = {
        "paper": "matrix",
        "experiment": exp,
        "variant": mixer,
        "point": point,
        "seed": seed,
        "sweep_value": lr,
        "task": {"name": exp, "test_size": 500},
        "model": {"name": "lm", "d_model": 16, "n_layers": 2, "mixer": {"name": MIXER_NAMES[mixer]}},
        "train": {"lr": lr, "steps": 10, "batch": 4},
    }
    h = f"h-{exp}-{leaf_id}"
    write_json(
        out / "train.done.json", {"id": leaf_id, "hash": h, "steps": 10, "seconds": 1.0, "n_params": N_PARAMS[mixer]}
    )
    write_json(out / "metrics.json", {"id": leaf_id, "hash": h, "metrics": _metrics(exp, base, good, lr, seed)})
    write_csv(out / "diagnose.csv", _diagnose(mixer), checksum=True)
    return {"id": leaf_id, "hash": h, "out_dir": str(out), "config": cfg}


def make_spec(root, cells: dict = CELLS, seeds=SEEDS, protocol=PROTOCOL, excluded=EXCLUDED) -> dict:
    leaves, resolved = {}, {}
    for (exp, mixer), cell in cells.items():
        for lr in cell[2]:
            for seed in seeds:
                leaves.setdefault(exp, []).append(_leaf(root, exp, mixer, lr, seed, cell))
        resolved.setdefault(exp, {})[mixer] = {"train": {"lr": 0.003}}
    return {
        "paper": "matrix",
        "scale": "tiny",
        "name": "test",
        "inputs": {"summaries": {}, "leaves": leaves, "artefacts": {}},
        "resolved": resolved,
        "analysis": {"protocol": protocol},
        "excluded": excluded,
        "reported": {},
    }


@pytest.fixture(scope="module")
def spec(tmp_path_factory) -> dict:
    return make_spec(tmp_path_factory.mktemp("matrix-leaves"))


def run(name: str, spec: dict, out) -> None:
    out.mkdir(parents=True, exist_ok=True)
    ARTEFACTS[name](spec, out)


def table(name: str, spec: dict, tmp_path) -> pd.DataFrame:
    run(name, spec, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{name}.csv", f"{name}.md", f"{name}.tex"]
    return pd.read_csv(tmp_path / f"{name}.csv", dtype=str, keep_default_na=False)


def row(df: pd.DataFrame, task: str, mixer: str) -> pd.Series:
    got = df[(df["task"] == task) & (df["mixer"] == mixer)]
    assert len(got) == 1, (task, mixer, df)
    return got.iloc[0]


def test_artefact_names():
    assert set(ARTEFACTS) == {"grid", "scores", "ranking", "memory", "heatmap", "influence_curves", "excluded"}


def test_schema_accepts_the_suggested_block_and_refuses_a_typo(root):
    schema = load_yaml(root / "src" / "seqmix" / "papers" / "matrix" / "analysis.schema.yaml")
    validate({"protocol": PROTOCOL}, schema, "matrix.yaml", "analysis")
    bad = {"protocol": {**PROTOCOL, "scores": {"mqar": {**PROTOCOL["scores"]["mqar"], "metrc": "x"}}}}
    with pytest.raises(ConfigError, match="metrc"):
        validate(bad, schema, "matrix.yaml", "analysis")


def test_cells_one_row_per_leaf(spec, tmp_path):
    run("grid", spec, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.csv", "summary.csv.sha256"]
    df = pd.read_csv(tmp_path / "summary.csv")
    assert len(df) == sum(len(c[2]) for c in CELLS.values()) * len(SEEDS)
    r = df[(df["experiment"] == "symbolsoup") & (df["mixer"] == "s4d") & (df["lr"] == 0.003) & (df["seed"] == 1)].iloc[
        0
    ]
    assert (r["task"], r["mixer_name"], r["n_params"], r["n_test"]) == ("symbolsoup", "s4d", 1100, 500)
    assert (r["metric"], r["select"]) == ("accuracy", "val_accuracy")
    assert r["score"] == pytest.approx(0.605) and r["select_value"] == pytest.approx(0.605)
    assert (r["exp_rate"], r["exp_rate_lo"], r["exp_rate_hi"], r["best_fit_power"]) == (0.2, 0.18, 0.22, 0.0)
    rope = df[df["mixer"] == "rope"]
    assert rope["exp_rate"].isna().all() and rope["power_hi"].isna().all()  # no fit -> empty, not an error
    assert df[df["experiment"] == "mqar"]["n_test"].isna().all()  # no test_size_key
    assert df[df["experiment"] == "lm"]["select_value"].isna().all()
    # one lr per (task, mixer) is marked chosen, every seed of it: the rows the claims read
    per_cell = df[df["chosen"] == 1].groupby(["experiment", "mixer"])["lr"].nunique()
    assert (per_cell == 1).all() and len(per_cell) == len(CELLS)
    assert len(df[df["chosen"] == 1]) == len(CELLS) * len(SEEDS)


def test_scores_choose_lr_on_validation_never_test(spec, tmp_path):
    df = table("scores", spec, tmp_path)
    for (exp, mixer), (base, good, _) in CELLS.items():
        r = row(df, exp, mixer)
        if good is not None:
            assert float(r["lr"]) == good and r["chosen_on"] == f"validation {PROTOCOL['scores'][exp]['select']}"
            assert float(r["score"]) == pytest.approx(base, abs=1e-9)  # not base + 0.05, the test-best lr
        lo, hi = (float(x) for x in r["interval"].strip("[]").split(","))
        assert lo <= float(r["score"]) <= hi
        assert r["seeds"] == "2"
    s4d = row(df, "symbolsoup", "s4d")
    assert (s4d["lrs"], s4d["edge"], s4d["n_test"], s4d["n_params"]) == (
        "0.001, 0.003*",
        "highest tried",
        "500",
        "1,100",
    )
    assert s4d["param_gap"] == "+10.0%"  # median over rope 1000, s4d 1100, sessa 900
    assert row(df, "mqar", "rope")["edge"] == "" and row(df, "mqar", "rope")["n_test"] == "n/a"
    lm = row(df, "lm", "rope")  # no val_ppl anywhere: the config's train.lr, not 0.001 with the lower test ppl
    assert (lm["lr"], lm["chosen_on"]) == ("0.003", "config train.lr (no val_ppl)")
    assert float(lm["score"]) == pytest.approx(13.05)


def test_fallback_prefers_default_lr(tmp_path):
    proto = {**PROTOCOL, "scores": {"lm": {**PROTOCOL["scores"]["lm"], "default_lr": 0.0012}}}
    spec = make_spec(tmp_path / "leaves", {("lm", "rope"): CELLS[("lm", "rope")]}, protocol=proto, excluded=[])
    r = row(table("scores", spec, tmp_path / "out"), "lm", "rope")
    assert (r["lr"], r["chosen_on"]) == ("0.001", "default_lr (no val_ppl)")  # the tried lr nearest in log


def test_interval_shrinks_with_seeds_and_test_size():
    def width(scores, n_test):
        lo, hi = bootstrap_interval(scores, n_test, 4000, 0.95, rng_for(0, "t"))
        assert lo <= np.mean(scores) <= hi
        return hi - lo

    two, eight = [0.80, 0.84], [0.80, 0.84] * 4
    assert width(eight, math.nan) < width(two, math.nan)
    assert width(two, 10_000) < width(two, 100)
    assert width(two, math.nan) < width(two, 100)  # the finite test set adds to the seed spread
    assert width([0.8], math.nan) == 0.0  # nothing to resample
    assert width([0.8], 100) > 0.0
    assert all(math.isnan(x) for x in bootstrap_interval([math.nan], 100, 10, 0.95, rng_for(0, "t")))
    # not a proportion (a perplexity): seeds only, whatever the test size
    assert width([12.0, 12.1], 100) == pytest.approx(width([12.0, 12.1], math.nan))


def test_ranking_ties_overlaps_and_separates(spec, tmp_path):
    df = table("ranking", spec, tmp_path)
    rope, sessa, s4d = (row(df, "symbolsoup", m) for m in ("rope", "sessa", "s4d"))
    assert (rope["rank"], sessa["rank"], s4d["rank"]) == ("1", "1", "3")  # rope and sessa overlap
    assert (rope["rank_range"], sessa["rank_range"], s4d["rank_range"]) == ("1–2", "1–2", "3–3")
    assert row(df, "mqar", "s4d")["rank"] == "1" and row(df, "mqar", "rope")["rank"] == "2"
    assert row(df, "lm", "rope")[["rank", "rank_range", "mixers"]].tolist() == ["1", "1–1", "1"]
    overall = df[df["task"] == "overall"].set_index("mixer")
    assert overall.index.tolist() == ["sessa", "rope", "s4d"]  # best mean rank first
    # rope alone on "lm" ranks nothing there: its mean is over the two tasks it shares with others
    assert overall.loc["rope", ["rank", "rank_range", "tasks"]].tolist() == ["1.50", "1.50–2.00", "2"]
    assert overall.loc["s4d", ["rank", "rank_range", "tasks"]].tolist() == ["2.00", "2.00–2.00", "2"]
    assert overall.loc["sessa", ["rank", "tasks"]].tolist() == ["1.00", "1"]


def test_memory_reports_the_fits(spec, tmp_path):
    df = table("memory", spec, tmp_path)
    s4d, sessa, rope = (row(df, "symbolsoup", m) for m in ("s4d", "sessa", "rope"))
    assert (s4d["lr"], s4d["exp_rate"], s4d["exp_rate_interval"], s4d["best_fit"]) == (
        "0.003",
        "0.2",
        "[0.18, 0.22]",
        "exponential (2/2)",
    )
    assert (sessa["power"], sessa["power_interval"], sessa["best_fit"]) == ("0.7", "[0.6, 0.8]", "power (2/2)")
    assert rope[["exp_rate", "power_interval", "best_fit", "effective_memory"]].tolist() == ["n/a"] * 4
    assert len(df) == len(CELLS)


def test_heatmap(spec, tmp_path):
    run("heatmap", spec, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["heatmap.csv", "heatmap.pdf", "heatmap.png"]
    df = pd.read_csv(tmp_path / "heatmap.csv").fillna({"reason": ""})
    assert len(df) == 3 * 3  # tasks x mixers, whether run or not
    status = {(r.experiment, r.mixer): r.status for r in df.itertuples()}
    assert status[("mqar", "sessa")] == "excluded" and status[("lm", "s4d")] == "not run"
    assert sum(s == "ok" for s in status.values()) == len(CELLS)
    norm = {(r.experiment, r.mixer): r.normalised for r in df.itertuples() if r.status == "ok"}
    assert norm[("symbolsoup", "rope")] == 1.0 and norm[("symbolsoup", "s4d")] == 0.0
    assert 0 < norm[("symbolsoup", "sessa")] < 1
    assert norm[("mqar", "s4d")] == 1.0 and norm[("lm", "rope")] == 1.0  # a lone mixer is its task's best
    assert df[df["status"] == "excluded"]["reason"].tolist() == [EXCLUDED[0]["reason"]]


def test_influence_curves(spec, tmp_path):
    run("influence_curves", spec, tmp_path)
    names = ["influence_curves.csv", "influence_curves.pdf", "influence_curves.png"]
    assert sorted(p.name for p in tmp_path.iterdir()) == names
    df = pd.read_csv(tmp_path / "influence_curves.csv").fillna({"mixer": ""})
    measured = df[df["curve"] == "measured"]
    assert len(measured) == len(CELLS) * (len(LAGS) - 1)  # lag 0 is off a log axis
    assert set(measured["seeds"]) == {2}
    s4d = measured[(measured["experiment"] == "symbolsoup") & (measured["mixer"] == "s4d")]
    assert np.allclose(s4d["value"], np.exp(-0.2 * s4d["lag"]))
    exp = df[(df["curve"] == "exponential") & (df["experiment"] == "symbolsoup")]
    assert set(exp["mixer"]) == {"s4d"} and np.allclose(exp["value"].astype(float), s4d["value"].to_numpy())
    power = df[df["curve"] == "power"]
    assert set(power["mixer"]) == {"sessa"} and set(power["param"]) == {0.7}
    assert set(df[df["curve"] == "1/lag"]["experiment"]) == {"symbolsoup", "mqar", "lm"}  # rope in each
    assert len(df[(df["curve"] != "measured") & (df["mixer"] == "rope")]) == 0  # no fit, no overlay


def test_excluded(spec, tmp_path):
    df = table("excluded", spec, tmp_path / "some")
    assert df.to_dict("records") == [{"task": "mqar", "mixer": "sessa", "reason": EXCLUDED[0]["reason"]}]
    none = table("excluded", {**spec, "excluded": []}, tmp_path / "none")
    assert len(none) == 1 and none.iloc[0]["task"] == "none"


def test_single_mixer_single_lr_single_seed(tmp_path):
    spec = make_spec(tmp_path / "leaves", {("mqar", "s4d"): CELLS[("mqar", "s4d")]}, seeds=[0], excluded=[])
    for name in ("scores", "ranking", "memory", "heatmap", "influence_curves"):
        run(name, spec, tmp_path / name)
    r = pd.read_csv(tmp_path / "scores" / "scores.csv", dtype=str).iloc[0]
    assert r["interval"] == f"[{r['score']}, {r['score']}]"  # one seed, no test size: zero width


def test_missing_file_names_the_leaf_and_file(tmp_path):
    spec = make_spec(tmp_path / "leaves", {("mqar", "s4d"): CELLS[("mqar", "s4d")]}, excluded=[])
    leaf = spec["inputs"]["leaves"]["mqar"][1]
    (tmp_path / "leaves" / "mqar" / "s4d" / "lr0.003" / "seed1" / "metrics.json").unlink()
    with pytest.raises(SpecError, match=rf"mqar/{leaf['id']}: metrics.json is missing"):
        run("scores", spec, tmp_path / "out")


def test_corrupt_diagnose_and_unknown_metric_are_errors(tmp_path):
    spec = make_spec(tmp_path / "leaves", {("mqar", "s4d"): CELLS[("mqar", "s4d")]}, excluded=[])
    path = tmp_path / "leaves" / "mqar" / "s4d" / "lr0.003" / "seed0" / "diagnose.csv"
    path.write_text(path.read_text() + "influence,99,1.0,,\n")
    with pytest.raises(SpecError, match="s4d/lr0.003/seed0: .*checksum mismatch"):
        run("grid", spec, tmp_path / "out")
    proto = {**PROTOCOL, "scores": {"mqar": {**PROTOCOL["scores"]["mqar"], "metric": "acc"}}}
    spec = make_spec(tmp_path / "leaves2", {("mqar", "s4d"): CELLS[("mqar", "s4d")]}, protocol=proto, excluded=[])
    with pytest.raises(SpecError, match="metrics.json has no 'acc'"):
        run("grid", spec, tmp_path / "out2")


def test_families():
    assert [family_of(m) for m in ("s4d", "mamba2", "b2s6", "rope", "sessa", "factorized_linear_attention")] == [
        "ssm",
        "ssm",
        "ssm",
        "attention",
        "sessa",
        "other",
    ]


def test_a_diverged_mixer_has_no_score_and_no_rank(tmp_path):
    cells = {k: v for k, v in CELLS.items() if k[0] == "mqar"}
    spec = make_spec(tmp_path / "leaves", cells, excluded=[])
    for leaf in spec["inputs"]["leaves"]["mqar"]:
        if leaf["id"].startswith("rope/"):  # a NaN score is written as null
            write_json(f"{leaf['out_dir']}/metrics.json", {"id": leaf["id"], "metrics": {"token_acc": math.nan}})
    rk = table("ranking", spec, tmp_path / "ranking")
    assert row(rk, "mqar", "rope")[["score", "interval", "rank"]].tolist() == ["n/a", "n/a", "n/a"]
    assert row(rk, "mqar", "s4d")[["rank", "mixers"]].tolist() == ["1", "1"]
    sc = table("scores", spec, tmp_path / "scores")
    assert row(sc, "mqar", "rope")[["seeds", "chosen_on"]].tolist() == ["0", "config train.lr (no val_token_acc)"]
    sc = table("scores", {**spec, "resolved": {}}, tmp_path / "scores-unresolved")
    assert row(sc, "mqar", "rope")["chosen_on"] == "median lr tried (no val_token_acc)"
    run("heatmap", spec, tmp_path / "heatmap")
    hm = pd.read_csv(tmp_path / "heatmap" / "heatmap.csv")
    assert hm.set_index("mixer").loc["rope", "status"] == "no score"
