"""One tqdm bar per training job on a terminal, none in logs or CI (issue 12 §3: progress prints by a library)."""

from __future__ import annotations

import io

from seqmix.io import config_hash
from seqmix.training import progress
from seqmix.training.loop import train
from tests.training.test_loop import leaf_cfg


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_bar_only_on_a_terminal_outside_ci(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("SEQMIX_PROGRESS", raising=False)
    assert progress.wanted(FakeTTY()) and not progress.wanted(io.StringIO())  # a rule log is a file
    monkeypatch.setenv("CI", "true")
    assert not progress.wanted(FakeTTY())
    monkeypatch.delenv("CI")
    monkeypatch.setenv("SEQMIX_PROGRESS", "0")
    assert not progress.wanted(FakeTTY())


def test_training_job_draws_one_bar_that_counts_every_step(tmp_path, monkeypatch, capsys):
    bars = []
    real = progress.StepBar

    def record(total, initial, desc, enabled=None):
        bar = real(total, initial, desc, enabled=True)
        bars.append(bar)
        return bar

    monkeypatch.setattr("seqmix.training.loop.StepBar", record)
    cfg = leaf_cfg(steps=23, log_every=5, checkpoint_every=10)
    train(cfg, tmp_path, config_hash(cfg))
    assert len(bars) == 1 and bars[0].n == 23
    assert "/23" in capsys.readouterr().err  # tqdm renders on stderr


def test_no_bar_when_not_wanted(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CI", "1")
    cfg = leaf_cfg(steps=10, log_every=5, checkpoint_every=10)
    train(cfg, tmp_path, config_hash(cfg))
    assert "step/s" not in capsys.readouterr().err and "it/s" not in capsys.readouterr().err
