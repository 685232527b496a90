"""The long table of the extrapolation experiment (rotations spec E1/E2): one row per (variant, seed, length)
from ``e1/summary.csv``, whose columns are per length (``ppl_L<L>``, ``nll_L<L>``, ``ratio_L<L>``). The
length is also written as ``factor`` = L / training context, so that claims name "16x" at every scale (the
context is 16 at tiny, 128 at cpu, 512 at paper)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from ...report.tables import write_csv

CONFIG = "config/papers/rotations.yaml"
EXPERIMENT = "e1"
# variant -> (the paper's name, its table); M0 (NoPE) is not run (spec §2.3)
MODELS = {
    "m1": ("RoFormer / RoPE (M1)", 1),
    "m2": ("Fixed RoPE Q/K/V (M2)", 1),
    "m3": ("Random accumulated rotation Q/K (M3)", 1),
    "m4": ("Random accumulated rotation Q/K/V (M4)", 1),
    "m5": ("Learned token rotation Q/K (M5)", 1),
    "m6": ("Learned token rotation Q/K/V (M6)", 1),
    "m7": ("ALiBi (M7)", 2),
}
_PPL = re.compile(r"^ppl_L(\d+)$")


def lengths_of(summary: pd.DataFrame) -> list[int]:
    """The evaluation lengths present in a summary, ascending."""
    return sorted(int(m.group(1)) for c in summary.columns if (m := _PPL.match(c)))


def contexts(spec: dict) -> dict[str, int]:
    """{variant: training context} from the resolved configs (``task.context``)."""
    return {v: int(cfg["task"]["context"]) for v, cfg in spec["resolved"][EXPERIMENT].items()}


def long_rows(summary: pd.DataFrame, context: dict[str, int]) -> list[dict]:
    """Rows {variant, model, seed, length, factor, ppl, nll, ratio} of a wide e1 summary; a variant missing
    from ``context`` is a config error naming the file."""
    rows = []
    for _, r in summary.iterrows():
        variant = str(r["variant"])
        if variant not in context:
            raise KeyError(f"{CONFIG}: experiments.{EXPERIMENT}.variants has no {variant!r} (in the summary)")
        for L in lengths_of(summary):
            if pd.isna(r.get(f"ppl_L{L}")):
                continue
            rows.append(
                {
                    "variant": variant,
                    "model": MODELS.get(variant, (variant, 0))[0],
                    "seed": int(r["seed"]),
                    "length": L,
                    "factor": L // context[variant],
                    "ppl": float(r[f"ppl_L{L}"]),
                    "nll": float(r[f"nll_L{L}"]),
                    "ratio": float(r[f"ratio_L{L}"]),
                }
            )
    return rows


def frame(spec: dict) -> pd.DataFrame:
    """The long table of ``spec`` (an artefact spec reading summaries.e1 or the extrapolation artefact)."""
    inputs = spec.get("inputs") or {}
    produced = (inputs.get("artefacts") or {}).get("extrapolation")
    if produced:
        return pd.read_csv(produced[0])
    summaries = inputs.get("summaries") or {}
    if EXPERIMENT not in summaries:
        raise KeyError(
            f"artefact {spec.get('name')!r}: needs reads.summaries [e1] or reads.artefacts [extrapolation] in {CONFIG}"
        )
    return pd.DataFrame(long_rows(pd.read_csv(summaries[EXPERIMENT]), contexts(spec)))


def extrapolation(spec: dict, out: Path) -> None:
    """Writes ``summary.csv`` (the long table) into ``out``."""
    summary = pd.read_csv(spec["inputs"]["summaries"][EXPERIMENT])
    write_csv(Path(out) / "summary.csv", long_rows(summary, contexts(spec)), checksum=True)  # the claims verify it
