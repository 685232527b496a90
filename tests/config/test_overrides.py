"""``seqmix train ... --set key.path=value``: one-run overrides of a cell's leaf configs.

Guards (each fails on main, where ``train`` had no ``--set``): values are read as YAML (3e-4 a number);
the config schema validates them (a bad value or an unknown key path is a config error naming ``--set`` and
the path, before any job); the overridden leaves get a new hash and write beside ``--out``, never into the
DAG's leaf; the run config and the buffered MLflow params carry the overrides.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seqmix.cli import main as cli
from seqmix.config.base import ConfigError
from seqmix.config.leaves import cell_run_config, expand_cells
from seqmix.config.loading import load_paper
from seqmix.config.overrides import apply_to_leaf, apply_to_run, parse_overrides
from seqmix.io import read_json, write_json

ROOT = Path(__file__).resolve().parents[2]


def _cells(scale: str) -> dict:
    return expand_cells("heads", load_paper(ROOT / "config" / "papers" / "heads.yaml", scale), scale)


@pytest.fixture(scope="module")
def heads_cells():
    return _cells("tiny")


def _run(cells, key, results, n_leaves=1) -> dict:
    globals_ = {"results": str(results), "tracking": {"uri": "none"}, "device": "cpu"}
    return cell_run_config("heads", key[0], key[1], cells[key][:n_leaves], "tiny", globals_)


def test_values_are_yaml_scalars_with_numbers_as_numbers():
    got = parse_overrides(["train.lr=3e-4", "train.steps=5", "train.grad_clip=null", "model.mixer.r=~"])
    assert got == {"train.lr": 3e-4, "train.steps": 5, "train.grad_clip": None, "model.mixer.r": None}
    assert parse_overrides(["train.betas=[0.9, 0.95]", "train.lr=1e-3", "train.lr=2e-3"]) == {
        "train.betas": [0.9, 0.95],
        "train.lr": 2e-3,  # the later one wins
    }


@pytest.mark.parametrize(
    "item, message",
    [
        ("train.lr", r"--set: train\.lr: expected key\.path=value"),
        ("lr=3e-4", r"--set: lr=3e-4: expected key\.path=value"),
        ("optim.lr=3e-4", r"--set: optim\.lr: a key path starts with one of task, model, train, eval"),
        ("train.lr=nan", r"--set: train\.lr: expected a finite number"),
        ("train.lr=.inf", r"--set: train\.lr: expected a finite number"),
    ],
)
def test_malformed_items_are_named(item, message):
    with pytest.raises(ConfigError, match=message):
        parse_overrides([item])


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"train.lrr": 3e-4}, r"--set: train\.lrr: unknown key 'lrr' under train; known: .*\blr\b"),
        ({"model.mixer.headz": 2}, r"--set: model\.mixer\.headz: unknown key 'headz' under model\.mixer"),
        ({"task.nn": 8}, r"--set: task\.nn: unknown key 'nn' under task"),
        ({"eval.everyy": 5}, r"--set: eval\.everyy: unknown key 'everyy' under eval"),
        ({"train.lr": -1.0}, r"--set: train\.lr: -1\.0 is less than or equal to the minimum of 0"),
        ({"train.optimizer": "adamx"}, r"--set: train\.optimizer: 'adamx' is not one of"),
        ({"model.mixer.heads": 0}, r"--set: model\.mixer\.heads: 0 is less than the minimum of 1"),
        ({"model.mixer.name": "no_such_mixer"}, r"--set: model\.mixer\.name: unknown mixer 'no_such_mixer'"),
    ],
)
def test_schema_rejects_bad_overrides(heads_cells, overrides, message):
    leaf = heads_cells[("exp1", "k2-0")][0]
    with pytest.raises(ConfigError, match=message):
        apply_to_leaf(leaf.config, overrides)


def test_known_keys_apply_including_a_new_mixer_and_its_options(heads_cells):
    cfg = heads_cells[("exp1", "k2-0")][0].config
    swap = parse_overrides(["train.lr=3e-4", "model.mixer={name: mha, heads: 2}", "model.mixer.heads=4"])
    new = apply_to_leaf(cfg, swap)
    assert new["train"]["lr"] == 3e-4 and new["model"]["mixer"] == {"name": "mha", "heads": 4}
    assert cfg["train"]["lr"] != 3e-4, "the leaf config itself is untouched"
    with pytest.raises(ConfigError, match=r"model\.mixer: Additional properties .*'r'"):
        apply_to_leaf(cfg, {"model.mixer.name": "mha"})  # the leaf's option r stays, and mha has none


def test_overridden_run_writes_beside_out_with_new_hashes(heads_cells, tmp_path):
    run = _run(heads_cells, ("exp1", "k2-0"), tmp_path / "results", n_leaves=2)
    new = apply_to_run(run, {"train.steps": 3}, tmp_path / "try")
    assert new["overrides"] == {"train.steps": 3}
    for before, after in zip(run["leaves"], new["leaves"]):
        assert after["hash"] != before["hash"]
        assert after["out_dir"] == str(tmp_path / "try" / before["id"])
        assert after["config"]["train"]["steps"] == 3
    with pytest.raises(ConfigError, match="inside the DAG's results"):
        apply_to_run(run, {"train.steps": 3}, tmp_path / "results" / "heads")


def test_cli_train_with_set_records_overrides(heads_cells, tmp_path, monkeypatch):
    """End to end: a 3-step leaf trains beside --out, and its MLflow buffer carries the override params."""
    monkeypatch.chdir(tmp_path)
    run_path = tmp_path / "results" / "cell.json"
    write_json(run_path, _run(heads_cells, ("exp1", "k2-0"), tmp_path / "results"))
    out = tmp_path / "try" / "train.json"
    cli.main(["train", "--run", str(run_path), "--out", str(out), "--set", "train.steps=3", "--set", "train.lr=3e-4"])
    run = read_json(tmp_path / "try" / "run.json")
    assert run["overrides"] == {"train.lr": 3e-4, "train.steps": 3}
    leaf = run["leaves"][0]
    assert read_json(out)["leaves"][0]["steps"] == 3
    (rec,) = [json.loads(line) for line in (Path(leaf["out_dir"]) / "tracking-train.jsonl").read_text().splitlines()]
    assert rec["params"]["overrides"] == "train.lr=0.0003,train.steps=3"
    assert (rec["params"]["train.lr"], rec["params"]["train.steps"]) == ("0.0003", "3")  # MLflow params are strings
    assert not (tmp_path / "results" / "heads").exists(), "the DAG's leaf directory is never written"
    cli.main(["evaluate", "--run", str(tmp_path / "try" / "run.json"), "--out", str(tmp_path / "try" / "eval.json")])
    (rec,) = [json.loads(x) for x in (Path(leaf["out_dir"]) / "tracking-evaluate.jsonl").read_text().splitlines()]
    assert rec["params"]["overrides"] == "train.lr=0.0003,train.steps=3"


def test_cli_unknown_key_stops_before_any_job(heads_cells, tmp_path):
    run_path = tmp_path / "cell.json"
    write_json(run_path, _run(heads_cells, ("exp1", "k2-0"), tmp_path / "results"))
    with pytest.raises(SystemExit, match=r"config error: --set: train\.lrr: unknown key"):
        cli.main(["train", "--run", str(run_path), "--out", str(tmp_path / "try" / "t.json"), "--set", "train.lrr=1"])
    assert not (tmp_path / "try").exists()


@pytest.mark.slow
def test_snakemake_config_reaches_the_run_configs(heads_cells, tmp_path):
    """For the DAG the override is Snakemake's ``--config`` on the global keys: the cell's run config (what
    the job reads, hence what MLflow records) carries them. Per-experiment keys cannot be given there:
    the paper configs are separate files, and the global schema refuses any other key (README says so)."""
    from seqmix.results import cell_run_path, scale_root
    from tests.conftest import copy_workflow, snakemake_local

    (tmp_path / "wf").mkdir()
    work = copy_workflow(tmp_path / "wf", papers=["heads"])
    target = str(cell_run_path(scale_root("results", "cpu"), "heads", "exp1", "k2-0"))
    r = snakemake_local(work, "--config", "scale=cpu", "amp=True", "--", target, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    run = read_json(work / target)
    assert run["scale"] == "cpu" and run["runtime"]["amp"] is True
    steps = {
        scale: {leaf.config["train"]["steps"] for leaf in cells[("exp1", "k2-0")]}
        for scale, cells in (("tiny", heads_cells), ("cpu", _cells("cpu")))
    }
    assert steps["cpu"] != steps["tiny"]
    assert {leaf["config"]["train"]["steps"] for leaf in run["leaves"]} == steps["cpu"]
    r = snakemake_local(work, "-n", "--config", "heads={exp1: {train: {lr: 0.1}}}", timeout=300)
    said = r.stdout + r.stderr
    assert r.returncode != 0 and "config error" in said and "'heads' was unexpected" in said, said[-2000:]
