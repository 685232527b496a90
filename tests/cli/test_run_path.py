"""A wrong or damaged ``--run`` file stops a rule's command with one line naming it (issue 26, item 8): on
main ``python -m seqmix train --run missing.json --out ...`` ended in a FileNotFoundError traceback, and a
truncated run config in a JSONDecodeError naming no file."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from seqmix.cli.main import main

# every command that takes --run, with the other arguments it requires
COMMANDS = {
    "train": ["--out", "cell.json"],
    "evaluate": ["--out", "cell.json"],
    "diagnose": ["--out", "cell.json"],
    "artefact": ["--out", "artefact"],
    "claims": ["--out-md", "claims.md", "--out-csv", "claims.csv"],
}
DAMAGE = {
    "missing": (None, "does not exist"),
    "truncated": ('{"paper": "heads", "lea', "is not valid JSON (Unterminated string"),
    "not_an_object": ("[1, 2]", "is not a JSON object (got list)"),
    "a_directory": ("<dir>", "cannot be read"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize("cmd", sorted(COMMANDS))
def test_a_bad_run_file_is_one_line_naming_it(cmd, damage, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    content, words = DAMAGE[damage]
    path = tmp_path / "run" / "exp1.k2-0.json"
    path.parent.mkdir()
    if content == "<dir>":
        path.mkdir()
    elif content is not None:
        path.write_text(content)
    with pytest.raises(SystemExit) as e:
        main([cmd, "--run", str(path), *COMMANDS[cmd]])
    message = str(e.value.code)
    assert message.startswith(f"seqmix {cmd}: run ") and f" {path} {words}" in message, message
    assert "rerun snakemake" in message and "\n" not in message
    assert not any(p.name in ("cell.json", "claims.csv") for p in tmp_path.iterdir())  # nothing written


def test_the_train_command_exits_non_zero_without_a_traceback(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "seqmix", "train", "--run", "missing.json", "--out", "cell.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
    )
    assert proc.returncode == 1
    assert proc.stderr.startswith("seqmix train: run config missing.json does not exist; rerun snakemake"), proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_damaged_dispatch_settings_are_named_too(tmp_path):
    run = tmp_path / "run.json"
    run.write_text('{"leaves": []}')
    bad = tmp_path / "dispatch.json"
    bad.write_text('{"dispatch": "subm')
    with pytest.raises(SystemExit) as e:
        main(["train", "--run", str(run), "--out", str(tmp_path / "c.json"), "--dispatch", str(bad)])
    assert str(e.value.code).startswith(f"seqmix train: dispatch settings {bad} is not valid JSON")
