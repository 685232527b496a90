"""System metrics of training jobs: sampled into the leaf's buffer as system/* series (the MLflow UI's
"System metrics" tab), replayed into the store with the run, logged live with a server, kept across a
resume, and absent when switched off."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from seqmix.pipeline import stages
from seqmix.tracking import buffer as tb
from seqmix.tracking import live as tracking_live
from seqmix.tracking import runs as tracking
from seqmix.tracking import store as tracking_store
from seqmix.tracking import system

from .test_server import small_run
from .test_store import _runs

pytestmark = pytest.mark.timeout(300)

HOST = {
    "system/cpu_utilization_percentage",
    "system/system_memory_usage_megabytes",
    "system/system_memory_usage_percentage",
    "system/process_cpu_utilization_percentage",
    "system/process_memory_rss_megabytes",
}


def _one_leaf(tmp_path: Path, uri: str, **tracking_opts) -> dict:
    run = small_run(tmp_path, uri, steps=4, log_every=2, checkpoint_every=4)
    run["leaves"] = run["leaves"][:1]
    run["tracking"].update(tracking_opts)
    return run


def _record(run: dict) -> dict:
    (rec,) = tb.read_buffer(Path(run["leaves"][0]["out_dir"]) / "tracking-train.jsonl")
    return rec


def test_a_training_run_carries_its_system_metrics_into_mlflow(tmp_path, template_db):
    """Guards: runs had no system metrics (the run page's "System metrics" tab was empty)."""
    results = tmp_path / "results"
    results.mkdir()
    shutil.copy(template_db, results / "mlflow.db")
    uri = f"sqlite:///{results / 'mlflow.db'}"
    run = _one_leaf(tmp_path, uri, system_metrics_every_s=3600)  # shorter than one interval: one sample, at the end
    stages.run_stage("train", run)
    rec = _record(run)
    got = {k: v for k, v in rec["metrics"].items() if k.startswith("system/")}
    assert set(got) == HOST  # on CPU: no cuda_* series
    for series in got.values():
        ((step, value, ms),) = series
        assert step == 0 and rec["start_ms"] <= ms <= rec["end_ms"] and value >= 0
    assert got["system/process_memory_rss_megabytes"][0][1] > 10  # a Python process holding torch
    assert 0 < got["system/system_memory_usage_percentage"][0][1] < 100
    assert (Path(run["leaves"][0]["out_dir"]) / system.FILE).exists()
    tracking.ingest([Path(run["leaves"][0]["out_dir"]) / "tracking-train.jsonl"], uri, results)
    mlf, _, (mlrun,) = _runs(uri)
    assert HOST <= set(mlrun.data.metrics)
    (point,) = mlf.get_metric_history(mlrun.info.run_id, "system/process_memory_rss_megabytes")
    assert (point.step, point.value, point.timestamp) == tuple(got["system/process_memory_rss_megabytes"][0])


def test_switched_off_a_training_run_has_no_system_metrics(tmp_path):
    run = _one_leaf(tmp_path, "none", system_metrics=False)
    stages.run_stage("train", run)
    assert not [k for k in _record(run)["metrics"] if k.startswith("system/")]
    assert "train_loss" in _record(run)["metrics"]
    assert not (Path(run["leaves"][0]["out_dir"]) / system.FILE).exists()
    assert system.settings({"uri": "none"}) == system.DEFAULT_EVERY_S  # on unless switched off
    assert system.settings({"uri": "none", "system_metrics_every_s": 2}) == 2.0


class _FakeLive:
    """Stands in for a server's LiveRun: what the job logs live, and the record it ends with."""

    made: list[_FakeLive] = []

    def __init__(self, *args, **kwargs):
        self.points: list[tuple[int, dict, int | None]] = []
        self.record = None
        _FakeLive.made.append(self)

    def log(self, step, metrics, timestamp_ms=None):
        self.points.append((step, dict(metrics), timestamp_ms))
        if len(self.points) == 1:
            time.sleep(0.3)  # the sampler (every 20 ms) takes samples before the next logged step

    def set_tags(self, tags):
        pass

    def end(self, record, status="FINISHED"):
        self.record = record
        return True


def test_with_a_server_the_samples_are_logged_live_as_they_come(tmp_path, monkeypatch):
    monkeypatch.setattr(tracking_store, "is_live", lambda uri: True)
    monkeypatch.setattr(tracking_live, "LiveRun", _FakeLive)
    _FakeLive.made.clear()
    run = _one_leaf(tmp_path, "none", system_metrics_every_s=0.02)
    stages.run_stage("train", run)
    (live,) = _FakeLive.made
    sent = [(step, m, ms) for step, m, ms in live.points if any(k.startswith("system/") for k in m)]
    assert sent, "no system sample reached the live run while it trained"
    assert all(set(m) == HOST for _, m, _ in sent)
    steps = [step for step, _, _ in sent]
    assert steps == list(range(len(steps)))  # each sample once, in order
    # what was sent live is what the buffer record holds (LiveRun.end logs the rest from it)
    series = live.record["metrics"]["system/process_memory_rss_megabytes"]
    for step, m, ms in sent:
        assert series[step] == [step, m["system/process_memory_rss_megabytes"], ms]
    assert len(series) >= len(sent) + 1  # the last sample, taken when training ended


def test_samples_are_taken_every_interval_and_kept_across_a_resume(tmp_path, caplog):
    """A resumed leaf's run keeps the samples of the attempt before the kill; another config starts afresh."""
    first = system.SystemSampler(tmp_path, "h1", resuming=False, every_s=0.05).start()
    time.sleep(0.4)
    first.stop()
    n = len(first.samples)
    assert n >= 3  # several intervals, then the last sample at stop
    rss = first.series()["system/process_memory_rss_megabytes"]
    assert [p[0] for p in rss] == list(range(n)) and [p[2] for p in rss] == sorted(p[2] for p in rss)
    cpu = [p[1] for p in first.series()["system/process_cpu_utilization_percentage"]]
    assert all(0 <= v <= 100 * (os.cpu_count() or 1) + 1 for v in cpu)
    resumed = system.SystemSampler(tmp_path, "h1", resuming=True, every_s=3600).start()
    assert resumed.take_new() == []  # the earlier attempt's samples reach a live run with the record
    resumed.stop()
    assert [p[0] for p in resumed.series()["system/process_memory_rss_megabytes"]] == list(range(n + 1))
    assert [s for s, _, _ in resumed.take_new()] == [n]
    assert system.SystemSampler(tmp_path, "h2", resuming=True, every_s=1).samples == []  # another config
    assert system.SystemSampler(tmp_path, "h1", resuming=False, every_s=1).samples == []  # no checkpoint
    (tmp_path / system.FILE).write_text('{"config_hash": "h1", "samples": [[1, ')  # cut by a kill or a full disk
    assert system.SystemSampler(tmp_path, "h1", resuming=True, every_s=1).samples == []
    assert str(tmp_path / system.FILE) in caplog.text and "start afresh" in caplog.text


def test_cpu_shares_read_on_the_sampler_thread_measure_the_interval_before():
    """Guards: psutil.cpu_percent(None) keeps its reference point per thread, so the sampler thread's first
    sample read 0 % on a busy machine."""
    import threading

    host = system.HostReader()
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 0.3:  # this process busy on one core
        pass
    got = {}
    reader = threading.Thread(target=lambda: got.update(host.read()))
    reader.start()
    reader.join()
    assert got["cpu_utilization_percentage"] > 100 / (os.cpu_count() or 1) / 2
    assert got["process_cpu_utilization_percentage"] > 30


def test_a_system_that_cannot_be_read_only_warns(tmp_path, monkeypatch, caplog):
    def broken(self):
        raise OSError("no /proc here")

    monkeypatch.setattr(system.HostReader, "read", broken)
    sampler = system.SystemSampler(tmp_path, "h", resuming=False, every_s=0.01).start()
    time.sleep(0.05)
    sampler.stop()
    assert sampler.series() == {} and "system metrics stopped: OSError: no /proc here" in caplog.text


def test_on_cuda_a_sample_carries_torchs_allocator_figures(monkeypatch):
    """The CUDA branch, without a GPU: the allocator's bytes of the job's device, in megabytes."""
    import torch

    asked = []

    def fake(value):
        return lambda device: asked.append(device) or value

    monkeypatch.setattr(torch.cuda, "memory_allocated", fake(3e6))
    monkeypatch.setattr(torch.cuda, "memory_reserved", fake(8e6))
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", fake(5e6))
    got = system.HostReader("cuda:1").read()
    assert got["cuda_memory_allocated_megabytes"] == 3.0 and got["cuda_memory_reserved_megabytes"] == 8.0
    assert got["cuda_peak_memory_allocated_megabytes"] == 5.0 and set(asked) == {"cuda:1"}
    assert system.SystemSampler(".", "h", False, 1, device="cuda:1").cuda == "cuda:1"
    assert system.SystemSampler(".", "h", False, 1, device="cpu").cuda is None
    assert not [k for k in system.HostReader(None).read() if k.startswith("cuda")]
