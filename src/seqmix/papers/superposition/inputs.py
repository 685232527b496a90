"""How the superposition artefacts read their run spec (and nothing else).

A spec holds ``paper, scale, name, paper_dir, inputs, resolved, analysis, reported`` (see ``__init__``):
settings come from ``analysis`` at the spec's scale, measured numbers from the files listed under ``inputs``,
the paper's numbers from the claims' ``reported`` values. No function here builds a results path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ...results import read_leaf_output

SCALES = ("tiny", "cpu", "paper")
CONFIG = "config/papers/superposition.yaml"

# E1's supervision modes in the order the tables and figures show them, with their labels and colours
MODES = ["sup", "node", "e2e_cos", "e2e_ce", "composite_sup"]
MODE_LABEL = {
    "sup": "L_sup",
    "node": "L_node",
    "e2e_cos": "L_e2e (cosine, §3)",
    "e2e_ce": "L_e2e (lex-min CE, Lemma 49)",
    "composite_sup": "App. N composite (CE + sup)",
}
MODE_COLOR = {
    "sup": "tab:blue",
    "node": "tab:orange",
    "e2e_cos": "tab:green",
    "e2e_ce": "tab:red",
    "composite_sup": "tab:purple",
}


class SpecError(KeyError):
    """A spec lacks what an artefact needs: names the artefact, the key path and where to declare it."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


def _where(spec: dict) -> str:
    return f"artefact {spec.get('name', '?')!r} of paper {spec.get('paper', 'superposition')!r}"


def setting(spec: dict, key: str) -> Any:
    """``analysis.<key>`` at the spec's scale: a {tiny, cpu, paper} map gives the scale's value, any other
    value holds at every scale."""
    analysis = spec.get("analysis") or {}
    if key not in analysis:
        raise SpecError(
            f"{_where(spec)}: analysis.{key} is not in its spec; declare it under "
            f"artefacts.{spec.get('name')}.analysis in {CONFIG}"
        )
    value = analysis[key]
    if isinstance(value, dict) and value and set(value) <= set(SCALES):
        if spec["scale"] not in value:
            raise SpecError(f"{CONFIG}: analysis.{key} has no value for scale {spec['scale']!r} (has {sorted(value)})")
        return value[spec["scale"]]
    return value


def summary(spec: dict, exp: str) -> pd.DataFrame:
    """The experiment's summary.csv (one row per leaf) from ``inputs.summaries``."""
    summaries = (spec.get("inputs") or {}).get("summaries") or {}
    if exp not in summaries:
        raise SpecError(f"{_where(spec)}: inputs.summaries.{exp} is missing; declare reads.summaries: [{exp}]")
    return pd.read_csv(summaries[exp])


def artefact_file(spec: dict, artefact: str, filename: str) -> Path:
    """The output ``filename`` of another artefact, from ``inputs.artefacts.<artefact>``."""
    paths = ((spec.get("inputs") or {}).get("artefacts") or {}).get(artefact)
    if paths is None:
        raise SpecError(
            f"{_where(spec)}: inputs.artefacts.{artefact} is missing; declare reads.artefacts: [{artefact}]"
        )
    for p in paths:
        if Path(p).name == filename:
            return Path(p)
    raise SpecError(f"{_where(spec)}: artefact {artefact!r} lists no {filename} among {[Path(p).name for p in paths]}")


def histories(spec: dict, exp: str) -> pd.DataFrame:
    """Long table of the in-training diagnostics (history.json ``diagnostics``) of every leaf of ``exp``, with
    ``variant`` and ``seed`` columns; empty when no leaf logged any."""
    leaves = (spec.get("inputs") or {}).get("leaves") or {}
    if exp not in leaves:
        raise SpecError(
            f"{_where(spec)}: inputs.leaves.{exp} is missing; declare reads.leaves: {{{exp}: history.json}}"
        )
    frames = []
    for leaf in leaves[exp]:
        h = read_leaf_output(Path(leaf["out_dir"]) / "history.json").get("diagnostics")
        if not h:
            continue
        df = pd.DataFrame(h).astype(float)
        df["variant"], df["seed"] = leaf["config"]["variant"], leaf["config"]["seed"]
        frames.append(df)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def task(spec: dict, exp: str, variant: str) -> dict:
    """The resolved task block of one variant of ``exp`` (``resolved.<exp>.<variant>.task``)."""
    try:
        return spec["resolved"][exp][variant]["task"]
    except KeyError:
        raise SpecError(
            f"{_where(spec)}: resolved.{exp}.{variant}.task is missing; declare reads.summaries: [{exp}]"
        ) from None


def reported(spec: dict, claim_id: str) -> Any:
    """The claim's ``reported`` value (the paper's number or statement)."""
    values = spec.get("reported") or {}
    if claim_id not in values:
        raise SpecError(
            f"{_where(spec)}: reported.{claim_id} is missing; list {claim_id} under "
            f"artefacts.{spec.get('name')}.claims in {CONFIG}"
        )
    return values[claim_id]


def reported_number(spec: dict, claim_id: str) -> float:
    """A claim's ``reported`` value that is one number (a [mean, std] pair gives its mean)."""
    value = reported(spec, claim_id)
    if isinstance(value, (list, tuple)) and value:
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SpecError(f"{CONFIG}: claim {claim_id}: reported must be a number here, got {value!r}")
    return float(value)
