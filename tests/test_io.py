"""Atomic writes and canonical JSON (seqmix.io)."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from seqmix.io import atomic_path, canonical_json, config_hash, read_json, torch_save, write_json, write_text


def _strict_loads(text: str):
    """json.loads that refuses NaN / Infinity (not JSON)."""

    def refuse(const):
        raise ValueError(f"non-standard JSON constant {const}")

    return json.loads(text, parse_constant=refuse)


def _leftovers(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir() if ".tmp-" in p.name)


# ----------------------------------------------------------------------------- atomic_path


def test_atomic_path_renames_on_success(tmp_path):
    target = tmp_path / "out.txt"
    with atomic_path(target) as tmp:
        assert tmp.parent == target.parent  # same filesystem, so the rename is atomic
        assert tmp != target
        assert not target.exists()
        tmp.write_text("new")
    assert target.read_text() == "new"
    assert _leftovers(tmp_path) == []


def test_atomic_path_exception_leaves_existing_target_untouched(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError, match="boom"):
        with atomic_path(target) as tmp:
            tmp.write_text("half-writ")
            raise RuntimeError("boom")
    assert target.read_text() == "old"
    assert _leftovers(tmp_path) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_atomic_path_exception_creates_no_target(tmp_path):
    target = tmp_path / "sub" / "out.json"
    with pytest.raises(KeyError):
        with atomic_path(target) as tmp:
            tmp.write_text("{")
            raise KeyError("x")
    assert not target.exists()
    assert _leftovers(target.parent) == []


def test_write_text_creates_parents_and_replaces(tmp_path):
    target = tmp_path / "a" / "b" / "c.txt"
    write_text(target, "one")
    write_text(target, "two")
    assert target.read_text() == "two"
    assert _leftovers(target.parent) == []


def test_written_files_get_the_umask_mode(tmp_path):
    """mkstemp creates 0600 files; outputs must be readable like any other file (shared results dirs)."""
    old = os.umask(0o022)
    try:
        write_text(tmp_path / "t.txt", "x")
        write_json(tmp_path / "j.json", {"a": 1})
        torch_save({"w": torch.zeros(1)}, tmp_path / "m.pt")
    finally:
        os.umask(old)
    for name in ("t.txt", "j.json", "m.pt"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o644, name


def test_failing_json_write_leaves_target_untouched(tmp_path):
    target = tmp_path / "out.json"
    write_json(target, {"a": 1})
    with pytest.raises(TypeError, match="not JSON-serialisable"):
        write_json(target, {"a": object()})
    assert read_json(target) == {"a": 1}
    assert _leftovers(tmp_path) == []


# ----------------------------------------------------------------------------- write_json


def test_write_json_sorts_keys_at_every_level(tmp_path):
    target = tmp_path / "out.json"
    write_json(target, {"b": 1, "a": {"z": 1, "y": [{"q": 1, "p": 2}]}, "c": None})
    text = target.read_text()
    assert text.endswith("\n")
    assert text.index('"a"') < text.index('"b"') < text.index('"c"')
    assert text.index('"y"') < text.index('"z"')
    assert text.index('"p"') < text.index('"q"')
    assert read_json(target) == {"a": {"y": [{"p": 2, "q": 1}], "z": 1}, "b": 1, "c": None}


def test_write_json_indent_none_is_one_line(tmp_path):
    target = tmp_path / "out.json"
    write_json(target, {"b": 1, "a": 2}, indent=None)
    assert target.read_text() == '{"a": 2, "b": 1}\n'


def test_write_json_nonfinite_floats_become_null(tmp_path):
    target = tmp_path / "out.json"
    write_json(
        target,
        {
            "nan": float("nan"),
            "inf": float("inf"),
            "ninf": -float("inf"),
            "ok": 1.5,
            "nested": {"l": [1.0, float("nan")], "t": (float("inf"), 2)},
        },
    )
    data = _strict_loads(target.read_text())
    assert data == {"nan": None, "inf": None, "ninf": None, "ok": 1.5, "nested": {"l": [1.0, None], "t": [None, 2]}}


def test_write_json_numpy_and_torch_values(tmp_path):
    target = tmp_path / "out.json"
    write_json(
        target,
        {
            "np_nan": np.float32("nan"),
            "np_inf": np.float64("inf"),
            "np_int": np.int64(3),
            "np_f32": np.float32(0.5),
            "t_nan": torch.tensor(float("nan")),
            "t_one": torch.tensor(1.0),
            "np_arr": np.array([1.0, np.nan]),
            "t_arr": torch.tensor([[1.0, float("inf")]]),
            "path": Path("a/b"),
        },
    )
    data = _strict_loads(target.read_text())
    assert data == {
        "np_nan": None,
        "np_inf": None,
        "np_int": 3,
        "np_f32": 0.5,
        "t_nan": None,
        "t_one": 1.0,
        "np_arr": [1.0, None],
        "t_arr": [[1.0, None]],
        "path": "a/b",
    }


def test_read_json_round_trip(tmp_path):
    obj = {"x": [1, 2, {"y": "z"}], "f": 0.1, "b": True, "n": None}
    write_json(tmp_path / "r.json", obj)
    assert read_json(tmp_path / "r.json") == obj


# ----------------------------------------------------------------------------- canonical JSON and hashes


def test_canonical_json_is_compact_and_sorted():
    assert canonical_json({"b": [1, 2], "a": {"d": 1, "c": "x"}}) == '{"a":{"c":"x","d":1},"b":[1,2]}'
    assert canonical_json({"p": Path("x/y"), "n": np.int64(2)}) == '{"n":2,"p":"x/y"}'


def test_config_hash_is_stable_across_key_order():
    a = {"task": {"k": 4, "n": 8}, "train": {"lr": 0.01, "steps": 10}, "seed": 0}
    b = {"seed": 0, "train": {"steps": 10, "lr": 0.01}, "task": {"n": 8, "k": 4}}
    assert config_hash(a) == config_hash(b)
    assert config_hash(a) == hashlib.sha256(canonical_json(a).encode()).hexdigest()[:12]
    h = config_hash(a)
    assert len(h) == 12 and all(c in "0123456789abcdef" for c in h)
    assert len(config_hash(a, length=20)) == 20 and config_hash(a, length=20).startswith(h)


@pytest.mark.parametrize("change", [("task", "k", 6), ("train", "lr", 0.02), ("train", "steps", 11)])
def test_config_hash_changes_with_a_value(change):
    a = {"task": {"k": 4, "n": 8}, "train": {"lr": 0.01, "steps": 10}, "seed": 0}
    b = json.loads(json.dumps(a))
    block, key, value = change
    b[block][key] = value
    assert config_hash(a) != config_hash(b)


def test_config_hash_distinguishes_types_and_structure():
    assert config_hash({"a": 1}) != config_hash({"a": "1"})
    assert config_hash({"a": [1, 2]}) != config_hash({"a": [2, 1]})
    assert config_hash({"a": None}) != config_hash({})


def test_canonical_json_rejects_unknown_types():
    with pytest.raises(TypeError, match="not JSON-serialisable"):
        canonical_json({"a": object()})


# ----------------------------------------------------------------------------- torch_save


def test_torch_save_is_atomic_and_loads_with_weights_only(tmp_path):
    target = tmp_path / "ckpt.pt"
    obj = {"model": {"w": torch.arange(4.0)}, "step": 3, "history": {"step": [1], "train_loss": [0.5]}}
    torch_save(obj, target)
    back = torch.load(target, weights_only=True)
    assert torch.equal(back["model"]["w"], obj["model"]["w"])
    assert back["step"] == 3 and back["history"] == obj["history"]
    assert _leftovers(tmp_path) == []


# ----------------------------------------------------------------------------- stale temporary files


def _dead_pid() -> int:
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_next_write_removes_temporaries_a_killed_writer_left(tmp_path):
    """A kill leaves ``.<name>.tmp-*`` behind (main never removed them): the next write of the same target
    removes those of dead writers and old ones, keeps a live writer's, and leaves other targets' alone."""
    from seqmix.io import _host

    target = tmp_path / "checkpoint.pt"
    host = _host()
    dead = tmp_path / f".checkpoint.pt.tmp-{host}-{_dead_pid()}-abc123"
    live = tmp_path / f".checkpoint.pt.tmp-{host}-{os.getpid()}-def456"
    other_host_fresh = tmp_path / ".checkpoint.pt.tmp-elsewhere-1-ghi789"
    other_host_old = tmp_path / ".checkpoint.pt.tmp-elsewhere-2-jkl012"
    legacy_old = tmp_path / ".checkpoint.pt.tmp-x8y9z0ab"  # the naming before writers were recorded
    other_target = tmp_path / f".model.pt.tmp-{host}-{_dead_pid()}-mno345"
    for p in (dead, live, other_host_fresh, other_host_old, legacy_old, other_target):
        p.write_bytes(b"partial")
    two_hours_ago = time.time() - 7200
    for p in (other_host_old, legacy_old):
        os.utime(p, (two_hours_ago, two_hours_ago))
    write_text(target, "new")
    assert target.read_text() == "new"
    assert _leftovers(tmp_path) == sorted(p.name for p in (live, other_host_fresh, other_target))


def test_temporary_names_record_host_and_pid(tmp_path):
    from seqmix.io import _host

    with atomic_path(tmp_path / "a.txt") as tmp:
        assert tmp.name.startswith(f".a.txt.tmp-{_host()}-{os.getpid()}-")
        tmp.write_text("x")


# ----------------------------------------------------------------------------- checksums


def test_checksummed_write_verifies_and_detects_damage(tmp_path):
    from seqmix.io import checksum_path, verify_checksum, write_bytes

    target = tmp_path / "summary.csv"
    write_bytes(target, b"a,b\n1,2\n", checksum=True)
    side = checksum_path(target)
    assert side.name == "summary.csv.sha256"
    digest = hashlib.sha256(b"a,b\n1,2\n").hexdigest()
    assert side.read_text() == f"{digest}  summary.csv\n"
    assert verify_checksum(target) is None
    target.write_bytes(b"a,b\n1,")
    assert verify_checksum(target).startswith("checksum mismatch")
    target.write_bytes(b"")
    assert verify_checksum(target) == "empty file"
    side.unlink()
    assert "no checksum" in verify_checksum(target)
    assert verify_checksum(tmp_path / "absent") == "missing"


def test_sidecar_accepts_old_and_new_digest_only_while_the_file_is_replaced(tmp_path, monkeypatch):
    """Killed between the sidecar and the rename, the old file still verifies; after the write only the new."""
    import seqmix.io as sio
    from seqmix.io import recorded_digests, verify_checksum, write_bytes

    target = tmp_path / "f.bin"
    write_bytes(target, b"old", checksum=True)
    real = sio.os.replace

    def killed_at_rename(src, dst):
        if Path(dst) == target:
            raise KeyboardInterrupt
        return real(src, dst)

    monkeypatch.setattr(sio.os, "replace", killed_at_rename)
    with pytest.raises(KeyboardInterrupt):
        write_bytes(target, b"new", checksum=True)
    assert target.read_bytes() == b"old" and verify_checksum(target) is None
    assert len(recorded_digests(target)) == 2
    monkeypatch.setattr(sio.os, "replace", real)
    write_bytes(target, b"new", checksum=True)
    assert recorded_digests(target) == [hashlib.sha256(b"new").hexdigest()]


def test_copy_checked_keeps_the_checksum(tmp_path):
    from seqmix.io import copy_checked, verify_checksum, write_bytes

    write_bytes(tmp_path / "a.pt", b"payload", checksum=True)
    copy_checked(tmp_path / "a.pt", tmp_path / "b.pt")
    write_bytes(tmp_path / "a.pt", b"newer", checksum=True)  # a replaced, the copy keeps its own bytes
    assert (tmp_path / "b.pt").read_bytes() == b"payload"
    assert verify_checksum(tmp_path / "b.pt") is None and verify_checksum(tmp_path / "a.pt") is None


def test_torch_save_writes_what_torch_load_reads_and_a_checksum_on_request(tmp_path):
    from seqmix.io import verify_checksum

    torch_save({"w": torch.arange(3.0)}, tmp_path / "m.pt", checksum=True)
    assert torch.equal(torch.load(tmp_path / "m.pt", weights_only=True)["w"], torch.arange(3.0))
    assert verify_checksum(tmp_path / "m.pt") is None
