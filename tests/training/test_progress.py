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


def test_bar_names_the_leaf_and_logs_go_above_it(tmp_path, monkeypatch, capsys):
    """The bar was labelled 'seed0' (every leaf's) and log lines broke it."""
    import logging

    assert progress.leaf_label("results/tiny/heads/exp1/k4/H2/seed0") == "heads/exp1/k4/H2/seed0"
    bars = []
    real = progress.StepBar

    def record(total, initial, desc, enabled=None):
        bar = real(total, initial, desc, enabled=True)
        bars.append((desc, bar))
        return bar

    monkeypatch.setattr("seqmix.training.loop.StepBar", record)
    cfg = leaf_cfg(steps=6, log_every=3, checkpoint_every=10)
    out = tmp_path / "p" / "e1" / "v" / "pt" / "seed0"
    train(cfg, out, config_hash(cfg))
    assert bars[0][0] == "p/e1/v/pt/seed0"
    logging.getLogger().addHandler(console := logging.StreamHandler())  # a job's stderr handler
    try:
        bar = real(3, 0, "x", enabled=True)
        during = [type(h).__name__ for h in logging.getLogger().handlers]
        bar.close()
        after = [type(h).__name__ for h in logging.getLogger().handlers]
    finally:
        logging.getLogger().removeHandler(console)
    assert "_TqdmLoggingHandler" in during  # records are written by tqdm, above the bar
    assert "_TqdmLoggingHandler" not in after and "StreamHandler" in after  # and the console comes back
