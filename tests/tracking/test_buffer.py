"""Tracking buffers without MLflow: bad lines, parent order, timestamps, the step clock, artifact paths."""

from __future__ import annotations

import json
import time

from seqmix.tracking import buffer as tb


def _rec(key: str, parent: str | None = None, **kw) -> dict:
    base = dict(
        key=key,
        experiment="heads",
        run_name=f"exp1/{key}",
        tags={"rule": "train"},
        params={"train.lr": 0.01},
        metrics={"loss": [(10, 1.0, 1_000), (20, 0.5, 2_000)]},
        start_ms=500,
        end_ms=2_500,
        parent_key=parent,
    )
    base.update(kw)
    return tb.buffer_record(**base)


def test_a_garbled_line_is_skipped_and_reported_and_the_rest_is_read(tmp_path):
    """Guards: one garbled buffer line aborted the whole sync (json.loads raised out of read_buffer)."""
    good, other = _rec("a.train"), _rec("b.train")
    path = tmp_path / "tracking-train.jsonl"
    path.write_text(json.dumps(good) + "\n" + '{"key": "c.train", "experim\n' + json.dumps(other) + "\n")
    records, problems = tb.read_buffers([path, tmp_path / "missing.jsonl"])
    assert [r["key"] for r in records] == ["a.train", "b.train"]
    assert len(problems) == 2
    assert problems[0].startswith(f"{path}:2: not JSON")
    assert "missing.jsonl: unreadable" in problems[1]


def test_a_line_whose_content_no_longer_matches_its_fingerprint_is_skipped(tmp_path):
    """Guards: a bit-flipped value that is still valid JSON would be replayed as if it were the run."""
    rec = _rec("a.train")
    flipped = dict(rec, metrics={"loss": [[10, 9.0, 1_000], [20, 0.5, 2_000]]})
    missing = {k: v for k, v in rec.items() if k != "params"}
    path = tmp_path / "tracking-train.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in (flipped, missing, rec)) + "\n")
    records, problems = tb.read_buffers([path])
    assert records == [rec]
    assert "fingerprint does not match" in problems[0] and "missing params" in problems[1]


def test_points_carry_their_own_timestamps_and_the_run_its_own_span():
    """Guards: every metric point was stamped with the ingest time, and runs spanned the ingest."""
    rec = _rec("a.train", metrics={"loss": [(10, 1.0, 1_000), (20, 0.5)]})
    assert rec["metrics"]["loss"] == [[10, 1.0, 1_000], [20, 0.5, 2_500]]  # no stamp: the run's end
    assert (rec["start_ms"], rec["end_ms"]) == (500, 2_500)


def test_parents_come_first_whatever_order_the_buffers_were_found_in():
    """Guards: sorted(rglob('tracking*.jsonl')) puts diagnose/evaluate before train, dropping parent links."""
    child, parent, other = _rec("a.evaluate", parent="a.train"), _rec("a.train"), _rec("b.diagnose", parent="x")
    order = [r["key"] for r in tb.parents_first([child, other, parent])]
    assert order.index("a.train") < order.index("a.evaluate")
    assert sorted(order) == ["a.evaluate", "a.train", "b.diagnose"]


def test_step_clock_keeps_the_first_attempts_start_and_times_across_a_resume(tmp_path):
    """Guards: a resumed leaf's run started at the resume (or at ingest) and lost the times of its early steps."""
    path = tmp_path / "tracking-clock.json"
    first = tb.StepClock(path, "h1", resuming=False)
    first.tick(10)
    t10 = first.at(10, -1)
    time.sleep(0.01)
    resumed = tb.StepClock(path, "h1", resuming=True)
    resumed.tick(20)
    assert resumed.start_ms == first.start_ms and resumed.at(10, -1) == t10
    assert resumed.series([(10, 1.0), (20, 0.5), (30, 0.1)], default_ms=7) == [
        [10, 1.0, t10],
        [20, 0.5, resumed.at(20, -1)],
        [30, 0.1, 7],
    ]
    assert resumed.at(20, -1) > t10
    assert tb.StepClock(path, "h2", resuming=True).at(10, -1) == -1  # another config: afresh
    assert tb.StepClock(path, "h1", resuming=False).at(10, -1) == -1  # nothing to resume: afresh


def test_artifact_paths_are_stored_relative_to_the_results_directory(tmp_path):
    """Guards: absolute artifact paths in buffers broke a replay after results/ moved."""
    results = tmp_path / "results"
    (results / "heads").mkdir(parents=True)
    inside, outside = results / "heads" / "claims.md", tmp_path / "elsewhere.md"
    assert tb.relative_artifacts([inside, outside], results) == ["heads/claims.md", str(outside.resolve())]
