"""What the Sessa paper computes without training.

- ``parameters``: the non-embedding parameter count of every variant of every experiment at the spec's
  scale, built on the ``meta`` device from the task and model sections of the resolved configs (its
  ``config_keys``: a learning-rate edit does not rerun it; spec §2.6: "Report the counts"; §5 row 2:
  matched within ±2%), with its ratio to the Sessa variant of the same experiment
  -> parameters/summary.csv (read by the ``params-*`` claims).
"""

from __future__ import annotations

from pathlib import Path

import torch

from ...models import build_model
from ...models.sizing import count_parameters
from ...registry import get_task
from ...report.tables import write_csv

REFERENCE = "sessa"  # the variant the others are matched to


class _Sizes:
    """A stand-in task that only answers ``model_inputs`` (what build_model reads)."""

    def __init__(self, inputs: dict):
        self.inputs = inputs

    def model_inputs(self) -> dict:
        return self.inputs


def model_inputs(cfg: dict) -> dict:
    """The sizes a leaf's model is built from, without building any data. A story LM's vocabulary is its
    trained BPE's (at most ``bpe_vocab``): known only after the corpus is read, so ``bpe_vocab`` stands in;
    it sizes only the tied embedding, which the count excludes, so the count is exact."""
    task_cfg = dict(cfg["task"])
    if task_cfg["name"] == "story_lm":
        return {"vocab_size": task_cfg["bpe_vocab"], "seq_len": task_cfg["segment_len"]}
    # symbolsoup, diffuse_mqar: sizes from options, no data built. From the task options alone (the spec holds
    # only the task and model sections, config_keys): the training dtype sizes nothing
    return get_task(task_cfg.pop("name"))(**task_cfg).model_inputs()


def count(cfg: dict) -> int:
    """Non-embedding trainable parameters of a leaf config's model (a tied head counts once, as the
    embedding: excluded)."""
    with torch.device("meta"):
        model = build_model(cfg["model"], _Sizes(model_inputs(cfg)))
    return count_parameters(model, exclude_embeddings=True)


def parameter_rows(resolved: dict) -> list[dict]:
    """One row per (experiment, variant): parameters and ratio_to_sessa (NaN without a sessa variant)."""
    rows = []
    for exp, variants in resolved.items():
        counts = {v: count(cfg) for v, cfg in variants.items()}
        ref = counts.get(REFERENCE)
        for variant, n in counts.items():
            ratio = n / ref if ref else float("nan")
            rows.append({"experiment": exp, "variant": variant, "parameters": n, "ratio_to_sessa": ratio})
    return rows


def parameters(spec: dict, out: Path) -> None:
    write_csv(Path(out) / "summary.csv", parameter_rows(spec["resolved"]), checksum=True)  # the claims verify it
