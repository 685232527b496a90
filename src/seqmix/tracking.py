"""MLflow tracking: the only module that imports mlflow.

Files under results/ are the source of truth; MLflow mirrors them.

- Embedded default (``sqlite:///results/mlflow.db``): SQLite takes one writer at a time and a fresh
  database is corrupted by parallel first writers. So ``init_store`` creates the database and the
  experiments once (the ``mlflow_init`` rule), no rule takes the database as an input, and each job
  writes a ``tracking-<stage>.jsonl`` buffer per leaf; the paper's claims step replays all of them
  (``paper_buffers``) in one ``ingest`` under an exclusive file lock. Ingestion is idempotent: a run is keyed
  by its leaf config hash and stage, and a buffer whose
  fingerprint is already in MLflow is skipped, so a replay (``mlflow_sync``) never duplicates a run.
- http(s) URI (an ``mlflow server``): ``LiveRun`` logs as the job goes; the buffer is still written
  so that ``mlflow_sync`` can replay a job that ran while the server was down.
- A tracking failure never fails the job: it is logged, and the leaf keeps its buffer for a later sync.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .io import write_text

log = logging.getLogger("seqmix.tracking")

KEY_TAG = "seqmix.key"
FINGERPRINT_TAG = "seqmix.fingerprint"


# ----------------------------------------------------------------------------- URIs


def resolve_uri(uri: str, root: str | Path = ".") -> str:
    """Make a relative sqlite path absolute (relative to the workflow root)."""
    if uri.startswith("sqlite:///") and not uri.startswith("sqlite:////"):
        return "sqlite:///" + str((Path(root) / uri[len("sqlite:///") :]).resolve())
    return uri


def is_live(uri: str) -> bool:
    return uri.startswith("http://") or uri.startswith("https://")


def _sqlite_path(uri: str) -> Path | None:
    return Path(uri[len("sqlite:///") :]) if uri.startswith("sqlite:///") else None


def lock_path(uri: str, results: str | Path) -> Path:
    db = _sqlite_path(uri)
    return (db.parent / (db.name + ".lock")) if db else Path(results) / ".mlflow.lock"


@contextlib.contextmanager
def exclusive(path: Path, timeout_s: float = 600.0) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        t0 = time.monotonic()
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() - t0 > timeout_s:
                    raise TimeoutError(f"could not lock {path} within {timeout_s} s") from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def reachable(uri: str, timeout_s: float = 5.0) -> bool:
    """Whether an http(s) tracking server answers its health check. Probed once before use, because
    MLflow's own client retries a dead server with backoff for minutes."""
    if not is_live(uri):
        return True
    import urllib.request

    try:
        with urllib.request.urlopen(uri.rstrip("/") + "/health", timeout=timeout_s) as r:
            return r.status == 200
    except OSError:
        return False


def _client(uri: str):
    import mlflow  # noqa: F401  (configures logging once)
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=uri)


def artifact_root(results: str | Path) -> Path:
    return (Path(results) / ".mlflow" / "artifacts").resolve()


def init_store(uri: str, experiments: Iterable[str], results: str | Path) -> dict[str, str]:
    """Create the database (if SQLite) and one experiment per paper, once. Returns {name: id}."""
    ids = {}
    with exclusive(lock_path(uri, results)):
        client = _client(uri)
        for name in experiments:
            exp = client.get_experiment_by_name(name)
            if exp is None:
                loc = (artifact_root(results) / name).as_uri()
                ids[name] = client.create_experiment(name, artifact_location=loc)
            else:
                ids[name] = exp.experiment_id
    return ids


# ----------------------------------------------------------------------------- the buffer


def buffer_record(
    *,
    key: str,
    experiment: str,
    run_name: str,
    tags: dict,
    params: dict,
    metrics: dict[str, list[tuple[int, float]]],
    parent_key: str | None = None,
    artifacts: list[str] | None = None,
) -> dict:
    """One run, as written to ``tracking.jsonl``. ``metrics`` maps name -> [(step, value), ...]."""
    rec = {
        "key": key,
        "experiment": experiment,
        "run_name": run_name,
        "tags": {k: str(v) for k, v in tags.items()},
        "params": {k: _param(v) for k, v in params.items()},
        "metrics": {k: [[int(s), float(v)] for s, v in series] for k, series in metrics.items()},
        "parent_key": parent_key,
        "artifacts": list(artifacts or []),
    }
    rec["fingerprint"] = hashlib.sha256(json.dumps(rec, sort_keys=True).encode()).hexdigest()[:16]
    return rec


def _param(v: Any) -> str:
    s = json.dumps(v) if not isinstance(v, str) else v
    return s[:6000]


def write_buffer(path: str | Path, records: list[dict]) -> None:
    write_text(path, "".join(json.dumps(r, sort_keys=True) + "\n" for r in records))


def read_buffer(path: str | Path) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def flatten(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


# ----------------------------------------------------------------------------- ingestion


def _find_run(client, experiment_id: str, key: str):
    runs = client.search_runs([experiment_id], filter_string=f"tags.`{KEY_TAG}` = '{key}'", max_results=10)
    return runs


def ingest_records(records: list[dict], uri: str, results: str | Path) -> dict[str, int]:
    """Replay buffered runs into MLflow under the lock. Returns counts {created, skipped, replaced}."""
    from mlflow.entities import Metric, Param

    counts = {"created": 0, "skipped": 0, "replaced": 0}
    if not records:
        return counts
    with exclusive(lock_path(uri, results)):
        client = _client(uri)
        exp_ids: dict[str, str] = {}
        for rec in records:
            name = rec["experiment"]
            if name not in exp_ids:
                exp = client.get_experiment_by_name(name)
                exp_ids[name] = (
                    exp.experiment_id
                    if exp
                    else client.create_experiment(name, artifact_location=(artifact_root(results) / name).as_uri())
                )
            eid = exp_ids[name]
            existing = _find_run(client, eid, rec["key"])
            if any(r.data.tags.get(FINGERPRINT_TAG) == rec["fingerprint"] for r in existing):
                counts["skipped"] += 1
                continue
            for r in existing:  # same leaf and stage, different content (e.g. code changed): replace
                client.delete_run(r.info.run_id)
                counts["replaced"] += 1
            tags = dict(rec["tags"], **{KEY_TAG: rec["key"], FINGERPRINT_TAG: rec["fingerprint"]})
            if rec.get("parent_key"):
                parents = _find_run(client, eid, rec["parent_key"])
                if parents:
                    tags["mlflow.parentRunId"] = parents[0].info.run_id
            run = client.create_run(eid, run_name=rec["run_name"], tags=tags)
            rid = run.info.run_id
            params = [Param(k, v) for k, v in rec["params"].items()]
            for i in range(0, len(params), 100):
                client.log_batch(rid, params=params[i : i + 100])
            now = int(time.time() * 1000)
            metrics = [Metric(k, v, now, s) for k, series in rec["metrics"].items() for s, v in series]
            for i in range(0, len(metrics), 1000):
                client.log_batch(rid, metrics=metrics[i : i + 1000])
            for a in rec.get("artifacts", []):
                if Path(a).exists():
                    client.log_artifact(rid, a)
            client.set_terminated(rid, "FINISHED")
            counts["created"] += 1
    return counts


STAGE_ORDER = ("train", "evaluate", "diagnose")  # parents (train runs) are ingested before their children


def paper_buffers(results: str | Path, paper: str) -> list[Path]:
    """Every stage buffer of a paper (``tracking-<stage>.jsonl`` under results/<scale>/<paper>), train ones first."""
    found = [p for p in Path(results, paper).rglob("tracking-*.jsonl") if p.stem[len("tracking-") :] in STAGE_ORDER]
    return sorted(found, key=lambda p: (STAGE_ORDER.index(p.stem[len("tracking-") :]), str(p)))


def ingest_now(uri: str) -> bool:
    """Whether a stage job ingests its own buffers: only with a tracking server (it takes concurrent
    writers). With SQLite the paper's claims step ingests every buffer of the paper once (``paper_buffers``):
    one process importing mlflow and taking the database lock instead of one per job."""
    return is_live(uri)


def ingest(buffers: Iterable[str | Path], uri: str, results: str | Path) -> dict[str, int] | None:
    """Ingest buffer files; a tracking failure is logged and returns None (the DAG never fails on it)."""
    if uri == "none":
        return None
    if not reachable(uri):
        log.warning("mlflow server %s unreachable; the files are kept, run the mlflow_sync rule later", uri)
        return None
    try:
        t0 = time.perf_counter()
        records = [r for b in buffers for r in read_buffer(b)]
        counts = ingest_records(records, uri, results)
        # the line benchmarks/dag_timing.py reads (MLflow's share of a job, import included)
        log.info("mlflow: %s; seqmix-ingest s=%.3f", counts, time.perf_counter() - t0)
        return counts
    except Exception as e:  # noqa: BLE001 — an outage must not fail the job
        log.warning(
            "mlflow ingestion failed (%s: %s); the files are kept, run the mlflow_sync rule later", type(e).__name__, e
        )
        return None


class LiveRun:
    """Logs one run to an http(s) MLflow server while the job runs; failures only warn."""

    def __init__(self, uri: str, experiment: str, run_name: str, tags: dict, params: dict, key: str):
        self.client, self.run_id = None, None
        if not reachable(uri):
            log.warning("mlflow server %s unreachable; logging to files only", uri)
            return
        try:
            from mlflow.entities import Param

            self.client = _client(uri)
            exp = self.client.get_experiment_by_name(experiment)
            eid = exp.experiment_id if exp else self.client.create_experiment(experiment)
            tags = dict({k: str(v) for k, v in tags.items()}, **{KEY_TAG: key})
            self.run_id = self.client.create_run(eid, run_name=run_name, tags=tags).info.run_id
            ps = [Param(k, _param(v)) for k, v in params.items()]
            for i in range(0, len(ps), 100):
                self.client.log_batch(self.run_id, params=ps[i : i + 100])
        except Exception as e:  # noqa: BLE001
            log.warning("mlflow server unreachable (%s); logging to files only", e)
            self.client = None

    def log(self, step: int, metrics: dict[str, float]) -> None:
        if self.client is None:
            return
        try:
            from mlflow.entities import Metric

            now = int(time.time() * 1000)
            self.client.log_batch(self.run_id, metrics=[Metric(k, float(v), now, step) for k, v in metrics.items()])
        except Exception as e:  # noqa: BLE001
            log.warning("mlflow live logging failed (%s); continuing with files only", e)
            self.client = None

    def set_tags(self, tags: dict[str, str]) -> None:
        """Tags known only once the job has run a while (the backend each layer ran, after the first step)."""
        if self.client is None:
            return
        try:
            for k, v in tags.items():
                self.client.set_tag(self.run_id, k, str(v))
        except Exception as e:  # noqa: BLE001
            log.warning("mlflow live tagging failed (%s); continuing with files only", e)
            self.client = None

    def end(self, fingerprint: str | None, status: str = "FINISHED") -> None:
        """Close the run. With the buffer's fingerprint set, a later ``ingest`` of that buffer skips
        this run; a run that lost the server half-way has none and is replaced by the full buffer."""
        if self.client is not None:
            with contextlib.suppress(Exception):
                if fingerprint:
                    self.client.set_tag(self.run_id, FINGERPRINT_TAG, fingerprint)
                self.client.set_terminated(self.run_id, status)


def run_tags(**extra: Any) -> dict[str, str]:
    """Tags every run carries: git sha, SLURM job id, host, plus the caller's."""
    tags = {"git_sha": git_sha(), "slurm_job_id": os.environ.get("SLURM_JOB_ID", "none")}
    tags.update({k: str(v) for k, v in extra.items()})
    return tags


_GIT_SHA: str | None = None


def git_sha() -> str:
    global _GIT_SHA
    if _GIT_SHA is None:
        import subprocess

        try:
            _GIT_SHA = (
                subprocess.run(
                    ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=True
                ).stdout.strip()
                or "unknown"
            )
        except Exception:  # noqa: BLE001
            _GIT_SHA = "unknown"
    return _GIT_SHA
