"""Three levels of MLflow runs: an experiment's parent, one sweep parent per (experiment, variant) series of an
experiment that declares a ``sweep``, and the series' train runs (their evaluation runs under them). Records
are written as the train and evaluate stages write them (tracking.buffer.train_parent_key on the leaves'
canonical configs) and ingested by the claims step (tracking.runs.log_paper_artefacts), with SQLite; the
live-server path is exercised through LiveRun on the same store (it needs no server to write runs)."""

from __future__ import annotations

import sqlite3

from seqmix.config.leaves import expand_leaves, sweeps
from seqmix.tracking import buffer as tracking_buffer
from seqmix.tracking import live as tracking_live
from seqmix.tracking import runs as tracking
from seqmix.tracking import store as tracking_store

PAPER = {
    "experiments": {
        "e1": {  # swept: two variants, two sweep points at tiny, one seed
            "base": {"model": {"heads": 1}},
            "variants": {"k2": None, "k4": None},
            "sweep": {"name": "H", "path": "model.heads", "values": [1, 2, 3]},
            "scales": {"tiny": {"seeds": [0], "sweep_values": [1, 2]}},
        },
        "e2": {"variants": {"a": None}, "scales": {"tiny": {"seeds": [0, 1]}}},  # no sweep
    }
}


def _write_stage_buffers(paper_dir, t0: int) -> dict[str, dict]:
    """A train and an evaluate record per leaf, as pipeline.stages writes them; {leaf hash: leaf config}."""
    leaves = {}
    for i, leaf in enumerate(expand_leaves("toy", PAPER, "tiny")):
        start, end = t0 + 1000 * i, t0 + 1000 * i + 500
        train = tracking_buffer.buffer_record(
            key=f"{leaf.hash}.train",
            experiment="toy",
            run_name=f"{leaf.experiment}/{leaf.id}/train@tiny",
            tags={"rule": "train"},
            params={"variant": leaf.variant},
            metrics={"train_loss": [(1, 0.5)]},
            start_ms=start,
            end_ms=end,
            parent_key=tracking_buffer.train_parent_key("toy", "tiny", leaf.experiment, leaf.config),
        )
        evaluate = tracking_buffer.buffer_record(
            key=f"{leaf.hash}.evaluate",
            experiment="toy",
            run_name=f"{leaf.experiment}/{leaf.id}/evaluate@tiny",
            tags={"rule": "evaluate"},
            params={},
            metrics={"acc": [(0, 1.0)]},
            start_ms=end,
            end_ms=end + 100,
            parent_key=f"{leaf.hash}.train",
        )
        out = paper_dir / leaf.experiment / leaf.variant / leaf.point / f"seed{leaf.seed}"
        tracking_buffer.write_buffer(out / "tracking-train.jsonl", [train])
        tracking_buffer.write_buffer(out / "tracking-evaluate.jsonl", [evaluate])
        leaves[leaf.hash] = leaf.config
    return leaves


def _claims(results, uri: str, paper_cfg: dict = PAPER, rule: str = "claims", t: int = 0) -> dict | None:
    """The claims step's MLflow part: parents, then a replay of every buffer of the paper."""
    paper_dir = results / "tiny" / "toy"
    spec = {"paper": "toy", "scale": "tiny", "results": str(results), "paper_dir": str(paper_dir)}
    spec |= {"tracking": {"uri": uri}, "sweeps": sweeps(paper_cfg, "tiny")}
    spec["inputs"] = {"summaries": {e: str(paper_dir / e / "summary.csv") for e in paper_cfg["experiments"]}}
    return tracking.log_paper_artefacts(spec, [], {"rule": rule}, t or tracking_buffer.now_ms())


def _active(results) -> dict[str, dict]:
    """{run name: {id, start, end, tags, params}} of the active runs."""
    con = sqlite3.connect(results / "mlflow.db")
    out = {}
    for rid, name, start, end in con.execute(
        "select run_uuid, name, start_time, end_time from runs where lifecycle_stage = 'active'"
    ):
        tags = dict(con.execute("select key, value from tags where run_uuid = ?", (rid,)).fetchall())
        params = dict(con.execute("select key, value from params where run_uuid = ?", (rid,)).fetchall())
        assert name not in out, f"two active runs named {name}"
        out[name] = {"id": rid, "start": start, "end": end, "tags": tags, "params": params}
    return out


def _parent(runs: dict, name: str) -> str:
    """The name of the run ``name`` is nested under."""
    pid = runs[name]["tags"].get(tracking_store.PARENT_RUN_TAG)
    return next(n for n, r in runs.items() if r["id"] == pid)


def test_leaves_of_a_sweep_name_their_sweep_parent():
    keys = {
        (leaf.experiment, leaf.variant, leaf.point): tracking_buffer.train_parent_key(
            "toy", "tiny", leaf.experiment, leaf.config
        )
        for leaf in expand_leaves("toy", PAPER, "tiny")
    }
    assert keys[("e1", "k4", "H2")] == tracking_buffer.sweep_key("toy", "tiny", "e1", "k4")
    assert keys[("e2", "a", "-")] == tracking_buffer.experiment_key("toy", "tiny", "e2")
    assert len(set(keys.values())) == 3  # two series of e1, and e2
    expected = {"name": "H", "path": "model.heads", "values": [1, 2], "variants": ["k2", "k4"]}
    assert sweeps(PAPER, "tiny") == {"e1": expected}


def test_three_levels_in_the_sqlite_replay(store):
    uri, results = store
    assert tracking.init_store(uri, ["toy"], results) is not None
    t0 = 1_000_000
    leaves = _write_stage_buffers(results / "tiny" / "toy", t0)
    counts = _claims(results, uri)
    assert counts["created"] == 2 * len(leaves) + 2 + 2 + 1  # leaf runs, experiments, sweeps, artefacts
    runs = _active(results)
    for variant in ("k2", "k4"):
        sweep = f"e1/{variant} sweep H@tiny"
        assert _parent(runs, sweep) == "e1@tiny"
        assert runs[sweep]["tags"]["seqmix.kind"] == "sweep" and runs[sweep]["tags"]["seqmix.variant"] == variant
        assert runs[sweep]["params"] == {
            "scale": "tiny",
            "experiment": "e1",
            "variant": variant,
            "sweep.name": "H",
            "sweep.path": "model.heads",
            "sweep.values": "[1, 2]",
        }
        for point in ("H1", "H2"):
            leaf = f"e1/{variant}/{point}/seed0"
            assert _parent(runs, f"{leaf}/train@tiny") == sweep
            assert _parent(runs, f"{leaf}/evaluate@tiny") == f"{leaf}/train@tiny"
    assert runs["e1@tiny"]["tags"]["seqmix.kind"] == "experiment"
    for seed in (0, 1):  # an experiment without a sweep keeps its train runs directly
        assert _parent(runs, f"e2/a/-/seed{seed}/train@tiny") == "e2@tiny"
    assert not any("sweep" in name for name in runs if name.startswith("e2"))
    # spans are the runs' (leaves i = 0..3 are e1's, in expand order k2 H1, k2 H2, k4 H1, k4 H2)
    span = lambda name: (runs[name]["start"], runs[name]["end"])
    assert span("e1/k2 sweep H@tiny") == (t0, t0 + 1500)
    assert span("e1/k4 sweep H@tiny") == (t0 + 2000, t0 + 3500)
    assert span("e1@tiny") == (t0, t0 + 3500)
    assert span("e2@tiny") == (t0 + 4000, t0 + 5500)


def test_a_rerun_keeps_one_current_run_per_key_and_relinks_both_levels(store):
    uri, results = store
    assert tracking.init_store(uri, ["toy"], results) is not None
    _write_stage_buffers(results / "tiny" / "toy", 1_000_000)
    _claims(results, uri)
    again = _claims(results, uri)  # same content: nothing written but the artefacts run (its end is now)
    assert again["created"] == 1 and again["replaced"] == 1
    before = _active(results)
    # other sweep values and another claims tag: both parent levels are rewritten in one replay
    changed = {"experiments": {**PAPER["experiments"]}}
    changed["experiments"]["e1"] = {**PAPER["experiments"]["e1"]}
    changed["experiments"]["e1"]["scales"] = {"tiny": {"seeds": [0]}}  # values from the sweep: [1, 2, 3]
    _claims(results, uri, changed, rule="claims2")
    runs = _active(results)
    assert set(runs) == set(before)
    for name in ("e1@tiny", "e1/k2 sweep H@tiny", "e1/k4 sweep H@tiny"):
        assert runs[name]["id"] != before[name]["id"], name
    assert runs["e1/k2 sweep H@tiny"]["params"]["sweep.values"] == "[1, 2, 3]"
    assert _parent(runs, "e1/k2 sweep H@tiny") == "e1@tiny"
    assert _parent(runs, "e1/k2/H1/seed0/train@tiny") == "e1/k2 sweep H@tiny"
    con = sqlite3.connect(results / "mlflow.db")
    per_key = con.execute(
        "select t.value, count(*) from runs r join tags t on t.run_uuid = r.run_uuid "
        "where t.key = ? and r.lifecycle_stage = 'active' group by t.value",
        (tracking_store.KEY_TAG,),
    ).fetchall()
    assert per_key and all(n == 1 for _, n in per_key)


def test_live_train_runs_nest_under_their_sweep_parent(store):
    """Guards: a live run carried no parent key, so the claims step's replay (which skips the complete live
    run) never nested it under its parent."""
    uri, results = store
    assert tracking.init_store(uri, ["toy"], results) is not None
    leaf = next(leaf for leaf in expand_leaves("toy", PAPER, "tiny") if leaf.point == "H2")
    parent = tracking_buffer.train_parent_key("toy", "tiny", "e1", leaf.config)
    name, key, t = f"e1/{leaf.id}/train@tiny", f"{leaf.hash}.train", tracking_buffer.now_ms()
    live = tracking_live.LiveRun(uri, "toy", name, {"rule": "train"}, {}, key, t, str(results), parent_key=parent)
    live.log(1, {"train_loss": 0.5}, t)
    rec = tracking_buffer.buffer_record(
        key=key,
        experiment="toy",
        run_name=name,
        tags={"rule": "train"},
        params={},
        metrics={"train_loss": [(1, 0.5, t)]},
        start_ms=t,
        end_ms=t + 10,
        parent_key=parent,
    )
    out = results / "tiny" / "toy" / "e1" / leaf.variant / leaf.point / "seed0"
    tracking_buffer.write_buffer(out / "tracking-train.jsonl", [rec])
    assert live.end(rec)
    assert _active(results)[name]["tags"][tracking_store.PARENT_KEY_TAG] == parent
    counts = _claims(results, uri)
    assert counts["skipped"] == 1  # the live run is complete: the replay keeps it and adopts it
    runs = _active(results)
    assert _parent(runs, name) == f"e1/{leaf.variant} sweep H@tiny"
    assert _parent(runs, f"e1/{leaf.variant} sweep H@tiny") == "e1@tiny"
    # a live run started once its parent exists is nested from its start
    other = next(leaf for leaf in expand_leaves("toy", PAPER, "tiny") if leaf.point == "H1" and leaf.variant == "k2")
    name2 = f"e1/{other.id}/train@tiny"
    key2 = f"{other.hash}.train"
    parent2 = tracking_buffer.train_parent_key("toy", "tiny", "e1", other.config)
    tracking_live.LiveRun(uri, "toy", name2, {"rule": "train"}, {}, key2, t, str(results), parent_key=parent2)
    assert _parent(_active(results), name2) == "e1/k2 sweep H@tiny"
