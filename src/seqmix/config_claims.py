"""Loading a paper's claims: families expanded and defaults applied (seqmix.claim_families), errors reported at
the file's own entry, and the checks the schema cannot express (validate_claim)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .config_base import ConfigError, validate


def expand_paper_claims(cfg: Any, path: Path, schema: dict) -> list[tuple[str, str]]:
    """Expand ``cfg["claims"]`` in place (seqmix.claim_families); returns each claim's origin (the keypath
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
