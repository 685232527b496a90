"""Loading a paper's claims: families expanded and defaults applied (seqmix.config.claim_families), errors reported at
the file's own entry, and the checks the schema cannot express (validate_claim)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..results import LEAF_KEY
from .artefacts import analysis_tables, stages_of
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
    every job has run: series checks need a series (``ours.over``), scalar checks a scalar, and a
    ``within`` check without lo/hi/target compares to the reported value, which must then be a number. The kind
    policy is seqmix.config.claim_kinds.validate_kind."""
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
    after every job had run. An analysis table's columns are the artefact's own and declared nowhere, so they
    are checked when the claim is judged: a column the table lacks makes it 'invalid', naming the table, the
    column and the table's columns (``seqmix.claims.select``), never 'not run'."""
    import fnmatch

    from . import catalogue

    ours, experiments = claim["ours"], cfg.get("experiments") or {}
    table = ours["table"]
    analyses = analysis_tables(cfg)
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


# ----------------------------------------------------------------------------- series points, noise, readings

_LEAF_AXES = ("sweep_value", "variant")


def fill_series_points(cfg: dict, scale: str) -> None:
    """A series over an experiment's ``sweep_value`` or ``variant`` without a list in ``where`` reads every
    point the experiment runs at ``scale`` (its sweep values, its variants there): written into ``where`` so
    that a missing point is 'not run', never a series silently shorter. Other series must list their points
    (validate_claim)."""
    from .leaves import scale_variants

    experiments = cfg.get("experiments") or {}
    for claim in cfg.get("claims") or []:
        ours = claim["ours"]
        over, where = ours.get("over"), ours.get("where") or {}
        if over not in _LEAF_AXES or isinstance(where.get(over), list) or ours["table"] not in experiments:
            continue
        exp = experiments[ours["table"]]
        if over == "variant":
            points = scale_variants(exp, scale)
        elif exp.get("sweep"):
            points = list(exp["scales"][scale].get("sweep_values", exp["sweep"]["values"]))
        else:
            continue
        ours["where"] = {**where, over: points}


def validate_noise(path: Path, where: str, claim: dict, scale: str) -> None:
    """A noise model is of a mean over seeds (the selection's aggregate must be ``mean``), a binomial one
    needs the test-set size of every scale it names, and an ordering's ``rtol`` (the slack of a deterministic
    series) does not mix with a noise model: the interval decides."""
    spec, sel, check = claim.get("noise"), claim["ours"], claim["check"]
    kind = spec if isinstance(spec, str) or spec is None else next(iter(spec))
    active = kind not in (None, "none")
    if active and sel.get("aggregate", "median") != "mean":
        raise ConfigError(
            path,
            f"{where}.noise",
            f"noise {kind!r} is of a mean over seeds: set ours.aggregate: mean (it is "
            f"{sel.get('aggregate', 'median')!r}) or noise: none",
        )
    if isinstance(spec, dict) and isinstance(spec[kind]["n"], dict) and scale not in spec[kind]["n"]:
        raise ConfigError(path, f"{where}.noise.{kind}.n", f"no test-set size for scale {scale!r}")
    noisy_default = kind is None and sel.get("aggregate") == "mean" and claim.get("kind") != "consistency"
    if check["kind"] == "ordering" and check.get("rtol") and (active or noisy_default):
        raise ConfigError(
            path,
            f"{where}.check.rtol",
            "an ordering's rtol is the slack of a deterministic series; with a noise model (a mean over seeds "
            "has noise: seeds by default) each step must clear its interval: drop rtol or set noise: none",
        )


def validate_series(path: Path, where: str, claim: dict) -> None:
    """A series names its points: a list in ``where`` for its ``over`` column (filled for an experiment's
    sweep_value and variant by fill_series_points), and an ordering orders exactly those points."""
    ours, check = claim["ours"], claim["check"]
    over = ours.get("over")
    if not over:
        return
    points = (ours.get("where") or {}).get(over)
    if not isinstance(points, list):
        raise ConfigError(
            path,
            f"{where}.ours.where",
            f"the series over {over!r} needs the list of its points in ours.where.{over} (a point missing from "
            "the results is then 'not run', never dropped from the series unseen)",
        )
    if check["kind"] == "ordering" and sorted(map(str, check["order"])) != sorted(map(str, points)):
        raise ConfigError(
            path,
            f"{where}.check.order",
            f"an ordering orders the series' points: order {check['order']} is not ours.where.{over} {points}",
        )


def _selection_key(claim: dict) -> str:
    import json

    ref = claim["check"].get("relative_to")
    return json.dumps([claim["ours"], claim.get("seeds"), ref], sort_keys=True, default=str)


def check_readings(path: Path, claims: list[dict], origins: list[tuple[str, str]]) -> None:
    """One primary claim per measured quantity: two primary claims with one selection (ours, seeds, a
    slope's relative_to) are an error; an alternative reading is ``secondary: {of: <primary id>, why}``,
    shown but not counted, and its ``of`` must name a primary claim of the paper (the one with its
    selection, when one has it)."""
    ids = {c["id"]: c for c in claims}
    first: dict[str, tuple[str, str]] = {}
    for claim, (where, params) in zip(claims, origins):
        label = f"{claim['id']} ({where}{', ' + params if params else ''})"
        key = _selection_key(claim)
        sec = claim.get("secondary")
        if sec is None:
            if key in first:
                raise ConfigError(
                    path,
                    f"{where}.ours",
                    f"claims {first[key][0]} and {label} read the same selection: one quantity, one primary claim; "
                    "mark the alternative reading secondary: {of: <primary id>, why: ...}",
                )
            first[key] = (label, claim["id"])
    for claim, (where, params) in zip(claims, origins):
        sec = claim.get("secondary")
        if sec is None:
            continue
        of = ids.get(sec["of"])
        if of is None or of.get("secondary") is not None:
            raise in_member(
                ConfigError(path, f"{where}.secondary.of", f"{sec['of']!r} is no primary claim of this paper"), params
            )
        same = first.get(_selection_key(claim))
        if same and same[1] != sec["of"]:
            raise in_member(
                ConfigError(
                    path,
                    f"{where}.secondary.of",
                    f"{claim['id']} reads the selection of the primary claim {same[1]}, not of {sec['of']!r}",
                ),
                params,
            )
