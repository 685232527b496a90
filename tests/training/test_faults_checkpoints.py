"""Faults in what a run leaves on disk: corrupt checkpoints, corrupt summaries, a full disk (issue 12, part 2).

On the main branch before this file, a bit-flipped checkpoint was resumed silently (the run went on from
damaged weights), a truncated one crashed every re-run until deleted by hand, a truncated ``summary.csv``
was read as if whole, and a full disk surfaced as a torch stream-writer error. Each test below names the
fault it injects; each ends with the run's results bit-identical to an uninterrupted run.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from seqmix import io as sio
from seqmix.cli.main import main as cli_main
from seqmix.io import DiskFullError, checksum_path, config_hash, verify_checksum
from seqmix.results import CorruptResult, discard_corrupt, verify_summary
from seqmix.training import checkpoint as ck
from seqmix.training.loop import load_trained, train

STEPS, EVERY = 40, 10


def leaf_cfg(steps: int = STEPS) -> dict:
    """A tiny heads-paper leaf (as in test_training.py): trains 40 steps in well under a second."""
    return {
        "task": {"name": "rotation_teacher", "k": 4, "n": 8, "rho": 1.0, "test_size": 32, "test_seed": 1},
        "model": {"name": "bare", "mixer": {"name": "factorized_linear_attention", "heads": 2, "r": None}},
        "train": {
            "optimizer": "adam",
            "lr": 0.01,
            "schedule": "cosine",
            "steps": steps,
            "batch": 16,
            "checkpoint_every": EVERY,
            "log_every": 5,
            "dtype": "float32",
        },
        "eval": {},
        "seed": 0,
    }


def load(path: Path) -> dict:
    return torch.load(path, weights_only=True, map_location="cpu")


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict:
    """An uninterrupted run: its history and final weights."""
    cfg = leaf_cfg()
    out = tmp_path_factory.mktemp("fresh")
    result = train(cfg, out, config_hash(cfg))
    return {"history": result["history"], "model": load(out / "model.pt")}


def assert_same_as(reference: dict, result: dict, out: Path) -> None:
    assert result["history"] == reference["history"]
    model = load(out / "model.pt")
    assert model.keys() == reference["model"].keys()
    for name, value in model.items():
        assert torch.equal(value, reference["model"][name]), f"{name} differs from the uninterrupted run"


def interrupted(out: Path) -> Path:
    """Train until step 35 (checkpoints at 10, 20, 30): checkpoint.pt holds step 30, the previous one 20."""
    cfg = leaf_cfg()
    train(cfg, out, config_hash(cfg), stop_after=35)
    path = out / "checkpoint.pt"
    assert load(path)["step"] == 30 and load(ck.previous_path(path))["step"] == 20
    assert verify_checksum(path) is None and verify_checksum(ck.previous_path(path)) is None
    return path


def flip_a_bit(path: Path) -> None:
    """Flip one bit inside the stored bytes of a weight tensor: torch.load alone does not notice, and on the
    main branch before checksums the run resumed from the damaged weights and ended with other numbers."""
    state = load(path)
    weights = state["model"] if "model" in state else state
    tensor = max(weights.values(), key=lambda t: t.numel())
    raw = tensor.contiguous().numpy().tobytes()
    data = bytearray(path.read_bytes())
    at = data.find(raw)
    assert at >= 0, "the tensor's bytes are stored as they are in memory"
    data[at + 3] ^= 0x10  # an exponent bit of the first float32 (little-endian)
    path.write_bytes(bytes(data))


CORRUPTIONS = {
    "bit_flip": (flip_a_bit, "checksum mismatch"),
    "truncated": (lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 3]), "checksum mismatch"),
    "zero_length": (lambda p: p.write_bytes(b""), "empty file"),
    "missing_sidecar": (lambda p: checksum_path(p).unlink(), "no checksum"),
}


# ----------------------------------------------------------------------------- corrupt checkpoints


@pytest.mark.parametrize("fault", sorted(CORRUPTIONS))
def test_corrupt_latest_checkpoint_falls_back_to_the_previous_one(fault, tmp_path, reference, caplog):
    """A damaged checkpoint.pt is discarded with a warning naming it and why; the run resumes from the previous
    good checkpoint (step 20) and ends bit-identical to an uninterrupted run."""
    path = interrupted(tmp_path)
    damage, why = CORRUPTIONS[fault]
    damage(path)
    cfg = leaf_cfg()
    with caplog.at_level(logging.INFO, logger="seqmix.train"):
        result = train(cfg, tmp_path, config_hash(cfg))
    assert result["resumed_from"] == 20
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(str(path) in w and why in w for w in warnings), warnings
    assert_same_as(reference, result, tmp_path)
    assert verify_checksum(path) is None and load(path)["step"] == STEPS


@pytest.mark.parametrize("fault", sorted(CORRUPTIONS))
def test_both_checkpoints_corrupt_start_afresh(fault, tmp_path, reference, caplog):
    """With the previous checkpoint damaged too, training starts from step 0 (not a crash on every re-run)."""
    path = interrupted(tmp_path)
    damage, _ = CORRUPTIONS[fault]
    damage(path)
    damage(ck.previous_path(path))
    cfg = leaf_cfg()
    with caplog.at_level(logging.INFO, logger="seqmix.train"):
        result = train(cfg, tmp_path, config_hash(cfg))
    assert result["resumed_from"] is None
    assert "starts afresh" in caplog.text
    assert_same_as(reference, result, tmp_path)


def test_a_checkpoint_that_verifies_but_does_not_unpickle_is_discarded(tmp_path, caplog):
    """A file whose sidecar matches but which is not a torch checkpoint (written by mistake) is discarded."""
    path = tmp_path / "checkpoint.pt"
    sio.write_bytes(path, b"not a torch file", checksum=True)
    with caplog.at_level(logging.WARNING, logger="seqmix.train"):
        assert ck.load_checkpoint(path) is None
    assert "does not load" in caplog.text and str(path) in caplog.text


def _state(step: int) -> dict:
    return {
        "model": {"w": torch.full((3,), float(step))},
        "optimizer": {},
        "scheduler": {},
        "step": step,
        "history": {"step": [step]},
        "config_hash": "h",
    }


def test_a_kill_at_any_moment_of_a_save_leaves_checkpoint_pt_usable(tmp_path, monkeypatch):
    """Kill a save of step 20 (over step 10) after each of its file operations in turn: checkpoint.pt itself
    still verifies and holds step 10 or 20, so a plain kill never costs a checkpoint or logs a warning."""
    real_replace, calls = os.replace, {"n": 0, "kill_at": None}

    class Killed(Exception):
        pass

    def replace(src, dst):
        calls["n"] += 1
        if calls["n"] == calls["kill_at"]:
            raise Killed
        return real_replace(src, dst)

    monkeypatch.setattr(sio.os, "replace", replace)
    kill_at = 1
    while True:
        d = tmp_path / f"kill{kill_at}"
        ck.save_checkpoint(_state(10), d / "checkpoint.pt")
        ck.save_checkpoint(_state(15), d / "checkpoint.pt")  # so a previous checkpoint exists as well
        calls.update(n=0, kill_at=kill_at)
        try:
            ck.save_checkpoint(_state(20), d / "checkpoint.pt")
            finished = True
        except Killed:
            finished = False
        calls["kill_at"] = None
        assert verify_checksum(d / "checkpoint.pt") is None, f"killed at file operation {kill_at}"
        assert ck.load_checkpoint(d / "checkpoint.pt")["step"] in (15, 20)
        if finished:
            break
        kill_at += 1
    assert kill_at > 3, "the save should take several file operations"
    assert load(d / "checkpoint.pt")["step"] == 20 and load(ck.previous_path(d / "checkpoint.pt"))["step"] == 15


def test_exception_after_a_checkpoint_resumes_bit_identically(tmp_path, reference, monkeypatch):
    """A job dying mid-run (an exception injected at step 25, after the step-20 checkpoint) resumes from step
    20 and ends bit-identical to an uninterrupted run."""
    from seqmix.tasks.rotation_teacher import RotationTeacher

    real_loss, seen = RotationTeacher.loss, {"n": 0}

    def dying_loss(self, pred, target):
        seen["n"] += 1
        if seen["n"] == 26:  # step 25
            raise KeyboardInterrupt("killed")
        return real_loss(self, pred, target)

    cfg = leaf_cfg()
    monkeypatch.setattr(RotationTeacher, "loss", dying_loss)
    with pytest.raises(KeyboardInterrupt):
        train(cfg, tmp_path, config_hash(cfg))
    monkeypatch.setattr(RotationTeacher, "loss", real_loss)
    result = train(cfg, tmp_path, config_hash(cfg))
    assert result["resumed_from"] == 20
    assert_same_as(reference, result, tmp_path)


@pytest.mark.parametrize("fault", ["bit_flip", "truncated", "zero_length"])
def test_a_damaged_model_pt_is_remade_from_the_final_checkpoint(fault, tmp_path, reference, caplog):
    """The evaluate/diagnose stages load model.pt: a damaged one is remade, with a warning, from the final
    checkpoint (the same tensors), instead of being evaluated as it is or crashing every re-run."""
    cfg = leaf_cfg()
    train(cfg, tmp_path, config_hash(cfg))
    CORRUPTIONS[fault][0](tmp_path / "model.pt")
    with caplog.at_level(logging.WARNING, logger="seqmix.train"):
        _, model = load_trained(cfg, tmp_path)
    assert "model.pt" in caplog.text and "remaking it from the final checkpoint" in caplog.text
    for name, value in model.state_dict().items():
        assert torch.equal(value, reference["model"][name]), name
    assert verify_checksum(tmp_path / "model.pt") is None  # written back whole


def test_a_damaged_model_pt_without_a_final_checkpoint_says_how_to_retrain(tmp_path):
    cfg = leaf_cfg()
    train(cfg, tmp_path, config_hash(cfg))
    flip_a_bit(tmp_path / "model.pt")
    for p in (tmp_path / "checkpoint.pt", ck.previous_path(tmp_path / "checkpoint.pt")):
        p.unlink()
    with pytest.raises(CorruptResult, match=r"model\.pt: checksum mismatch.*delete .*train\.done\.json"):
        load_trained(cfg, tmp_path)


def test_a_damaged_diagnose_csv_is_measured_again(tmp_path):
    """diagnose.csv (the rows the cell summary gathers) carries a checksum; a truncated one makes the leaf
    not done, so the stage measures it again instead of gathering what is left."""
    from seqmix.pipeline import stages

    cfg = {
        "task": {"name": "lag_sensitivity", "d": 4, "T": [2, 5], "draws": 2},
        "model": {"name": "bare", "mixer": {"name": "linear_ssm", "state": 3}},
        "train": {"dtype": "float64"},
        "eval": {},
        "variant": "ssm",
        "point": "-",
        "seed": 0,
    }
    leaf = {"id": "ssm/-/seed0", "hash": config_hash(cfg), "out_dir": str(tmp_path / "ssm"), "config": cfg}
    run = {"paper": "heads", "experiment": "exp2", "cell": "ssm-0", "scale": "tiny", "results": str(tmp_path)}
    run.update(tracking={"uri": "none"}, leaves=[leaf])
    first = stages.run_stage("diagnose", run)
    rows_csv = tmp_path / "ssm" / "diagnose.csv"
    rows_csv.write_text("\n".join(rows_csv.read_text().splitlines()[:-1]) + "\n")  # the last row lost
    again = stages.run_stage("diagnose", run)
    assert again["rows"] == first["rows"] and len(again["rows"]) == 4
    assert verify_checksum(rows_csv) is None


# ----------------------------------------------------------------------------- summaries


def _collect(tmp_path: Path) -> Path:
    cells = []
    for i in range(2):
        cell = tmp_path / "cells" / f"c-{i}.evaluate.json"
        sio.write_json(cell, {"leaves": [{"id": f"leaf{i}", "seed": i, "mse": 0.25 + i}]}, checksum=True)
        cells.append(str(cell))
    out = tmp_path / "exp1" / "summary.csv"
    cli_main(["collect", "--out", str(out), *cells])
    return out


def test_collect_writes_a_summary_with_a_checksum(tmp_path):
    out = _collect(tmp_path)
    assert out.read_text().splitlines() == ["id,mse,seed", "leaf0,0.25,0", "leaf1,1.25,1"]
    assert checksum_path(out).exists()
    verify_summary(out)  # whole: no error
    assert discard_corrupt([out]) == [] and out.exists()


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: p.write_text(p.read_text()[:-7]),  # truncated inside the last row
        lambda p: p.write_text("\n".join(p.read_text().splitlines()[:-1]) + "\n"),  # a whole row lost
        lambda p: p.write_text(p.read_text().replace("1.25", "1.26")),  # garbled
    ],
    ids=["truncated_mid_row", "truncated_at_row", "garbled"],
)
def test_a_corrupt_summary_is_refused_and_moved_aside_for_the_dag(tmp_path, damage):
    """The reader refuses a damaged summary.csv with its path and how to remake it; ``discard_corrupt`` (run by
    the DAG before it is built) moves it aside, so Snakemake sees it missing and reruns collect."""
    out = _collect(tmp_path)
    damage(out)
    with pytest.raises(CorruptResult, match=r"summary\.csv: checksum mismatch.*makes it again"):
        verify_summary(out)
    assert discard_corrupt([out, tmp_path / "never-written.csv"]) == [out]
    assert not out.exists() and not checksum_path(out).exists()
    assert (out.parent / "summary.csv.corrupt").exists()


def test_a_summary_without_checksum_is_refused_and_moved_aside(tmp_path):
    """A summary with no checksum (its sidecar deleted, or written before summaries had one) cannot be told
    from an edited one: refused, and moved aside so the DAG makes it again (issue 26; it was read with a
    warning)."""
    out = tmp_path / "summary.csv"
    out.write_text("a,b\n1,2\n")
    with pytest.raises(CorruptResult, match=r"summary\.csv: no checksum.*makes it again"):
        verify_summary(out)
    assert discard_corrupt([out]) == [out]


def test_a_truncated_cell_marker_is_moved_aside(tmp_path):
    """A cell marker (collect's input, no checksum) that does not parse is treated as not made."""
    good, bad = tmp_path / "c-0.train.json", tmp_path / "c-1.train.json"
    sio.write_json(good, {"leaves": []})
    bad.write_text(json.dumps({"leaves": [{"id": "x"}]})[:9])
    assert discard_corrupt([good, bad]) == [bad]
    assert good.exists() and not bad.exists()


# ----------------------------------------------------------------------------- a full disk


class _FullDisk:
    """``open`` replacement whose files raise ENOSPC (or EDQUOT) on write, as a full disk does."""

    def __init__(self, code: int = errno.ENOSPC):
        self.code, self.real = code, open

    def __call__(self, path, mode="r", *args, **kwargs):
        f = self.real(path, mode, *args, **kwargs)
        if "w" in mode:
            code = self.code

            def write(_data):
                raise OSError(code, os.strerror(code))

            f.write = write
        return f


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT], ids=["ENOSPC", "EDQUOT"])
def test_disk_full_names_the_file_and_the_space_left(tmp_path, monkeypatch, code):
    target = tmp_path / "sub" / "summary.csv"
    target.parent.mkdir()
    target.write_text("old\n")
    monkeypatch.setattr(sio, "open", _FullDisk(code), raising=False)
    with pytest.raises(DiskFullError) as exc:
        sio.write_text(target, "new\n")
    assert isinstance(exc.value, OSError) and exc.value.errno == code
    assert str(target) in str(exc.value) and "MiB free" in str(exc.value)
    assert target.read_text() == "old\n"
    assert [p.name for p in target.parent.iterdir()] == ["summary.csv"], "no temporary file is left"


def test_disk_full_while_checkpointing_is_a_disk_full_error_not_a_torch_error(tmp_path, monkeypatch):
    monkeypatch.setattr(sio, "open", _FullDisk(), raising=False)
    cfg = leaf_cfg()
    with pytest.raises(DiskFullError, match=r"no space left on device writing .*checkpoint\.pt"):
        train(cfg, tmp_path, config_hash(cfg))


_FULL_DISK_CLI = """
import errno, os, sys
import seqmix.io as sio
real = open
class F:
    def __init__(self, f): self.f = f
    def write(self, _): raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    def __getattr__(self, name): return getattr(self.f, name)
    def __enter__(self): return self
    def __exit__(self, *a): self.f.close()
sio.open = lambda p, mode="r", *a, **k: F(real(p, mode, *a, **k)) if "w" in mode else real(p, mode, *a, **k)
from seqmix.cli.main import main
main(sys.argv[1:])
"""


def test_cli_stage_writes_the_disk_full_message_to_the_rule_log(tmp_path):
    """The rule's log (the job's stderr) gets one line naming the file and the space left, and so does stdout
    (Snakemake's console, for when the log itself is on the full disk); the exit is non-zero."""
    cell = tmp_path / "c-0.evaluate.json"
    sio.write_json(cell, {"leaves": [{"id": "a", "mse": 1.0}]}, checksum=True)
    out = tmp_path / "exp1" / "summary.csv"
    log = tmp_path / "collect.log"
    with open(log, "w") as err:
        proc = subprocess.run(
            [sys.executable, "-c", _FULL_DISK_CLI, "collect", "--out", str(out), str(cell)],
            stderr=err,
            stdout=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert proc.returncode != 0
    text = log.read_text()
    line = f"seqmix collect: [Errno {errno.ENOSPC}] no space left on device writing {out}"
    assert line in text and line in proc.stdout, "in the log and on Snakemake's console"
    assert "MiB free" in text and "Traceback" not in text
    assert not out.exists()


def test_train_stage_on_a_full_disk_names_the_file_not_a_torch_error(tmp_path):
    """On main a full disk during training surfaced as torch's 'PytorchStreamWriter failed writing file';
    now the train job's log says which file could not be written and how much space is left."""
    from seqmix.config.leaves import Leaf, cell_run_config

    cfg = dict(leaf_cfg(), paper="heads", experiment="exp1", variant="k4", point="H2", sweep_value=2)
    leaf = Leaf("heads", "exp1", "k4", "H2", 0, cfg)
    settings = {"results": str(tmp_path), "tracking": {"uri": "none"}}
    run = cell_run_config("heads", "exp1", "k4-0", [leaf], "tiny", settings)
    sio.write_json(tmp_path / "run.json", run)
    log = tmp_path / "train.log"
    with open(log, "w") as err:
        proc = subprocess.run(
            [sys.executable, "-c", _FULL_DISK_CLI, "train", "--run", str(tmp_path / "run.json"), "--out", "c.json"],
            cwd=tmp_path,
            stderr=err,
            stdout=subprocess.DEVNULL,
            timeout=120,
            env=dict(os.environ, OMP_NUM_THREADS="1"),
        )
    assert proc.returncode != 0
    text = log.read_text()
    # the first file the leaf writes (its tracking clock, then its checkpoint) is named, with the space left
    out_dir = Path(run["leaves"][0]["out_dir"])
    assert f"seqmix train: [Errno {errno.ENOSPC}] no space left on device writing {out_dir}/" in text, text[-2000:]
    assert "MiB free" in text
    assert "PytorchStreamWriter" not in text and "Traceback" not in text


def test_progress_reports_a_damaged_checkpoint_instead_of_crashing(tmp_path):
    """`seqmix progress` read checkpoint.pt with torch.load and died on a truncated one (main)."""
    from seqmix.cli.status import _leaf_status

    out = tmp_path / "leaf"
    interrupted(out)
    (out / "checkpoint.pt").write_bytes((out / "checkpoint.pt").read_bytes()[:100])
    leaf = {"out_dir": str(out), "hash": config_hash(leaf_cfg()), "config": leaf_cfg()}
    assert _leaf_status(leaf, ["mse"]) == ("damaged checkpoint", [""], set())
