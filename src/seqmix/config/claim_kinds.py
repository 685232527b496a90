"""The kind policy of a claim (CONTRIBUTING, 'Which kind'), checked when a paper's config loads.

Where a claim's value comes from decides which kinds it may have:

- **measured**: the summary of an experiment (its cells train a model, or run one on data as the paper's own
  experiment does: a diagnose-only experiment at initialisation counts), or an analysis artefact that reads an
  experiment's summaries or leaves, directly or through another artefact;
- **code evaluation**: an analysis artefact that reads no experiment's results (nothing, or only resolved
  configs: parameter counts, closed forms, theory checks, Monte Carlo of a formula).

The rule (``validate_kind``):

1. ``reproduction`` needs ``source: paper`` and a measured value: the paper's own number or relation against
   what our experiment measured. A code evaluation against the paper's theorem or printed value is ``derived``.
2. ``derived`` on a code evaluation names its independent ``law:`` (a theorem or number of the paper, a Monte
   Carlo, a bound evaluated apart from the formula the code implements). Without one the comparison value is the
   spec's (or our) evaluation of the formula the code implements: ``kind: consistency``.
3. ``law:`` is refused on any other kind: a consistency claim has no independent law, and a reproduction's is
   the paper's number. ``law`` is never a ``claim_defaults`` key (the schema), so each claim or family names its own.
"""

from __future__ import annotations

from pathlib import Path

from .base import ConfigError

MEASURED, CODE = "measured", "code evaluation"


def table_origins(cfg: dict) -> dict[str, str]:
    """{table: MEASURED | CODE} for every experiment and analysis artefact of the paper (the tables a claim
    reads as ``ours.table``)."""
    experiments = cfg.get("experiments") or {}
    artefacts = cfg.get("artefacts") or {}
    out = {e: MEASURED for e in experiments}

    def origin(name: str, seen: tuple[str, ...]) -> str:
        if name in out:
            return out[name]
        reads = artefacts[name].get("reads") or {}
        direct = [*(reads.get("summaries") or []), *(reads.get("leaves") or {})]
        upstream = [a for a in reads.get("artefacts") or [] if a in artefacts and a not in seen]
        found = any(e in experiments for e in direct) or any(origin(a, (*seen, name)) == MEASURED for a in upstream)
        out[name] = MEASURED if found else CODE
        return out[name]

    for name in artefacts:
        origin(name, ())
    return out


def validate_kind(path: Path, where: str, claim: dict, origins: dict[str, str]) -> None:
    """The kind policy (the module docstring) for one expanded claim; ``origins`` from ``table_origins``."""
    kind = claim.get("kind") or {"paper": "reproduction", "spec-derived": "derived"}.get(claim["source"], "consistency")
    table = claim["ours"]["table"]
    origin = origins.get(table, MEASURED)  # an unknown table is check_claim_columns' error
    if kind == "reproduction" and claim["source"] != "paper":
        raise ConfigError(
            path,
            f"{where}.kind",
            f"kind 'reproduction' compares with the paper's own number or relation, so it needs source: paper "
            f"(source is {claim['source']!r}; a value we or the spec derived is kind: derived)",
        )
    if kind == "reproduction" and origin == CODE:
        raise ConfigError(
            path,
            f"{where}.kind",
            f"kind 'reproduction' needs a measured value, but {table!r} is a code evaluation (it reads no "
            "experiment's results): against the paper's theorem or printed value it is kind: derived with law: "
            "<the paper's result>, against the spec's evaluation of the same formula kind: consistency",
        )
    if kind == "derived" and origin == CODE and not claim.get("law"):
        raise ConfigError(
            path,
            f"{where}.law",
            f"a derived claim on a code evaluation ({table!r} reads no experiment's results) names the independent "
            "law it compares with (law: 'Monte Carlo over N draws', 'the paper's Lemma X', ...); a comparison "
            "with the spec's (or our) evaluation of the formula the code implements is kind: consistency",
        )
    if claim.get("law") and kind != "derived":
        raise ConfigError(
            path,
            f"{where}.law",
            f"law: names the independent law of a derived claim; this claim is kind {kind!r} (a consistency claim "
            "has none, a reproduction's is the paper's number): drop law or make the claim kind: derived",
        )
