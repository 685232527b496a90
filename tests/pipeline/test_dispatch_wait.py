"""How a dispatched step waits for its cluster job (seqmix.pipeline.dispatch.wait_for): submitit's cheap check
every poll, the cluster's accounting every ``state_check_s``. Without the forced checks a job that fails or is
cancelled (no result file) is seen only when submitit's own watcher next asks, up to 10 minutes later."""

from __future__ import annotations

import pytest

from seqmix.pipeline import dispatch


class FakeJob:
    """Reports done once ``done_after_forced`` forced checks have been made (a job only accounting knows has
    ended); records every check."""

    def __init__(self, done_after_forced: int):
        self.done_after_forced = done_after_forced
        self.checks: list[bool] = []

    def done(self, force_check: bool = False) -> bool:
        self.checks.append(force_check)
        return sum(self.checks) >= self.done_after_forced


@pytest.fixture
def clock(monkeypatch):
    """A fake monotonic clock that ``time.sleep`` advances."""
    now = [1000.0]
    monkeypatch.setattr(dispatch.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(dispatch.time, "sleep", lambda s: now.__setitem__(0, now[0] + s))
    return now


def test_the_cluster_is_asked_every_state_check_s(clock):
    job, pumps = FakeJob(done_after_forced=3), []
    dispatch.wait_for(job, poll_s=0.5, state_check_s=2.0, pump=lambda: pumps.append(clock[0]))
    # one forced check per 2 s of waiting (every 4th poll), none in between
    assert [i for i, forced in enumerate(job.checks) if forced] == [4, 8, 12]
    assert len(pumps) == 12 and clock[0] == pytest.approx(1006.0)


def test_a_job_done_at_once_is_not_waited_for(clock):
    class Finished:
        def done(self, force_check=False):
            return True

    dispatch.wait_for(Finished(), poll_s=5, state_check_s=20)
    assert clock[0] == 1000.0


def test_the_default_state_check_is_the_documented_one(root):
    import yaml

    cfg = yaml.safe_load((root / "config" / "config.yaml").read_text())
    assert cfg["submitit"]["state_check_s"] == dispatch.STATE_CHECK_S
    assert f"`submitit.state_check_s`, {dispatch.STATE_CHECK_S:g} s," in (root / "docs" / "cluster.md").read_text()


@pytest.mark.parametrize(
    "state,pickle,killed",
    [
        ("CANCELLED by 0", False, "CANCELLED by 0"),
        ("CANCELLED+", False, "CANCELLED+"),
        ("OUT_OF_MEMORY", False, "OUT_OF_MEMORY"),
        ("TIMEOUT", False, "TIMEOUT"),
        ("FAILED", False, None),  # its Python error may still be on its way to the result file
        ("COMPLETED", False, None),
        ("CANCELLED by 0", True, None),  # a result came first: submitit's result() reads it
    ],
)
def test_a_job_stopped_from_outside_is_failed_without_waiting_for_a_result(tmp_path, state, pickle, killed):
    """submitit's result() waits 15 s for a result file that a cancelled or killed job never writes."""

    class Paths:
        result_pickle = tmp_path / "0_result.pkl"

    class Job:
        paths = Paths()

    Job.state = state
    if pickle:
        Paths.result_pickle.write_bytes(b"")
    assert dispatch.killed_state(Job()) == killed
