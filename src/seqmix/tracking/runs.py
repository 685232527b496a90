"""MLflow tracking, what the stages and the CLI call (the MLflow client side is ``tracking_store``, the
buffers ``tracking_buffer``, live logging ``tracking_live``).

Files under results/ are the source of truth; MLflow mirrors them.

- Embedded default (``sqlite:///results/mlflow.db``): SQLite takes one writer at a time and a fresh
  database is corrupted by parallel first writers. So ``init_store`` creates the database and the
  experiments once (the ``mlflow_init`` rule), no rule takes the database as an input, and each job
  writes a ``tracking-<stage>.jsonl`` buffer per leaf; the paper's claims step replays all of them
  (``paper_buffers``) in one ``ingest`` under an exclusive file lock. Ingestion is idempotent: a run is
  keyed by its leaf config hash and stage, exactly one run per key survives a replay, and a buffer whose
  fingerprint is already complete in MLflow is skipped, so a replay (``mlflow_sync``) never duplicates.
- http(s) URI (an ``mlflow server``): ``LiveRun`` logs as the job goes; the buffer is still written
  so that ``mlflow_sync`` (or the claims step) can replay a job that ran while the server was down.
- A tracking failure never fails a job or the DAG: it is logged, and the leaf keeps its buffer.
"""

from __future__ import annotations

import logging
import os
import subprocess
import time
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

from ..config.credentials import redact
from ..results import scale_root
from .buffer import (
    buffer_record,
    experiment_key,
    now_ms,
    paper_buffers,
    parents_first,
    read_buffers,
    relative_artifacts,
    sweep_key,
    write_buffer,
)
from .health import damaged_message, sqlite_problem
from .store import ingest_records as _ingest_records
from .store import init_experiments as _init_experiments
from .store import is_live, reachable, resolve_uri

log = logging.getLogger("seqmix.tracking.runs")

GIT_COMMIT_TAG = "mlflow.source.git.commit"  # the commit the MLflow UI shows on a run's page
SOURCE_NAME_TAG, SOURCE_TYPE_TAG = "mlflow.source.name", "mlflow.source.type"  # the UI's "Source"
USER_TAG = "mlflow.user"  # the UI's "Created by"


def init_store(
    uri: str, experiments: Iterable[str], results: str | Path, descriptions: dict[str, str] | None = None
) -> dict[str, str] | None:
    """Create the store and one experiment per paper, once, described by ``descriptions`` (paper ->
    text, see ``paper_description``). {name: id}, or None when the tracking store cannot be reached or
    written: the DAG goes on and the jobs keep their buffers for a later sync."""
    if uri == "none":
        return {}
    if not reachable(uri):
        log.warning(
            "mlflow server %s unreachable; jobs keep their buffers, run the mlflow_sync rule later", redact(uri)
        )
        return None
    if _named_damage(uri, results, "mlflow store failed; jobs keep their buffers"):
        return None
    try:
        return _init_experiments(uri, list(experiments), results, descriptions)
    except Exception as e:  # an outage must not fail the DAG
        if not _named_damage(uri, results, "mlflow store failed; jobs keep their buffers"):
            # MLflow's errors quote the request URL, credentials included
            log.warning(
                "mlflow store %s failed (%s: %s); jobs keep their buffers",
                redact(uri),
                type(e).__name__,
                redact(str(e)),
            )
        return None


def _named_damage(uri: str, results: str | Path, what: str) -> bool:
    """Whether the SQLite file behind ``uri`` is not a usable database; if so, logs ``what`` with the damage
    and the remedy. Asked before MLflow opens the file, not only after it fails: MLflow's engine retries a
    database error for about 100 s before it gives up (a claims step's ingest into a garbage ``mlflow.db``
    took 101 s, 2026-12-02), and SQLite's own check of the file answers in milliseconds."""
    why = sqlite_problem(uri)
    if why:
        log.warning("%s: %s", what, damaged_message(uri, results, why))
    return bool(why)


def paper_description(paper_file: str | Path) -> str | None:
    """An experiment's description (markdown, shown on its page in the UI) from the paper config's ``title``
    and ``source``; None when the file is missing or names neither."""
    import yaml

    if not Path(paper_file).is_file():
        return None
    try:
        cfg = yaml.safe_load(Path(paper_file).read_text()) or {}
    except (OSError, yaml.YAMLError) as e:
        log.warning("mlflow: no experiment description from %s (%s)", paper_file, e)
        return None
    title, source = str(cfg.get("title") or "").strip(), str(cfg.get("source") or "").strip()
    if not (title or source):
        return None
    lines = [f"**{title}**" if title else "", f"Source: {source}" if source else ""]
    lines.append(
        "One run per leaf and stage, named `<experiment>/<variant>/<point>/seed<seed>/<stage>@<scale>`, under "
        "`<experiment>@<scale>` (and, for a sweep, `<experiment>/<variant> sweep <name>@<scale>`); evaluation "
        "and diagnostics runs are children of their training run, and `artefacts@<scale>` holds the tables, "
        "figures and claims. A leaf's runs of an older config are tagged `seqmix.superseded` and deleted "
        "(restorable from the deleted runs)."
    )
    return "\n\n".join(line for line in lines if line)


def ingest(
    buffers: Iterable[str | Path], uri: str, results: str | Path, descriptions: dict[str, str] | None = None
) -> dict[str, int] | None:
    """Replay buffer files into MLflow (their experiments described by ``descriptions`` where given);
    returns {created, skipped, replaced, bad_lines}, or None when tracking failed (logged; the DAG never
    fails on it). Bad lines are skipped and each is logged."""
    if uri == "none":
        return None
    if not reachable(uri):
        log.warning("mlflow server %s unreachable; the files are kept, run the mlflow_sync rule later", redact(uri))
        return None
    if _named_damage(uri, results, "mlflow ingestion failed"):
        return None
    try:
        t0 = time.perf_counter()
        records, problems = read_buffers(buffers)
        for p in problems:
            log.warning("tracking buffer line skipped: %s", p)
        counts = _ingest_records(parents_first(records), uri, results, descriptions)
        counts["bad_lines"] = len(problems)
        # the line benchmarks/dag_timing.py reads (MLflow's share of a job, import included)
        log.info("mlflow: %s; seqmix-ingest s=%.3f", counts, time.perf_counter() - t0)
        return counts
    except Exception as e:  # an outage must not fail the job
        if not _named_damage(uri, results, "mlflow ingestion failed"):
            log.warning(
                "mlflow ingestion failed (%s: %s); the files are kept, run the mlflow_sync rule later",
                type(e).__name__,
                redact(str(e)),
            )
        return None


def ingest_now(uri: str) -> bool:
    """Whether a stage job ingests its own buffers: only with a tracking server (it takes concurrent
    writers). With SQLite the paper's claims step ingests every buffer of the paper once (``paper_buffers``):
    one process importing mlflow and taking the database lock instead of one per job."""
    return is_live(uri)


def run_name(experiment: str, leaf_id: str, stage: str, scale: str) -> str:
    """A run name unique within a paper's MLflow experiment: e.g. ``exp1/k2/T4/seed0/train@tiny``."""
    return f"{experiment}/{leaf_id}/{stage}@{scale}"


def run_tags(**extra: Any) -> dict[str, str]:
    """Tags every run carries: MLflow's own source tags (what ran it: ``seqmix <rule>``, ``JOB`` under SLURM
    else ``LOCAL``; the user; the git commit, none outside a git checkout), shown as the run's "Source" and
    "Created by", the SLURM job id, plus the caller's."""
    commit = git_commit()
    slurm = os.environ.get("SLURM_JOB_ID")
    tags = {
        "slurm_job_id": slurm or "none",
        SOURCE_NAME_TAG: f"seqmix {extra['rule']}" if extra.get("rule") else "seqmix",
        SOURCE_TYPE_TAG: "JOB" if slurm else "LOCAL",
        USER_TAG: user(),
    }
    tags["git_sha"] = commit or "unknown"  # the older tag, kept for queries written against it
    if commit:
        tags[GIT_COMMIT_TAG] = commit
    tags.update({k: str(v) for k, v in extra.items()})
    return tags


def user() -> str:
    """Who ran the job (MLflow's ``mlflow.user``, the UI's "Created by"); "unknown" when the system cannot say."""
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name and no passwd entry (some containers)
        return "unknown"


@cache
def git_commit(where: str | Path | None = None) -> str | None:
    """``git rev-parse HEAD`` of the checkout holding the seqmix code that runs (None outside one)."""
    where = Path(where) if where else Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    sha = out.stdout.strip()
    return sha if len(sha) == 40 else None


def child_spans(buffers: Iterable[str | Path]) -> dict[str, dict[str, int]]:
    """Per parent key, {start_ms, end_ms}: the earliest start and the latest end of the records naming it as
    their parent (unreadable lines are skipped here; the ingest reports them)."""
    spans: dict[str, dict[str, int]] = {}
    for r in read_buffers(buffers)[0]:
        key = r.get("parent_key")
        if not key or r.get("start_ms") is None or r.get("end_ms") is None:
            continue
        span = spans.setdefault(key, {"start_ms": int(r["start_ms"]), "end_ms": int(r["end_ms"])})
        span["start_ms"] = min(span["start_ms"], int(r["start_ms"]))
        span["end_ms"] = max(span["end_ms"], int(r["end_ms"]))
    return spans


def _union(a: dict[str, int] | None, b: dict[str, int]) -> dict[str, int]:
    """The span covering both (``a`` None: ``b``)."""
    if a is None:
        return dict(b)
    return {"start_ms": min(a["start_ms"], b["start_ms"]), "end_ms": max(a["end_ms"], b["end_ms"])}


def sweep_parents(spec: dict, tags: dict, spans: dict[str, dict[str, int]], start_ms: int) -> list[dict]:
    """One parent run per (experiment, variant) series of an experiment that declares a sweep (the claims
    spec's ``sweeps``, config.leaves.sweeps), nested under the experiment's parent and nesting the series'
    train runs (tracking.buffer.train_parent_key); it spans its runs (``spans``, as ``child_spans`` gives)."""
    paper, scale = spec["paper"], spec["scale"]
    out = []
    for exp, sweep in (spec.get("sweeps") or {}).items():
        for variant in sweep["variants"]:
            key = sweep_key(paper, scale, exp, variant)
            out.append(
                buffer_record(
                    key=key,
                    experiment=paper,
                    run_name=f"{exp}/{variant} sweep {sweep['name']}@{scale}",
                    tags={**tags, "seqmix.kind": "sweep", "seqmix.experiment": exp, "seqmix.variant": variant},
                    params={
                        "scale": scale,
                        "experiment": exp,
                        "variant": variant,
                        "sweep.name": sweep["name"],
                        "sweep.path": sweep["path"],
                        "sweep.values": sweep["values"],
                    },
                    metrics={},
                    **spans.get(key, {"start_ms": start_ms, "end_ms": now_ms()}),
                    parent_key=experiment_key(paper, scale, exp),
                )
            )
    return out


def log_paper_artefacts(
    spec: dict, files: list[str], tags: dict, start_ms: int, description: str | None = None
) -> dict[str, int] | None:
    """One paper-level run holding the tables, figures and claims as artifacts (paths relative to the
    results directory), then a replay of every buffer of the paper (the SQLite store's one ingest), which
    also (re)sets the experiment's ``description``."""
    uri = resolve_uri(spec["tracking"]["uri"])
    rec = buffer_record(
        key=f"{spec['paper']}.{spec['scale']}.artefacts",
        experiment=spec["paper"],
        run_name=f"artefacts@{spec['scale']}",
        tags=tags,
        params={"scale": spec["scale"]},
        metrics={},
        start_ms=start_ms,
        end_ms=now_ms(),
        artifacts=relative_artifacts(files, spec["results"]),
    )
    root = scale_root(spec["results"], spec["scale"])  # the buffers are the scale's; the store is shared
    spans = child_spans(paper_buffers(root, spec["paper"]))
    sweeps = sweep_parents(spec, tags, spans, start_ms)
    for sweep in sweeps:  # an experiment's runs of a sweep name the sweep's parent: its span counts them too
        if sweep["key"] in spans:
            spans[sweep["parent_key"]] = _union(spans.get(sweep["parent_key"]), spans[sweep["key"]])
    parents = [  # one parent run per experiment, nesting its train runs or its sweeps' parents (experiment_key)
        buffer_record(
            key=experiment_key(spec["paper"], spec["scale"], exp),
            experiment=spec["paper"],
            run_name=f"{exp}@{spec['scale']}",
            tags={**tags, "seqmix.kind": "experiment", "seqmix.experiment": exp},
            params={"scale": spec["scale"], "experiment": exp},
            metrics={},
            # its duration is its runs' (the first start to the last end), not this step's
            **spans.get(experiment_key(spec["paper"], spec["scale"], exp), {"start_ms": start_ms, "end_ms": now_ms()}),
            artifacts=relative_artifacts([s for s in [summary] if Path(s).exists()], spec["results"]),
        )
        for exp, summary in (spec.get("inputs", {}).get("summaries") or {}).items()
    ]
    buf = Path(spec["paper_dir"]) / "tracking-artefacts.jsonl"
    write_buffer(buf, [*parents, *sweeps, rec])
    notes = {spec["paper"]: description} if description else None
    return ingest(paper_buffers(root, spec["paper"]) + [buf], uri, spec["results"], notes)
