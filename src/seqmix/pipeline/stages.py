"""The per-leaf stages a rule runs over a cell of leaves: train, evaluate, diagnose.

One loop, ``run_stage``, owns for every stage what happens around a leaf:
- skip a leaf whose completion marker carries the leaf's config hash and matches its checksum (a
  half-written leaf, with no marker or one of another config, is rebuilt; training resumes from its
  checkpoint); a leaf whose marker or data file (``diagnose.csv``) fails its checksum is rebuilt too;
- write the leaf's MLflow record to its buffer, then its marker with its checksum (last, atomically);
- one summary row per leaf, keyed by ``leaf_key`` (id, hash, variant, point, sweep value, seed, model);
- ingest the buffers (by the job itself with a tracking server, else by the paper's claims step,
  ``tracking.runs.ingest_now``).
The model-side work of a leaf (``seqmix.training.work.StageWork``) is reached through the registry.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from pathlib import Path

from .. import registry
from ..io import read_json, verify_checksum, write_json
from ..results import LEAF_KEY, STAGES, leaf_marker
from ..results import is_done as _done
from ..tracking import buffer as tracking_buffer
from ..tracking import live as tracking_live
from ..tracking import runs as tracking
from ..tracking import store as tracking_store
from ..tracking import system as tracking_system

log = logging.getLogger("seqmix.pipeline.stages")


def leaf_key(leaf: dict) -> dict:
    """The columns that identify a leaf in every stage's summary."""
    cfg = leaf["config"]
    model = cfg.get("model") or {}
    values = {**leaf, **cfg, "model": (model.get("mixer") or {}).get("name", model.get("name"))}
    return {k: values.get(k) for k in LEAF_KEY}


def run_stage(stage: str, run: dict) -> dict:
    """Run ``stage`` over the cell ``run`` (a run config: seqmix.config.leaves.cell_run_config); returns the
    cell summary ``{"leaves": [row per leaf]}`` (plus ``"rows"``, every diagnostic row, for diagnose)."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; stages: {', '.join(STAGES)}")
    work = registry.worker("stages")(run.get("runtime"))
    uri = tracking_store.resolve_uri(run["tracking"]["uri"])
    leaf_work, intact = _LEAF_WORK[stage]
    buffers, summary, rows, work_s = [], [], [], 0.0
    n = len(run["leaves"])
    for i, leaf in enumerate(run["leaves"], 1):
        out = Path(leaf["out_dir"])
        marker = leaf_marker(out, stage)
        if _done(marker, leaf["hash"]) and _trusted(marker, stage) and intact(out, stage):
            log.info("[%d/%d] %s: %s already done", i, n, leaf["id"], stage)
        else:
            done = leaf_work(work, run, leaf, f"[{i}/{n}] {leaf['id']}")
            if done is None:  # a data-parallel rank other than 0: rank 0 alone writes the leaf's files
                continue
            marker_data, record, after = done
            tracking_buffer.write_buffer(out / f"tracking-{stage}.jsonl", [record])
            if after:
                after(record)
            write_json(marker, marker_data, checksum=True)  # its fields become the leaf's summary row
            work_s += marker_data.get("seconds") or 0.0
        buffers.append(out / f"tracking-{stage}.jsonl")
        done_marker = read_json(marker)
        key = leaf_key(leaf)
        if stage == "diagnose":
            import pandas as pd  # only diagnose reads a data file back

            rows.extend({**key, **r} for r in pd.read_csv(out / "diagnose.csv").to_dict("records"))
        summary.append({**key, **_summary_fields(stage, done_marker)})
    if work.rank() == 0 and tracking.ingest_now(uri):
        tracking.ingest(buffers, uri, run["results"])
    if stage == "train":
        log.info("seqmix-train s=%.3f", work_s)  # the training share of this job (benchmarks/dag_timing.py)
    return {"leaves": summary, "rows": rows} if stage == "diagnose" else {"leaves": summary}


def _trusted(path: Path, stage: str) -> bool:
    """Whether a done marker (or ``history.json``) matches its checksum: one edited, damaged or without its
    checksum would put values its stage never wrote into a summary, so its stage is done again (training
    resumes from the final checkpoint: no step is trained twice)."""
    why = verify_checksum(path)
    if why:
        log.warning("%s: %s; its values cannot be trusted, so %s again", path, why, _AGAIN[stage])
    return why is None


_AGAIN = {"train": "train again (from its checkpoint)", "evaluate": "evaluate again", "diagnose": "diagnose again"}


def _summary_fields(stage: str, marker: dict) -> dict:
    """A leaf's summary fields beyond its key: evaluate's metrics as columns, else the marker's fields."""
    if stage == "evaluate":
        return marker["metrics"]
    return {k: v for k, v in marker.items() if k not in ("id", "hash")}


# ----------------------------------------------------------------------------- one leaf of each stage
# Each returns (marker, MLflow record, hook called after the record is buffered) or None on a rank that
# writes nothing; the loop above writes the buffer and the marker.


def _record(run: dict, leaf: dict, stage: str, tags: dict, metrics: dict, start_ms: int, **kw) -> dict:
    return tracking_buffer.buffer_record(
        key=f"{leaf['hash']}.{stage}",
        experiment=run["paper"],
        run_name=_run_name(run, leaf, stage),
        tags=tags,
        params=_leaf_params(leaf["config"], run),
        metrics=metrics,
        start_ms=start_ms,
        end_ms=kw.pop("end_ms", None) or tracking_buffer.now_ms(),
        **kw,
    )


def _train_leaf(work, run: dict, leaf: dict, label: str):
    out, cfg = Path(leaf["out_dir"]), leaf["config"]
    log.info("%s: training (%d steps) on %s", label, cfg["train"]["steps"], work.device)
    tags = dict(_leaf_tags(run, leaf, "train"), device=work.device)
    lead = work.rank() == 0
    uri = tracking_store.resolve_uri(run["tracking"]["uri"])
    # when each step was logged, kept across a kill (the metric timestamps and the run's start)
    resuming = (out / "checkpoint.pt").exists()
    clock = tracking_buffer.StepClock(out / "tracking-clock.json", leaf["hash"], resuming)
    every_s = tracking_system.settings(run["tracking"]) if lead else None
    system = tracking_system.SystemSampler(out, leaf["hash"], resuming, every_s, work.device) if every_s else None
    parent = tracking_buffer.train_parent_key(run["paper"], run["scale"], run["experiment"], cfg)
    live = None
    if lead and tracking_store.is_live(uri):
        name = _run_name(run, leaf, "train")
        params = _leaf_params(cfg, run)
        key = leaf["hash"] + ".train"
        live = tracking_live.LiveRun(
            uri, run["paper"], name, tags, params, key, clock.start_ms, run["results"], parent_key=parent
        )

    def on_log(step: int, metrics: dict) -> None:
        clock.tick(step)
        if live:
            live.log(step, metrics, clock.at(step, tracking_buffer.now_ms()))
            for point in system.take_new() if system else ():  # the samples since the last logged step
                live.log(*point)

    def on_backend(report: dict) -> None:  # after the first step
        tags["backend"] = ",".join(sorted(set(report.values())))
        if live:
            live.set_tags({"backend": tags["backend"]})

    if system:
        system.start()
    try:
        result = work.train(cfg, out, leaf["hash"], on_log if lead else None, on_backend)
    finally:
        if system:
            system.stop()
    tags.setdefault("backend", backend_tag_of(result))
    if not lead:
        return None
    hist = result["history"]
    write_json(out / "history.json", hist, checksum=True)  # artefacts read it (results.read_leaf_output)
    end_ms = clock.end_ms(trained_now=result["resumed_from"] != result["steps"])
    pairs = {name: list(zip(hist["step"], hist[name])) for name in hist if name not in ("step", "diagnostics")}
    diag = hist.get("diagnostics") or {}
    for name, values in diag.items():  # in-training evaluation (training loop, ``eval.every``)
        if name != "step":
            pairs[f"diag/{name}"] = [(s, v) for s, v in zip(diag["step"], values) if math.isfinite(v)]
    metrics = {name: clock.series(series, end_ms) for name, series in pairs.items()}
    metrics.update(system.series() if system else {})  # system/*: what the job used while it trained
    dataset = tracking_buffer.dataset_record(cfg.get("task") or {}, cfg["seed"], result.get("data_source"))
    (model,) = tracking_buffer.relative_artifacts([out / "model.pt"], run["results"])
    rec = _record(
        run,
        leaf,
        "train",
        tags,
        metrics,
        clock.start_ms,
        end_ms=end_ms,
        dataset=dataset,
        model=model,
        parent_key=parent,
    )
    marker = {
        "id": leaf["id"],
        "hash": leaf["hash"],
        "steps": result["steps"],
        "resumed_from": result["resumed_from"],
        "seconds": result["seconds"],
        "final_train_loss": hist["train_loss"][-1] if hist["train_loss"] else None,
        "diagnostics_seconds": result["diagnostics"]["seconds"],
        "backend": tags["backend"],
        "device": tags.get("device"),
        "data_source": result.get("data_source"),
        "torch_threads": work.torch_threads(),
        "n_params": result.get("n_params"),
    }
    log.info(
        "%s: done in %.1f s (final train loss %.3g)", label, result["seconds"], marker["final_train_loss"] or math.nan
    )
    return marker, rec, (live.end if live else None)


def _evaluate_leaf(work, run: dict, leaf: dict, label: str):
    out, cfg = Path(leaf["out_dir"]), leaf["config"]
    if not _done(leaf_marker(out, "train"), leaf["hash"]):
        raise RuntimeError(f"{leaf['id']}: not trained for this config (no matching {leaf_marker(out, 'train')})")
    start_ms = tracking_buffer.now_ms()
    metrics = work.evaluate(cfg, out)
    series = {k: [(0, v)] for k, v in metrics.items()}  # stamped with the evaluation's end
    rec = _record(
        run, leaf, "evaluate", _leaf_tags(run, leaf, "evaluate"), series, start_ms, parent_key=leaf["hash"] + ".train"
    )
    log.info("%s: %s", label, ", ".join(f"{k}={v:.4g}" for k, v in metrics.items()))
    return {"id": leaf["id"], "hash": leaf["hash"], "metrics": metrics}, rec, None


def _diagnose_leaf(work, run: dict, leaf: dict, label: str):
    from ..report.tables import write_csv

    out, cfg = Path(leaf["out_dir"]), leaf["config"]
    start_ms = tracking_buffer.now_ms()
    trained = _done(leaf_marker(out, "train"), leaf["hash"])
    result = work.diagnose(cfg, out, trained)
    write_csv(out / "diagnose.csv", result["rows"], checksum=True)
    rec = _record(
        run,
        leaf,
        "diagnose",
        _leaf_tags(run, leaf, "diagnose"),
        result["metrics"],
        start_ms,
        # an untrained leaf's diagnostics (a probe of the model at init) nest where its train run would
        parent_key=(leaf["hash"] + ".train")
        if trained
        else tracking_buffer.train_parent_key(run["paper"], run["scale"], run["experiment"], cfg),
    )
    rows = len(result["rows"])
    log.info(
        "%s: %d diagnostic rows in %.1f s (%s model)",
        label,
        rows,
        result["seconds"],
        "trained" if trained else "initial",
    )
    marker = {"id": leaf["id"], "hash": leaf["hash"], "trained": trained, "rows": rows, "seconds": result["seconds"]}
    return marker, rec, None


# (leaf work, whether a done leaf's data files are intact (out, stage)); the artefacts read history.json
_ALWAYS: Callable[[Path, str], bool] = lambda out, stage: True
_LEAF_WORK = {
    "train": (_train_leaf, lambda out, stage: _trusted(out / "history.json", stage)),
    "evaluate": (_evaluate_leaf, _ALWAYS),
    "diagnose": (_diagnose_leaf, lambda out, stage: _trusted(out / "diagnose.csv", stage)),
}


# ----------------------------------------------------------------------------- tags, params, names


def _leaf_tags(run: dict, leaf: dict, rule: str) -> dict:
    cfg = leaf["config"]
    return tracking.run_tags(
        rule=rule,
        paper=run["paper"],
        experiment=run["experiment"],
        cell=run["cell"],
        variant=cfg["variant"],
        point=cfg["point"],
        seed=cfg["seed"],
        scale=run["scale"],
        config_hash=leaf["hash"],
        **{tracking_store.NOTE_TAG: _leaf_description(run, leaf, rule)},
    )


def _leaf_description(run: dict, leaf: dict, rule: str) -> str:
    """The run page's description (MLflow's note): which stage of which leaf, on what task, model and mixer."""
    cfg = leaf["config"]
    model = cfg.get("model") or {}
    mixer = (model.get("mixer") or {}).get("name")
    steps = (cfg.get("train") or {}).get("steps")
    parts = [
        f"{rule} of {run['paper']} / {run['experiment']}: variant {cfg['variant']}, point {cfg['point']}, "
        f"seed {cfg['seed']}, scale {run['scale']}.",
        f"Task {(cfg.get('task') or {}).get('name', '-')}; model {model.get('name', '-')}"
        + (f" with mixer {mixer}" if mixer else "")
        + (f"; {steps} training steps." if steps else "."),
        f"Leaf {leaf['id']} (config hash {leaf['hash']}).",
    ]
    return " ".join(parts)


def _leaf_params(cfg: dict, run: dict) -> dict:
    """A leaf's MLflow params (every stage's run carries them): its flattened config, coordinates and the
    ``--set`` overrides it was made with."""
    params = tracking_buffer.flatten({k: v for k, v in cfg.items() if k in ("task", "model", "train", "eval")})
    params.update(seed=cfg["seed"], variant=cfg["variant"], point=cfg["point"], **_override_param(run))
    return params


def _override_param(run: dict) -> dict:
    """{"overrides": "train.lr=0.0003,..."} for a run made with ``--set`` (seqmix.config.overrides), else {}."""
    from ..config.overrides import describe

    return {"overrides": describe(run["overrides"])} if run.get("overrides") else {}


def _run_name(run: dict, leaf: dict, stage: str) -> str:
    return tracking.run_name(run["experiment"], leaf["id"], stage, run["scale"])


def backend_tag_of(result: dict) -> str:
    return ",".join(sorted(set((result.get("backends") or {"model": "reference"}).values())))


def timed(fn, startup_s: float, *args, **kwargs) -> dict:
    """Run a stage and attach the job's timing: start-up (interpreter + imports) and work."""
    import time

    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    out["timing"] = {"startup_s": round(startup_s, 3), "work_s": round(time.perf_counter() - t0, 3)}
    return out
