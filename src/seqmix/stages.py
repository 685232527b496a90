"""The step functions rules run, one per stage, each over a cell of leaves.

Every stage:
- skips a leaf whose completion marker carries the leaf's config hash (a half-written leaf, with no
  marker or one of another config, is rebuilt; training resumes from its checkpoint); a leaf whose data
  file fails its checksum (``diagnose.csv``) is rebuilt too,
- writes its per-leaf files atomically, the marker last,
- buffers MLflow records per leaf (ingested by the job itself with a tracking server, else by the paper's
  claims step, see ``tracking.ingest_now``),
- writes the cell's summary (the rule's output) last, with the job's timing.
"""

from __future__ import annotations

import logging
import math
import time
from pathlib import Path

from . import tracking
from .io import read_json, write_json
from .results import is_done as _done
from .results import is_intact, leaf_marker

log = logging.getLogger("seqmix.stages")


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
    )


def _leaf_params(cfg: dict, run: dict) -> dict:
    """A leaf's MLflow params (every stage's run carries them): its flattened config, coordinates and the
    ``--set`` overrides it was made with."""
    params = tracking.flatten({k: v for k, v in cfg.items() if k in ("task", "model", "train", "eval")})
    params.update(seed=cfg["seed"], variant=cfg["variant"], point=cfg["point"], **_override_param(run))
    return params


def _run_name(run: dict, leaf: dict, stage: str) -> str:
    return tracking.run_name(run["experiment"], leaf["id"], stage, run["scale"])


def _runtime(run: dict):
    """The job's runtime (device, amp, compile, kernels) from the run config, applied to this process."""
    from .training.runtime import Runtime

    return Runtime.resolve(run.get("runtime")).activate()


def train_cell(run: dict) -> dict:
    import torch

    from .training import distributed, loop

    rt = _runtime(run)
    uri = tracking.resolve_uri(run["tracking"]["uri"])
    buffers, summary, trained_s = [], [], 0.0
    n = len(run["leaves"])
    for i, leaf in enumerate(run["leaves"], 1):
        out, cfg = Path(leaf["out_dir"]), leaf["config"]
        marker = leaf_marker(out, "train")
        if _done(marker, leaf["hash"]):
            log.info("[%d/%d] %s: already trained", i, n, leaf["id"])
            summary.append(read_json(marker))
            buffers.append(out / "tracking-train.jsonl")
            continue
        log.info("[%d/%d] %s: training (%d steps) on %s", i, n, leaf["id"], cfg["train"]["steps"], rt.device)
        tags = dict(_leaf_tags(run, leaf, "train"), device=rt.device)
        params = _leaf_params(cfg, run)
        lead = distributed.rank() == 0
        # when each step was logged, kept across a kill (the metric timestamps and the run's start)
        clock = tracking.StepClock(out / "tracking-clock.json", leaf["hash"], (out / "checkpoint.pt").exists())
        live = (
            tracking.LiveRun(
                uri, run["paper"], _run_name(run, leaf, "train"), tags, params, leaf["hash"] + ".train", clock.start_ms
            )
            if tracking.is_live(uri) and lead
            else None
        )

        def on_log(step: int, metrics: dict, clock=clock, live=live) -> None:
            clock.tick(step)
            if live:
                live.log(step, metrics, clock.at(step, tracking.now_ms()))

        def on_backend(report: dict, tags=tags, live=live) -> None:  # after the first step
            tags["backend"] = ",".join(sorted(set(report.values())))
            if live:
                live.set_tags({"backend": tags["backend"]})

        result = loop.train(cfg, out, leaf["hash"], on_log=on_log if lead else None, runtime=rt, on_backend=on_backend)
        trained_s += result["seconds"]
        tags.setdefault("backend", backend_tag_of(result))
        if distributed.rank() != 0:  # data-parallel: rank 0 alone writes the leaf's files
            continue
        done = _finish_training_leaf(run, leaf, result, tags, params, live, clock)
        done["torch_threads"] = torch.get_num_threads()
        write_json(marker, done)
        summary.append(done)
        buffers.append(out / "tracking-train.jsonl")
        log.info(
            "[%d/%d] %s: done in %.1f s (final train loss %.3g)",
            i,
            n,
            leaf["id"],
            result["seconds"],
            done["final_train_loss"] or float("nan"),
        )
    if distributed.rank() == 0 and tracking.ingest_now(uri):
        tracking.ingest(buffers, uri, run["results"])
    log.info("seqmix-train s=%.3f", trained_s)  # the training share of this job (benchmarks/dag_timing.py)
    return {"leaves": summary}


def _override_param(run: dict) -> dict:
    """{"overrides": "train.lr=0.0003,..."} for a run made with ``--set`` (seqmix.overrides), else {}."""
    from .overrides import describe

    return {"overrides": describe(run["overrides"])} if run.get("overrides") else {}


def backend_tag_of(result: dict) -> str:
    return ",".join(sorted(set((result.get("backends") or {"model": "reference"}).values())))


def _finish_training_leaf(run: dict, leaf: dict, result: dict, tags: dict, params: dict, live, clock) -> dict:
    """Write a trained leaf's history and tracking buffer; returns its marker (written by the caller).
    The run spans the training itself (``clock``: first attempt's start to now), each point timestamped
    when its step was logged."""
    out = Path(leaf["out_dir"])
    hist = result["history"]
    write_json(out / "history.json", hist)
    end_ms = tracking.now_ms()
    pairs = {name: list(zip(hist["step"], hist[name])) for name in hist if name not in ("step", "diagnostics")}
    diag = hist.get("diagnostics") or {}
    for name, values in diag.items():  # in-training evaluation (training loop, ``eval.every``)
        if name != "step":
            pairs[f"diag/{name}"] = [(s, v) for s, v in zip(diag["step"], values) if math.isfinite(v)]
    rec = tracking.buffer_record(
        key=leaf["hash"] + ".train",
        experiment=run["paper"],
        run_name=_run_name(run, leaf, "train"),
        tags=tags,
        params=params,
        metrics={name: clock.series(series, end_ms) for name, series in pairs.items()},
        start_ms=clock.start_ms,
        end_ms=end_ms,
    )
    tracking.write_buffer(out / "tracking-train.jsonl", [rec])
    if live:
        live.end(rec)
    return {
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
    }


def evaluate_cell(run: dict) -> dict:
    from .training.loop import load_trained

    rt = _runtime(run)
    uri = tracking.resolve_uri(run["tracking"]["uri"])
    buffers, summary = [], []
    for leaf in run["leaves"]:
        out, cfg = Path(leaf["out_dir"]), leaf["config"]
        marker = leaf_marker(out, "evaluate")
        if not _done(marker, leaf["hash"]):
            if not _done(leaf_marker(out, "train"), leaf["hash"]):
                raise RuntimeError(
                    f"{leaf['id']}: not trained for this config (no matching {leaf_marker(out, 'train')})"
                )
            start_ms = tracking.now_ms()
            task, model = load_trained(cfg, out, rt)
            metrics = task.evaluate(model)
            rec = tracking.buffer_record(
                key=leaf["hash"] + ".evaluate",
                experiment=run["paper"],
                run_name=_run_name(run, leaf, "evaluate"),
                tags=_leaf_tags(run, leaf, "evaluate"),
                params=_leaf_params(cfg, run),
                metrics={k: [(0, v)] for k, v in metrics.items()},  # stamped with the evaluation's end
                start_ms=start_ms,
                end_ms=tracking.now_ms(),
                parent_key=leaf["hash"] + ".train",
            )
            tracking.write_buffer(out / "tracking-evaluate.jsonl", [rec])
            write_json(marker, {"id": leaf["id"], "hash": leaf["hash"], "metrics": metrics})
            log.info("%s: %s", leaf["id"], ", ".join(f"{k}={v:.4g}" for k, v in metrics.items()))
        buffers.append(out / "tracking-evaluate.jsonl")
        m = read_json(marker)
        cfg = leaf["config"]
        summary.append(
            {
                "id": leaf["id"],
                "hash": leaf["hash"],
                "variant": cfg["variant"],
                "point": cfg["point"],
                "sweep_value": cfg.get("sweep_value"),
                "seed": cfg["seed"],
                **m["metrics"],
            }
        )
    if tracking.ingest_now(uri):
        tracking.ingest(buffers, uri, run["results"])
    return {"leaves": summary}


def diagnose_cell(run: dict) -> dict:
    """Diagnostics (Jacobians, gradient norms) of every leaf: ``diagnose(task, model, seed)`` on the trained
    model when the leaf was trained, else on the model at initialisation (an experiment whose stages are
    only ``[diagnose]``, e.g. the heads paper's Exp. II). Per leaf: ``diagnose.csv`` (the rows) and the
    marker ``diagnose.json``; the cell summary carries every row (what ``collect`` gathers) and one line
    per leaf."""
    import pandas as pd

    from .diagnostics.probes import diagnose
    from .report.tables import write_csv
    from .training.loop import build, load_trained
    from .training.runtime import keep_inputs_on_device

    rt = _runtime(run)
    uri = tracking.resolve_uri(run["tracking"]["uri"])
    buffers, summary, rows = [], [], []
    for leaf in run["leaves"]:
        out, cfg = Path(leaf["out_dir"]), leaf["config"]
        marker = leaf_marker(out, "diagnose")
        if not (_done(marker, leaf["hash"]) and is_intact(out / "diagnose.csv")):
            start_ms = tracking.now_ms()
            trained = _done(leaf_marker(out, "train"), leaf["hash"])
            if trained:
                task, model = load_trained(cfg, out, rt)
            else:  # measured at initialisation (e.g. the heads paper's Exp. II)
                task, model = build(cfg, rt)
                keep_inputs_on_device(model, rt)
            model.eval()
            t0 = time.perf_counter()
            result = diagnose(task, model, int(cfg["seed"]))
            write_csv(out / "diagnose.csv", result["rows"], checksum=True)
            rec = tracking.buffer_record(
                key=leaf["hash"] + ".diagnose",
                experiment=run["paper"],
                run_name=_run_name(run, leaf, "diagnose"),
                tags=_leaf_tags(run, leaf, "diagnose"),
                params=_leaf_params(cfg, run),
                metrics=result["metrics"],  # stamped with the diagnostics' end
                start_ms=start_ms,
                end_ms=tracking.now_ms(),
                parent_key=(leaf["hash"] + ".train") if trained else None,
            )
            tracking.write_buffer(out / "tracking-diagnose.jsonl", [rec])
            write_json(
                marker,
                {
                    "id": leaf["id"],
                    "hash": leaf["hash"],
                    "trained": trained,
                    "rows": len(result["rows"]),
                    "seconds": round(time.perf_counter() - t0, 3),
                },
            )
            log.info(
                "%s: %d diagnostic rows in %.1f s (%s model)",
                leaf["id"],
                len(result["rows"]),
                time.perf_counter() - t0,
                "trained" if trained else "initial",
            )
        buffers.append(out / "tracking-diagnose.jsonl")
        leaf_rows = pd.read_csv(out / "diagnose.csv").to_dict("records")
        key = {
            "id": leaf["id"],
            "hash": leaf["hash"],
            "variant": cfg["variant"],
            "point": cfg["point"],
            "sweep_value": cfg.get("sweep_value"),
            "seed": cfg["seed"],
            "model": (cfg.get("model", {}).get("mixer") or {}).get("name", cfg.get("model", {}).get("name")),
        }
        rows.extend({**key, **r} for r in leaf_rows)
        summary.append({**key, **read_json(marker)})
    if tracking.ingest_now(uri):
        tracking.ingest(buffers, uri, run["results"])
    return {"leaves": summary, "rows": rows}


def timed(fn, startup_s: float, *args, **kwargs) -> dict:
    """Run a stage and attach the job's timing: start-up (interpreter + imports) and work."""
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    out["timing"] = {"startup_s": round(startup_s, 3), "work_s": round(time.perf_counter() - t0, 3)}
    return out
