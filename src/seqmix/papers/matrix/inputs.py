"""What the matrix paper's artefacts read: the ``analysis:`` settings (``protocol``, ``excluded``) and, per
leaf, its three result files, gathered into one long frame (one row per leaf; ``cell_rows``) and the
influence profiles (``influence_rows``).

Files read in each leaf's ``out_dir``:

- ``train.done.json``: ``n_params`` (the trainable parameter count; NaN when the key is missing);
- ``metrics.json``: ``metrics`` {name: value}; the configured score metric must be there, the validation
  metric that picks the learning rate may be missing (NaN);
- ``diagnose.csv`` (checked against its ``.sha256`` sidecar when it has one): ``influence`` rows
  (lag, value) and the scalar rows ``exp_rate``, ``power``, ``effective_memory`` (value, lo, hi) and
  ``best_fit_power`` (value); a scalar that is absent or empty is NaN.

A missing file is an error naming the experiment, the leaf and the path.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from ...io import read_json, verify_checksum

CONFIG = "config/papers/matrix.yaml"

# documented defaults of analysis.protocol (analysis.schema.yaml)
DEFAULT_BOOTSTRAP = 2000  # resamples of every confidence interval
DEFAULT_CONFIDENCE = 0.95  # two-sided percentile interval
DEFAULT_SEED = 0  # of the bootstrap's generator (mixed with the task and mixer names)

INTERVAL_SCALARS = ("exp_rate", "power", "effective_memory")  # diagnose.csv rows with lo/hi
SCALARS = (*INTERVAL_SCALARS, "best_fit_power")
SCALAR_COLUMNS = [c for q in INTERVAL_SCALARS for c in (q, f"{q}_lo", f"{q}_hi")] + ["best_fit_power"]

# summary.csv of ``cells``, in order (see analysis.cells for what each column means)
CELL_COLUMNS = [
    "experiment",
    "task",
    "mixer",
    "mixer_name",
    "leaf",
    "lr",
    "seed",
    "n_params",
    "metric",
    "score",
    "select",
    "select_value",
    "higher_is_better",
    "n_test",
    *SCALAR_COLUMNS,
]


class SpecError(ValueError):
    """A spec the matrix artefacts cannot use (missing input, setting or file); the message says which."""


def protocol(spec: dict) -> dict:
    """``analysis.protocol`` with its defaults filled in: scores, bootstrap, confidence, seed."""
    p = (spec.get("analysis") or {}).get("protocol")
    if not p or "scores" not in p:
        raise SpecError(f"{CONFIG}: artefact {spec.get('name')!r} needs analysis: [protocol] with protocol.scores")
    return {
        "scores": p["scores"],
        "bootstrap": int(p.get("bootstrap", DEFAULT_BOOTSTRAP)),
        "confidence": float(p.get("confidence", DEFAULT_CONFIDENCE)),
        "seed": int(p.get("seed", DEFAULT_SEED)),
    }


def score_setting(proto: dict, experiment: str) -> dict:
    """protocol.scores[experiment]: metric, select, higher_is_better, label (default: the experiment),
    test_size_key and default_lr (None when not set)."""
    s = proto["scores"].get(experiment)
    if s is None:
        raise SpecError(
            f"{CONFIG}: analysis.protocol.scores has no entry for experiment {experiment!r} "
            f"(has {sorted(proto['scores'])})"
        )
    return {
        "metric": s["metric"],
        "select": s["select"],
        "higher_is_better": bool(s["higher_is_better"]),
        "label": s.get("label") or experiment,
        "test_size_key": s.get("test_size_key"),
        "default_lr": s.get("default_lr"),
    }


def excluded_pairs(spec: dict) -> list[dict]:
    """[{experiment, variant, reason}]: the pairs the config loader dropped as incompatible by their declared
    capabilities (the spec's ``excluded``, seqmix.config.compatibility); empty when none was."""
    return list(spec.get("excluded") or [])


def leaves(spec: dict) -> dict[str, list[dict]]:
    """{experiment: [leaf]} from ``inputs.leaves``, in the config's order; an empty input is an error."""
    got = {e: ls for e, ls in (spec.get("inputs", {}).get("leaves") or {}).items() if ls}
    if not got:
        raise SpecError(
            f"{CONFIG}: artefact {spec.get('name')!r} reads no leaves; declare reads.leaves: {{<task>: '*'}}"
        )
    return got


def config_path(cfg: dict, dotted: str) -> Any:
    """The value at ``a.b.c`` of a config, or KeyError naming the first missing key."""
    value = cfg
    for key in dotted.split("."):
        if not isinstance(value, dict) or key not in value:
            raise KeyError(key)
        value = value[key]
    return value


def leaf_lr(cfg: dict) -> float:
    """The learning rate a leaf trained with: its sweep value, else ``train.lr``."""
    v = cfg.get("sweep_value")
    if v is None:
        v = (cfg.get("train") or {}).get("lr")
    return float(v) if v is not None else math.nan


def _file(experiment: str, leaf: dict, name: str) -> Path:
    path = Path(leaf["out_dir"]) / name
    if not path.is_file():
        raise SpecError(f"{experiment}/{leaf['id']}: {name} is missing ({path}); run its stage first")
    return path


def _number(x: Any) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def read_diagnose(experiment: str, leaf: dict) -> pd.DataFrame:
    """The leaf's diagnose.csv (columns quantity, lag, value, lo, hi), verified against its sidecar."""
    path = _file(experiment, leaf, "diagnose.csv")
    if path.with_name(path.name + ".sha256").exists():
        why = verify_checksum(path)
        if why:
            raise SpecError(f"{experiment}/{leaf['id']}: {path}: {why}")
    df = pd.read_csv(path)
    missing = {"quantity", "lag", "value", "lo", "hi"} - set(df.columns)
    if missing:
        raise SpecError(f"{experiment}/{leaf['id']}: {path} lacks the columns {sorted(missing)}")
    return df


def scalars(diag: pd.DataFrame) -> dict[str, float]:
    """The influence scalars of one diagnose.csv (``SCALAR_COLUMNS``); absent or empty -> NaN."""
    out = {c: math.nan for c in SCALAR_COLUMNS}
    for q in SCALARS:
        rows = diag[(diag["quantity"] == q) & diag["lag"].isna()]
        if rows.empty:
            continue
        r = rows.iloc[0]
        out[q] = _number(r["value"])
        if q in INTERVAL_SCALARS:
            out[f"{q}_lo"], out[f"{q}_hi"] = _number(r["lo"]), _number(r["hi"])
    return out


def _n_test(experiment: str, leaf: dict, key: str | None) -> float:
    if not key:
        return math.nan
    try:
        return float(config_path(leaf["config"], key))
    except KeyError as e:
        raise SpecError(
            f"{experiment}/{leaf['id']}: analysis.protocol.scores.{experiment}.test_size_key {key!r} is not "
            f"in the leaf's config (no key {e.args[0]!r})"
        ) from None


def leaf_row(experiment: str, leaf: dict, setting: dict) -> dict:
    """One leaf as a row of ``CELL_COLUMNS``."""
    cfg = leaf["config"]
    done = read_json(_file(experiment, leaf, "train.done.json"))
    metrics = read_json(_file(experiment, leaf, "metrics.json")).get("metrics") or {}
    if setting["metric"] not in metrics:
        raise SpecError(
            f"{experiment}/{leaf['id']}: metrics.json has no {setting['metric']!r} (the configured score of "
            f"analysis.protocol.scores.{experiment}); it has {sorted(metrics)}"
        )
    row = {
        "experiment": experiment,
        "task": (cfg.get("task") or {}).get("name", ""),
        "mixer": cfg.get("variant", leaf["id"].split("/")[0]),
        "mixer_name": ((cfg.get("model") or {}).get("mixer") or {}).get("name", ""),
        "leaf": leaf["id"],
        "lr": leaf_lr(cfg),
        "seed": cfg.get("seed"),
        "n_params": _number(done.get("n_params")),
        "metric": setting["metric"],
        "score": _number(metrics[setting["metric"]]),
        "select": setting["select"],
        "select_value": _number(metrics.get(setting["select"])),
        "higher_is_better": setting["higher_is_better"],
        "n_test": _n_test(experiment, leaf, setting["test_size_key"]),
    }
    return row | scalars(read_diagnose(experiment, leaf))


def cell_rows(spec: dict) -> pd.DataFrame:
    """Every leaf of every experiment the artefact reads, as one frame of ``CELL_COLUMNS``."""
    proto = protocol(spec)
    rows = [leaf_row(e, leaf, score_setting(proto, e)) for e, ls in leaves(spec).items() for leaf in ls]
    return pd.DataFrame(rows, columns=CELL_COLUMNS)


def influence_rows(spec: dict, chosen: pd.DataFrame) -> pd.DataFrame:
    """The influence profiles (experiment, mixer, seed, lag, value) of the leaves at each (experiment,
    mixer)'s chosen lr (``chosen``: columns experiment, mixer, lr)."""
    pick = {(r.experiment, r.mixer): r.lr for r in chosen.itertuples()}
    out = []
    for e, ls in leaves(spec).items():
        for leaf in ls:
            cfg = leaf["config"]
            mixer = cfg.get("variant", leaf["id"].split("/")[0])
            lr = pick.get((e, mixer))
            if lr is None or not math.isclose(leaf_lr(cfg), lr, rel_tol=1e-12):
                continue
            d = read_diagnose(e, leaf)
            d = d[d["quantity"] == "influence"]
            for lag, value in zip(d["lag"], d["value"]):
                out.append({"experiment": e, "mixer": mixer, "seed": cfg.get("seed"), "lag": lag, "value": value})
    return pd.DataFrame(out, columns=["experiment", "mixer", "seed", "lag", "value"])
