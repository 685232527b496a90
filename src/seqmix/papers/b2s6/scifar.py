"""What the b2s6 sCIFAR tables (E2 and E6, Table 1) share: the data-source label of a run, the paper's cells
from the claims' ``reported`` values, and our accuracy cells.

The paper trains on grayscale sCIFAR-10; our cpu and tiny scales train on a substitute (b2s6 spec §6, §7),
so every column of ours names the data it was trained on, read from the resolved configs (the ``lra_image``
task's ``source`` and ``image_size``), never guessed.
"""

from __future__ import annotations

import pandas as pd

from ...report.stats import MISSING, mean_std
from ...tasks.image_data import DATA_SOURCES

CONFIG = "config/papers/b2s6.yaml"
# an ``auto`` source is decided on the machine that trains; the label says both possibilities
AUTO = "Fashion-MNIST where installed, else sklearn-digits (substitute)"


def _one_source(task: dict) -> str:
    source = task.get("source", "auto")
    if source == "cifar10":
        label = "grayscale sCIFAR-10" if int(task.get("channels", 1)) == 1 else "colour CIFAR-10"
    else:
        label = AUTO if source == "auto" else DATA_SOURCES[source]
    size = task.get("image_size")
    return f"{label}, resized to {size}x{size} (L = {size * size})" if size else label


def data_label(spec: dict, experiment: str) -> str:
    """The data every variant of ``experiment`` trained on, e.g. "sklearn-digits (substitute)"; variants that
    disagree give "mixed data: a / b"."""
    labels = sorted({_one_source(cfg["task"]) for cfg in spec["resolved"][experiment].values()})
    return labels[0] if len(labels) == 1 else "mixed data: " + " / ".join(labels)


def is_substitute(label: str) -> bool:
    return "sCIFAR" not in label or "mixed" in label


def paper_cell(spec: dict, claim_id: str) -> str:
    """The paper's value of a claim as text: "m ± s" from a [mean, std] pair (percent, as printed), the
    string itself otherwise ("about 88"); '—' where the artefact shows no such claim."""
    values = spec.get("reported") or {}
    if claim_id not in values:
        return MISSING
    value = values[claim_id]
    if isinstance(value, (list, tuple)):
        if len(value) != 2:
            raise ValueError(f"{CONFIG}: claim {claim_id}: reported must be [mean, std] or text, got {value!r}")
        return printed_pm(value)
    return str(value)


def printed_pm(pair) -> str:
    """A printed [mean, std] pair (percent) as "m ± s", two decimals like the paper's tables."""
    return f"{float(pair[0]):.2f} ± {float(pair[1]):.2f}"


def summary(spec: dict, experiment: str) -> pd.DataFrame:
    """The experiment's summary.csv (one row per leaf: variant, sweep_value, seed, accuracy, ...)."""
    paths = (spec.get("inputs") or {}).get("summaries") or {}
    if experiment not in paths:
        raise KeyError(
            f"artefact {spec.get('name')!r}: inputs.summaries.{experiment} is missing "
            f"(artefacts.{spec.get('name')}.reads.summaries in {CONFIG})"
        )
    return pd.read_csv(paths[experiment])


def accuracy_cell(rows: pd.DataFrame) -> str:
    """Test accuracy in percent, mean ± std (ddof 1) over the rows' seeds; '—' for none."""
    return mean_std(rows["accuracy"] * 100.0, digits=2) if len(rows) else MISSING


def seed_count(rows: pd.DataFrame) -> int:
    return int(rows["seed"].nunique()) if len(rows) else 0
