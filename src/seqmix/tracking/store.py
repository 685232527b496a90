"""The MLflow side of tracking: URIs, the store lock, experiments, and writing buffered runs.

A run is written so that a kill at any point leaves nothing a replay cannot repair: it is created with
its key tag but without the fingerprint, then params, metrics (with their own timestamps) and artifacts
are logged, and only then the fingerprint is set and the run closed with its own end time. A replay
keeps the one run of a key whose fingerprint matches the buffer and deletes every other run of that key
(a killed ingest, a killed live run, an older content), so MLflow ends with exactly one run per buffer.
Parents are linked both ways: a child finds its parent by ``seqmix.parent_key``, and a parent written
later (or rewritten) adopts the children that name it.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path

log = logging.getLogger("seqmix.tracking.runs")

KEY_TAG = "seqmix.key"
FINGERPRINT_TAG = "seqmix.fingerprint"
PARENT_KEY_TAG = "seqmix.parent_key"
PARENT_RUN_TAG = "mlflow.parentRunId"
# A leaf's run of an older config (same run name, another key), tagged then deleted: see ``supersede``.
SUPERSEDED_TAG, SUPERSEDED_BY_TAG = "seqmix.superseded", "seqmix.superseded_by"
# The MLflow UI shows an experiment as model training (runs, charts), not as a GenAI app (traces).
EXPERIMENT_KIND_TAG, EXPERIMENT_KIND = "mlflow.experimentKind", "custom_model_development"
NOTE_TAG = "mlflow.note.content"  # the description the UI shows on an experiment's (or a run's) page
MODEL_DIR = "model"  # a training run's artifact folder for its trained weights
PROXIED = "mlflow-artifacts:/"  # artifact URIs resolved by the server's --artifacts-destination
# MLflow's client retries a dead server for minutes (7 retries, backoff factor 2, 120 s timeout); a
# tracking outage must cost a job seconds. Defaults only: the user's own environment wins.
HTTP_DEFAULTS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "20",
}


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
    """One writer at a time on the store (SQLite takes one), across processes."""
    from filelock import FileLock, Timeout

    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with FileLock(str(path), timeout=timeout_s):
            yield
    except Timeout:
        raise TimeoutError(f"could not lock {path} within {timeout_s} s") from None


def reachable(uri: str, timeout_s: float = 5.0) -> bool:
    """Whether an http(s) tracking server answers its health check. Probed once before use, because
    MLflow's own client retries a dead server with backoff."""
    if not is_live(uri):
        return True
    import urllib.request

    from ..config.credentials import without_userinfo

    try:  # urllib would take 'user:password@host' for the host name; /health needs no login
        with urllib.request.urlopen(without_userinfo(uri).rstrip("/") + "/health", timeout=timeout_s) as r:
            return r.status == 200
    except OSError:
        return False


def preload() -> None:
    """Import what :func:`client` and the ingests import, ahead of any job (the warm worker,
    seqmix.pipeline.warm): about 3 s of every job that ingests into MLflow."""
    import mlflow.entities
    import mlflow.tracking  # noqa: F401


def client(uri: str):
    if is_live(uri):
        for name, value in HTTP_DEFAULTS.items():
            os.environ.setdefault(name, value)
    elif _sqlite_path(uri) is not None:
        sqlite_sync_mode()  # a bad value fails here, before any job's work
        _sqlite_without_fsync()
    import mlflow  # noqa: F401  (configures logging once)
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=uri)


# SQLite's default durability flushes every commit to the disk, and MLflow commits once per call: an ingest of the
# heads paper's 118 runs made 2,556 fdatasync calls and took 6.1-6.4 s on a quiet 2-core box, 5.2-5.3 s without
# them; on a loaded box (the test suite) its 1,397 commits waited 10.7 s of 41 s on the disk (2026-11-27).
# ``synchronous=OFF`` still writes the rollback journal, so a killed process (the failure this pipeline meets)
# leaves the store consistent; only an operating-system crash or power loss in mid-commit can damage it, and the
# store is rebuilt from the tracking buffers (``seqmix mlflow-sync``, which the damaged-store message names).
# SEQMIX_SQLITE_SYNC=FULL (or NORMAL) keeps SQLite's flushing.
SQLITE_SYNC_ENV = "SEQMIX_SQLITE_SYNC"


def sqlite_sync_mode() -> str:
    """SQLite's ``synchronous`` setting for the tracking store, from SEQMIX_SQLITE_SYNC (default OFF)."""
    mode = os.environ.get(SQLITE_SYNC_ENV, "OFF").strip().upper()
    if mode not in ("OFF", "NORMAL", "FULL", "EXTRA"):
        raise ValueError(f"{SQLITE_SYNC_ENV}={mode!r}: expected OFF, NORMAL, FULL or EXTRA")
    return mode


@functools.cache
def _sqlite_without_fsync() -> None:
    """Every SQLite connection SQLAlchemy opens in this process (MLflow's stores) gets ``PRAGMA synchronous``
    from :func:`sqlite_sync_mode`, read when the connection opens; other databases are untouched."""
    import sqlite3

    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    @event.listens_for(Engine, "connect")
    def _pragma(dbapi_connection, _record) -> None:
        if isinstance(dbapi_connection, sqlite3.Connection):
            dbapi_connection.execute(f"PRAGMA synchronous={sqlite_sync_mode()}")


def artifact_root(results: str | Path) -> Path:
    """Where the embedded (SQLite) store keeps artifacts: the ``--artifacts-destination`` of ``mlflow ui``."""
    return Path(results) / ".mlflow" / "artifacts"


def ui_command(results: str | Path, db: str | Path | None = None) -> str:
    """The ``mlflow ui`` command that shows the embedded store of ``results`` with its artifacts, as it can be
    pasted: the ``mlflow`` beside this interpreter (the venv's, not whatever PATH finds), relative to the
    working directory when it is under it. ``db``: the store's SQLite file where tracking.uri names another
    than ``results``/mlflow.db (the artifacts stay under ``results``)."""
    import os
    import sys

    exe = Path(sys.executable).parent / "mlflow"
    try:
        exe = exe.relative_to(Path.cwd())
    except ValueError:
        pass
    return (
        f"{os.fspath(exe)} ui --backend-store-uri sqlite:///{Path(results) / 'mlflow.db' if db is None else db} "
        f"--artifacts-destination {artifact_root(results)}"
    )


def ensure_experiment(mlf, name: str, live: bool, description: str | None = None) -> str:
    """The experiment's id, created if missing, tagged as model training and, when ``description`` is given,
    described by it (``mlflow.note.content``; an existing experiment's description is updated). With a server
    the server picks the artifact location; with SQLite it is ``mlflow-artifacts:/<name>``, which stores no
    absolute path: ``mlflow ui --artifacts-destination <results>/.mlflow/artifacts`` resolves it wherever
    results/ lives."""
    wanted = {EXPERIMENT_KIND_TAG: EXPERIMENT_KIND}
    if description:
        wanted[NOTE_TAG] = description
    exp = mlf.get_experiment_by_name(name)
    if exp is None:
        return mlf.create_experiment(name, artifact_location=None if live else PROXIED + name, tags=wanted)
    for tag, value in wanted.items():
        if exp.tags.get(tag) != value:
            mlf.set_experiment_tag(exp.experiment_id, tag, value)
    return exp.experiment_id


def find_runs(mlf, experiment_id: str, tag: str, value: str) -> list:
    """Active runs whose tag ``tag`` equals ``value`` (oldest first)."""
    return mlf.search_runs(
        [experiment_id], filter_string=f"tags.`{tag}` = '{value}'", max_results=1000, order_by=["attribute.start_time"]
    )


def _complete(run, fp: str) -> bool:
    return run.data.tags.get(FINGERPRINT_TAG) == fp and run.info.status == "FINISHED"


def ingest_records(
    records: list[dict], uri: str, results: str | Path, descriptions: dict[str, str] | None = None
) -> dict[str, int]:
    """Write buffered runs (parents first) under the store lock, describing their experiments by
    ``descriptions`` where given. Returns {created, skipped, replaced, superseded}: replaced counts the runs
    deleted as incomplete, duplicate or stale runs of the same key, superseded the runs of the same leaf and
    stage made by another config (``supersede``)."""
    counts = {"created": 0, "skipped": 0, "replaced": 0, "superseded": 0}
    if not records:
        return counts
    with exclusive(lock_path(uri, results)):
        mlf, live = client(uri), is_live(uri)
        exp_ids: dict[str, str] = {}
        children: dict[str, dict[str, list]] = {}  # per experiment: parent key -> runs naming it (one query)
        named: dict[str, dict[str, list]] = {}  # per experiment: run name -> its runs (one query)
        gone: set[str] = set()  # runs superseded by this ingest
        for rec in records:
            if rec["experiment"] not in exp_ids:
                note = (descriptions or {}).get(rec["experiment"])
                exp_ids[rec["experiment"]] = ensure_experiment(mlf, rec["experiment"], live, note)
                children[rec["experiment"]] = children_by_parent(mlf, exp_ids[rec["experiment"]])
                named[rec["experiment"]] = runs_by_name(mlf, exp_ids[rec["experiment"]])
            eid = exp_ids[rec["experiment"]]
            older = [
                r for r in named[rec["experiment"]].get(rec["run_name"], []) if r.data.tags.get(KEY_TAG) != rec["key"]
            ]
            existing = find_runs(mlf, eid, KEY_TAG, rec["key"])
            keep = next((r for r in existing if _complete(r, rec["fingerprint"])), None)
            for r in existing:
                if r is not keep:
                    mlf.delete_run(r.info.run_id)
                    counts["replaced"] += 1
            if keep is not None:
                counts["skipped"] += 1
                counts["superseded"] += supersede(mlf, older, keep.info.run_id, children[rec["experiment"]], gone)
                continue
            run_id = write_run(mlf, eid, rec, results, live)
            for child in children[rec["experiment"]].get(rec["key"], []):  # already in MLflow before this ingest
                if child.data.tags.get(PARENT_RUN_TAG) != run_id:
                    mlf.set_tag(child.info.run_id, PARENT_RUN_TAG, run_id)
            counts["created"] += 1
            counts["superseded"] += supersede(mlf, older, run_id, children[rec["experiment"]], gone)
    return counts


def write_run(mlf, experiment_id: str, rec: dict, results: str | Path, live: bool) -> str:
    """Create one run from its record; the fingerprint is set last (see the module docstring)."""
    from mlflow.entities import Param

    tags = dict(rec["tags"], **{KEY_TAG: rec["key"]}, **parent_tags(mlf, experiment_id, rec.get("parent_key")))
    start = rec.get("start_ms")
    run = mlf.create_run(experiment_id, run_name=rec["run_name"], tags=tags, start_time=start)
    rid = run.info.run_id
    params = [Param(k, v) for k, v in rec["params"].items()]
    for i in range(0, len(params), 100):
        mlf.log_batch(rid, params=params[i : i + 100])
    log_points(mlf, rid, rec["metrics"], rec.get("end_ms"))
    for rel in rec.get("artifacts", []):
        _log_artifact(mlf, run, Path(results) / rel, results, live)
    if rec.get("dataset"):
        log_dataset(mlf, rid, rec["dataset"])
    log_model(mlf, run, rec, results, live)
    mlf.set_tag(rid, FINGERPRINT_TAG, rec["fingerprint"])
    mlf.set_terminated(rid, "FINISHED", end_time=rec.get("end_ms"))
    return rid


def log_points(mlf, run_id: str, metrics: dict[str, list], default_ms: int | None, skip=frozenset()) -> None:
    """Log ``name -> [[step, value, timestamp_ms], ...]`` (points in ``skip``, as (name, step), left out)."""
    from mlflow.entities import Metric

    from .buffer import now_ms

    fallback = default_ms or now_ms()
    points = [
        Metric(name, float(p[1]), int(p[2]) if len(p) > 2 else fallback, int(p[0]))
        for name, series in metrics.items()
        for p in series
        if (name, int(p[0])) not in skip
    ]
    for i in range(0, len(points), 1000):
        mlf.log_batch(run_id, metrics=points[i : i + 1000])


def log_dataset(mlf, run_id: str, dataset: dict, context: str = "training") -> None:
    """Log a buffer record's ``dataset`` (``buffer.dataset_record``) as the run's input: a metadata-only
    dataset (MLflow never sees the data) whose source carries the data source label and its origin."""
    from mlflow.data.code_dataset_source import CodeDatasetSource
    from mlflow.data.meta_dataset import MetaDataset
    from mlflow.entities import DatasetInput, InputTag

    source = CodeDatasetSource({"data_source": dataset["source"], "origin": dataset["origin"]})
    meta = MetaDataset(source, name=dataset["name"], digest=dataset["digest"])
    tags = [InputTag("mlflow.data.context", context)]
    mlf.log_inputs(run_id, datasets=[DatasetInput(meta._to_mlflow_entity(), tags=tags)])


def _log_artifact(mlf, run, path: Path, results: str | Path, live: bool, subdir: str = "", link: bool = False) -> None:
    """Log ``path`` as the artifact ``<subdir>/<name>``. In the embedded store the file is copied where
    ``mlflow ui`` serves it from, or with ``link`` hard-linked there (no copy of a model's weights; the
    pipeline replaces its files by rename, so the link keeps the bytes this run made); a server uploads it."""
    if not path.exists():
        log.warning("mlflow: artifact %s is missing; not logged", path)
        return
    uri = run.info.artifact_uri
    if not live and uri.startswith(PROXIED):  # the embedded store: copy where `mlflow ui` serves it from
        dest = artifact_root(results) / uri[len(PROXIED) :] / subdir / path.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        if link:
            dest.unlink(missing_ok=True)
            try:
                os.link(path, dest)
                return
            except OSError:  # another file system, or links refused: copy
                pass
        shutil.copyfile(path, dest)
    else:
        mlf.log_artifact(run.info.run_id, str(path), subdir or None)


def log_model(mlf, run, rec: dict, results: str | Path, live: bool) -> None:
    """A training record's model file, as the run's artifact ``model/<name>`` (see ``_log_artifact``)."""
    if rec.get("model"):
        _log_artifact(mlf, run, Path(results) / rec["model"], results, live, MODEL_DIR, link=True)


def parent_tags(mlf, experiment_id: str, parent_key: str | None) -> dict[str, str]:
    """The tags linking a run to its parent: the parent's key (a parent written later adopts the runs naming
    it) and, when the parent is in MLflow already, its run id (``mlflow.parentRunId``, the UI's nesting)."""
    if not parent_key:
        return {}
    parent = parent_run_id(mlf, experiment_id, parent_key)
    return {PARENT_KEY_TAG: parent_key, **({PARENT_RUN_TAG: parent} if parent else {})}


def parent_run_id(mlf, experiment_id: str, parent_key: str) -> str | None:
    """The run of ``parent_key``: a complete one (fingerprint set) if any, else the newest."""
    runs = find_runs(mlf, experiment_id, KEY_TAG, parent_key)
    done = [r for r in runs if FINGERPRINT_TAG in r.data.tags]
    pick = (done or runs)[-1:] if runs else []
    return pick[0].info.run_id if pick else None


def _grouped_runs(mlf, experiment_id: str, tag: str, key) -> dict[str, list]:
    """{key(run): active runs carrying ``tag``}, for the whole experiment in one paged query."""
    out: dict[str, list] = {}
    token = None
    while True:
        page = mlf.search_runs(
            [experiment_id], filter_string=f"tags.`{tag}` LIKE '%'", max_results=5000, page_token=token
        )
        for r in page:
            out.setdefault(key(r), []).append(r)
        token = page.token
        if not token:
            return out


def children_by_parent(mlf, experiment_id: str) -> dict[str, list]:
    """{parent key: active runs naming it}, for the whole experiment in one paged query."""
    return _grouped_runs(mlf, experiment_id, PARENT_KEY_TAG, lambda r: r.data.tags[PARENT_KEY_TAG])


def runs_by_name(mlf, experiment_id: str) -> dict[str, list]:
    """{run name: active seqmix runs of that name}, for the whole experiment in one paged query."""
    return _grouped_runs(mlf, experiment_id, KEY_TAG, lambda r: r.info.run_name)


def supersede(
    mlf, older: list, current_id: str, children: dict[str, list] | None = None, done: set[str] | None = None
) -> int:
    """Mark ``older`` (runs of the same leaf and stage made by an earlier config: the same run name, another
    key) as superseded by the run ``current_id``, so each leaf shows one current run: each is tagged
    ``seqmix.superseded=true`` and ``seqmix.superseded_by=<run id>``, then deleted, which hides it from the
    UI's default (active) view but keeps it, restorable (the UI's "Deleted" view, ``mlflow runs restore``),
    until ``mlflow gc``. Their active children ({parent key: runs}, an evaluation of the older model) go with
    them. ``done`` collects the ids deleted, so runs listed again (the caller's lists are read once) are
    left alone. Returns how many runs were superseded."""
    n, done = 0, set() if done is None else done
    for run in older:
        if run.info.run_id == current_id or run.info.run_id in done or run.info.lifecycle_stage != "active":
            continue
        stale = [run, *(children or {}).get(run.data.tags.get(KEY_TAG), [])]
        for r in stale:
            if r.info.run_id in done:
                continue
            done.add(r.info.run_id)
            mlf.set_tag(r.info.run_id, SUPERSEDED_TAG, "true")
            mlf.set_tag(r.info.run_id, SUPERSEDED_BY_TAG, current_id)
            mlf.delete_run(r.info.run_id)
            n += 1
    return n


def supersede_older(mlf, experiment_id: str, run_name: str, key: str, current_id: str) -> int:
    """``supersede`` the active runs named ``run_name`` whose key is not ``key`` (one live run's end)."""
    older = [
        r
        for r in find_runs(mlf, experiment_id, "mlflow.runName", run_name)
        if r.data.tags.get(KEY_TAG) not in (None, key)
    ]
    children = {k: find_runs(mlf, experiment_id, PARENT_KEY_TAG, k) for k in {r.data.tags[KEY_TAG] for r in older}}
    return supersede(mlf, older, current_id, children)


def adopt_children(mlf, experiment_id: str, key: str, run_id: str) -> None:
    """Point every child that names ``key`` as its parent at ``run_id`` (children replayed before their
    parent, or whose parent was rewritten)."""
    for child in find_runs(mlf, experiment_id, PARENT_KEY_TAG, key):
        if child.data.tags.get(PARENT_RUN_TAG) != run_id:
            mlf.set_tag(child.info.run_id, PARENT_RUN_TAG, run_id)


def delete_runs_of(mlf, experiment_id: str, key: str) -> int:
    """Delete every active run of ``key`` (earlier, killed attempts of a live run); returns how many."""
    runs = find_runs(mlf, experiment_id, KEY_TAG, key)
    for r in runs:
        mlf.delete_run(r.info.run_id)
    return len(runs)


def init_experiments(
    uri: str, experiments: Iterable[str], results: str | Path, descriptions: dict[str, str] | None = None
) -> dict[str, str]:
    """Create the database (if SQLite) and one experiment per paper, once, under the lock, each described by
    its entry of ``descriptions`` when it has one. {name: id}."""
    descriptions = descriptions or {}
    with exclusive(lock_path(uri, results)):
        mlf, live = client(uri), is_live(uri)
        return {name: ensure_experiment(mlf, name, live, descriptions.get(name)) for name in experiments}
