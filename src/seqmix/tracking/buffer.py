"""Tracking buffers: the ``tracking-<stage>.jsonl`` files each job writes per leaf (no MLflow here).

A buffer line is one run: its key (leaf config hash and stage), experiment, unique run name, tags,
params, metric series ``name -> [[step, value, timestamp_ms], ...]``, the run's own start and end
(``start_ms``/``end_ms``: when the training or evaluation ran, not when it was ingested), the key of its
parent run, and artifact paths relative to the results directory (so a moved ``results/`` replays). The
``fingerprint`` hashes all of it; a line whose fingerprint does not match its content (a garbled or
hand-edited line) is skipped and reported by ``read_buffers``, and the rest of the buffers replay.

``StepClock`` keeps the wall-clock time of every logged training step in ``tracking-clock.json`` beside
the leaf, so a resumed leaf keeps the timestamps and the start of the attempts before the kill.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..io import read_json, write_json, write_text

STAGE_ORDER = ("train", "evaluate", "diagnose")  # parents (train runs) are ingested before their children
REQUIRED = ("key", "experiment", "run_name", "tags", "params", "metrics", "fingerprint")


def now_ms() -> int:
    return int(time.time() * 1000)


def buffer_record(
    *,
    key: str,
    experiment: str,
    run_name: str,
    tags: dict,
    params: dict,
    metrics: dict[str, list],
    start_ms: int,
    end_ms: int,
    parent_key: str | None = None,
    artifacts: list[str] | None = None,
) -> dict:
    """One run, as written to a buffer. ``metrics`` maps name -> [(step, value[, timestamp_ms]), ...]; a point
    without a timestamp gets ``end_ms``. ``artifacts`` are paths relative to the results directory."""
    rec = {
        "key": key,
        "experiment": experiment,
        "run_name": run_name,
        "tags": {k: str(v) for k, v in tags.items()},
        "params": {k: param_value(v) for k, v in params.items()},
        "metrics": {k: [_point(p, end_ms) for p in series] for k, series in metrics.items()},
        "start_ms": int(start_ms),
        "end_ms": int(end_ms),
        "parent_key": parent_key,
        "artifacts": list(artifacts or []),
    }
    rec["fingerprint"] = fingerprint(rec)
    return rec


def _point(p, default_ms: int) -> list:
    step, value = int(p[0]), float(p[1])
    return [step, value, int(p[2]) if len(p) > 2 and p[2] is not None else int(default_ms)]


def fingerprint(rec: dict) -> str:
    body = {k: v for k, v in rec.items() if k != "fingerprint"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]


def param_value(v: Any) -> str:
    """MLflow params are strings of at most 6000 characters."""
    s = json.dumps(v) if not isinstance(v, str) else v
    return s[:6000]


# MLflow's rule for param keys; a config key outside it (e.g. a glob in train.param_hints) cannot be a key
_MLFLOW_KEY = re.compile(r"^[A-Za-z0-9_\-. :/]+$")


def flatten(d: dict, prefix: str = "") -> dict:
    """{"a": {"b": 1}} -> {"a.b": 1} (the leaf config as MLflow params).

    A sub-dict with a key MLflow refuses (``*``, ``[``, ...: the globs of ``train.param_hints``) stays whole, as
    one JSON value under its parent's key; a refused top-level key has those characters replaced by ``_``."""
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}" if _MLFLOW_KEY.match(str(k)) else f"{prefix}{re.sub(r'[^A-Za-z0-9_. :/-]', '_', str(k))}"
        if isinstance(v, dict) and all(_MLFLOW_KEY.match(str(kk)) for kk in v):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def write_buffer(path: str | Path, records: list[dict]) -> None:
    write_text(path, "".join(json.dumps(r, sort_keys=True) + "\n" for r in records))


def _check(line: str) -> dict:
    """The record of one buffer line, or ValueError saying what is wrong with it."""
    try:
        rec = json.loads(line)
    except json.JSONDecodeError as e:
        raise ValueError(f"not JSON ({e.msg} at column {e.colno})") from None
    if not isinstance(rec, dict):
        raise ValueError("not a JSON object")
    missing = [k for k in REQUIRED if k not in rec]
    if missing:
        raise ValueError(f"missing {', '.join(missing)}")
    if rec["fingerprint"] != fingerprint(rec):
        raise ValueError("fingerprint does not match the content (garbled or edited)")
    return rec


def read_buffers(paths: Iterable[str | Path]) -> tuple[list[dict], list[str]]:
    """(records, problems): every valid line of the buffers, and one ``path:line: reason`` per line skipped
    (unreadable file, bad JSON, missing fields, wrong fingerprint). A bad line never hides the others."""
    records, problems = [], []
    for path in paths:
        try:
            lines = Path(path).read_text().splitlines()
        except (OSError, UnicodeDecodeError) as e:
            problems.append(f"{path}: unreadable ({type(e).__name__}: {e})")
            continue
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                records.append(_check(line))
            except ValueError as e:
                problems.append(f"{path}:{n}: {e}")
    return records, problems


def read_buffer(path: str | Path) -> list[dict]:
    """The valid records of one buffer (problems dropped; see ``read_buffers``)."""
    return read_buffers([path])[0]


def parents_first(records: list[dict]) -> list[dict]:
    """Records ordered so that a run's parent, when among them, comes before it (otherwise stable), so a
    replay links every child (``sorted(rglob(...))`` puts tracking-diagnose before tracking-train)."""
    out, pending = [], list(records)
    while pending:
        waiting = {r["key"] for r in pending}
        ready = [r for r in pending if r.get("parent_key") not in waiting or r.get("parent_key") == r["key"]]
        ready = ready or pending  # a cycle of parent keys: keep the order given
        ids = {id(r) for r in ready}
        out += ready
        pending = [r for r in pending if id(r) not in ids]
    return out


def paper_buffers(results: str | Path, paper: str) -> list[Path]:
    """Every stage buffer of a paper (``tracking-<stage>.jsonl`` under results/<scale>/<paper>), train ones first."""
    found = [p for p in Path(results, paper).rglob("tracking-*.jsonl") if p.stem[len("tracking-") :] in STAGE_ORDER]
    return sorted(found, key=lambda p: (STAGE_ORDER.index(p.stem[len("tracking-") :]), str(p)))


def relative_artifacts(files: Iterable[str | Path], results: str | Path) -> list[str]:
    """Artifact paths as stored in a buffer: relative to the results directory when under it."""
    root = Path(results).resolve()
    out = []
    for f in files:
        p = Path(f).resolve()
        out.append(os.path.relpath(p, root) if p.is_relative_to(root) else str(p))
    return out


class StepClock:
    """When each training step was logged (ms since the epoch), kept in ``tracking-clock.json``.

    ``start_ms`` is the start of the first attempt at this config: it survives a kill and a resume (the
    checkpoint keeps the loss history but no wall-clock times, which would break bit-identical resumes).
    A clock of another config, or one left without a checkpoint to resume from, starts afresh.
    """

    def __init__(self, path: str | Path, config_hash: str, resuming: bool):
        self.path = Path(path)
        state = read_json(self.path) if resuming and self.path.exists() else None
        if not state or state.get("config_hash") != config_hash:
            state = {"config_hash": config_hash, "start_ms": now_ms(), "steps": {}}
        self.state = state

    @property
    def start_ms(self) -> int:
        return int(self.state["start_ms"])

    def tick(self, step: int, metrics: dict | None = None) -> None:
        """Record step ``step`` as logged now (later attempts overwrite: their values are the ones kept)."""
        self.state["steps"][str(int(step))] = now_ms()
        write_json(self.path, self.state)

    def at(self, step: int, default_ms: int) -> int:
        return int(self.state["steps"].get(str(int(step)), default_ms))

    def series(self, pairs: Iterable[tuple[int, float]], default_ms: int) -> list[list]:
        """[(step, value)] -> [[step, value, timestamp_ms]]."""
        return [[int(s), float(v), self.at(s, default_ms)] for s, v in pairs]
