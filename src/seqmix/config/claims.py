"""Loading a paper's claims: families expanded and defaults applied (seqmix.config.claim_families), errors reported at
the file's own entry, and the checks the schema cannot express (validate_claim)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..results import LEAF_KEY
from .artefacts import stages_of
from .base import ConfigError, validate


def expand_paper_claims(cfg: Any, path: Path, schema: dict) -> list[tuple[str, str]]:
    """Expand ``cfg["claims"]`` in place (seqmix.config.claim_families); returns each claim's origin (the keypath
    of its entry in the file, and its family parameters or ''). The defaults and each claim's source are
    checked first: the defaults are chosen by source, so an error there would otherwise surface as a
    missing or unexpected key of some claim."""
    from .claim_families import ClaimSpecError, expand_claims

    if not isinstance(cfg, dict) or "claims" not in cfg:
        return []
    defaults = cfg.get("claim_defaults") or {}
    validate(defaults, schema["properties"]["claim_defaults"], path, "claim_defaults")
    try:
        cfg["claims"], origins = expand_claims(
            cfg["claims"], defaults, schema["$defs"]["claim"]["properties"]["source"]["enum"]
        )
    except ClaimSpecError as e:
        raise ConfigError(path, e.keypath, e.message) from None
    return origins


def at_claim_origin(err: ConfigError, origins: list[tuple[str, str]]) -> ConfigError:
    """An error in expanded claim i, reported at the file's own entry (claims[j]) it came from."""
    m = re.match(r"claims\[(\d+)\]", err.keypath)
    if not m or int(m.group(1)) >= len(origins):
        return err
    where, params = origins[int(m.group(1))]
    return in_member(ConfigError(err.file, where + err.keypath[m.end() :], err.message), params)


def in_member(err: ConfigError, params: str) -> ConfigError:
    return ConfigError(err.file, err.keypath, f"{err.message} (in the family member {params})") if params else err


def validate_claim(path: Path, where: str, claim: dict) -> None:
    """What the schema cannot say about a claim, and the claims engine would otherwise find only after
    every job has run: series checks need a series (``ours.over``), scalar checks a scalar, a
    ``within`` check without lo/hi/target compares to the reported value, which must then be a number, and
    a ``kind: reproduction`` claim is the paper's (``source: paper``)."""
    kind, over, reduce = claim["check"]["kind"], claim["ours"].get("over"), claim["ours"].get("reduce")
    if kind in ("ordering", "slope") and not over:
        raise ConfigError(path, f"{where}.ours.over", f"check kind {kind!r} needs a series: set ours.over to a column")
    if kind in ("ordering", "slope") and reduce:
        raise ConfigError(path, f"{where}.ours.reduce", f"check kind {kind!r} needs the series: remove ours.reduce")
    if kind in ("within", "threshold") and over and not reduce:
        raise ConfigError(
            path,
            f"{where}.ours.over",
            f"check kind {kind!r} needs one value: remove ours.over (or reduce the series with ours.reduce: min|max)",
        )
    if reduce and not over:
        raise ConfigError(path, f"{where}.ours.reduce", "ours.reduce needs a series: set ours.over to a column")
    if claim.get("kind") == "reproduction" and claim["source"] != "paper":
        raise ConfigError(
            path,
            f"{where}.kind",
            f"kind 'reproduction' compares with the paper's own number or relation, so it needs source: paper "
            f"(source is {claim['source']!r}; a value we or the spec derived is kind: derived)",
        )
    if kind == "within" and not {"lo", "hi", "target"} & set(claim["check"]):
        rep = claim.get("reported")
        rep = rep[0] if isinstance(rep, list) and rep else rep
        if isinstance(rep, bool) or not isinstance(rep, (int, float)):
            raise ConfigError(
                path,
                f"{where}.check",
                f"within needs lo/hi, a target, or a numeric reported value (reported is {claim.get('reported')!r})",
            )


# The columns seqmix.pipeline.stages writes for every leaf beside its task's own (evaluate_cell, diagnose_cell; the
# train markers when an experiment's last stage is train).
_TRAIN_MARKER = ("steps", "resumed_from", "seconds", "final_train_loss", "diagnostics_seconds", "backend", "device")
LEAF_COLUMNS = {
    "train": (*LEAF_KEY, *_TRAIN_MARKER, "data_source", "torch_threads"),
    "evaluate": LEAF_KEY,
    "diagnose": LEAF_KEY,
}


def check_claim_columns(path: Path, where: str, claim: dict, cfg: dict) -> None:
    """A claim reads ``results/<paper>/<ours.table>/summary.csv``: the table must be an experiment (collect
    writes it) or an analysis artefact that writes ``summary.csv``; for an experiment, every column the
    claim names (metric, over, where and ratio_to keys, relative_to.metric) must be one its last stage
    declares (``Task.summary_columns`` beside LEAF_COLUMNS). Otherwise the claim would end as 'not run'
    after every job had run. An analysis table's columns are the artefact's own and are not declared."""
    import fnmatch

    from . import catalogue

    ours, experiments = claim["ours"], cfg.get("experiments") or {}
    table = ours["table"]
    analyses = sorted(
        a for a, d in (cfg.get("artefacts") or {}).items() if d["kind"] == "analysis" and "summary.csv" in d["writes"]
    )
    if table in analyses:
        return
    if table not in experiments:
        raise ConfigError(
            path,
            f"{where}.ours.table",
            f"{table!r} is no table a job writes: expected an experiment ({', '.join(experiments) or '-'}) or an "
            f"analysis artefact writing summary.csv ({', '.join(analyses) or '-'})",
        )
    exp = experiments[table]
    stage = stages_of(cfg, table)[-1]
    names = sorted(_task_names(exp))
    declared = list(LEAF_COLUMNS[stage])
    for name in names:
        declared += catalogue.get("task", name).summary_columns.get(stage, [])
    wanted = [("ours.metric", ours["metric"])]
    wanted += [("ours.over", ours["over"])] if ours.get("over") else []
    wanted += [(f"ours.where.{k}", k) for k in ours.get("where") or {}]
    wanted += [(f"ours.ratio_to.{k}", k) for k in ours.get("ratio_to") or {}]
    ref = claim["check"].get("relative_to")
    wanted += [("check.relative_to.metric", ref["metric"])] if ref else []
    for keypath, column in wanted:
        if not any(fnmatch.fnmatchcase(str(column), p) for p in declared):
            raise ConfigError(
                path,
                f"{where}.{keypath}",
                f"{column!r} is not a column of {table}/summary.csv: its last stage {stage!r} of task "
                f"{', '.join(names)} writes {', '.join(declared)} (Task.summary_columns)",
            )


def _task_names(exp: dict) -> set[str]:
    """The tasks an experiment's leaves run: the base's and any a variant or a scale names."""
    blocks = [exp.get("base") or {}]
    for vspec in (exp.get("variants") or {}).values():
        blocks += [vspec or {}, *((vspec or {}).get("scales") or {}).values()]
    blocks += [sc.get("set") or {} for sc in (exp.get("scales") or {}).values()]
    return {b["task"]["name"] for b in blocks if isinstance(b.get("task"), dict) and "name" in b["task"]}
