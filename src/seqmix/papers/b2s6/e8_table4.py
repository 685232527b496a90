"""E8 (Table 4, b2s6 spec E8, §2.6): the LRA configuration table rendered from the paper-scale configs of E7.

``table4_configs`` (analysis) reads the configs of experiment e7 resolved at the paper scale (the artefact's
``reads.scale_configs``; the same dicts the paper-scale runs train with, at whatever scale the DAG runs) and
writes one row per (task, field): the value the config gives, the paper's printed value (the
``lra_table4`` settings, the spec's copy of Table 4) and ``match`` (1/0), the cell-by-cell check
that our paper-scale configs are the paper's Table 4. ``table4`` (table) pivots those rows into the paper's
layout with p = #Features / h and the cells that differ from print. Edit a Table 4 setting of e7 and both
change (tests/papers/b2s6/test_e7_tables.py), so the table and the runs cannot drift apart.

Fields: Depth (model.n_layers), #Features (model.d_model), Norm (model.norm: BN / LN), Prenorm
(model.prenorm), LR (train.lr), BS (train.batch), Epochs (train.steps / ceil(N_train / batch), N_train from
``lra_table4``), WD (train.weight_decay), h (the B2S6 mixer's ``blocks``: the config's value,
else the mixer's declared default).
"""

from __future__ import annotations

import inspect
import math
from pathlib import Path

import pandas as pd

from ... import registry
from ...report.tables import write_csv, write_table

EXPERIMENT = "e7"
NORMS = {"batchnorm": "BN", "layernorm": "LN"}
FIELDS = ("Depth", "#Features", "Norm", "Prenorm", "LR", "BS", "Epochs", "WD", "h")


def _required(cfg: dict, dotted: str, variant: str):
    node = cfg
    for key in dotted.split("."):
        if not isinstance(node, dict) or key not in node:
            raise ValueError(
                f"config/papers/b2s6.yaml: experiments.{EXPERIMENT} variant {variant!r} at paper scale has no "
                f"{dotted}: Table 4 is rendered from explicit settings only"
            )
        node = node[key]
    return node


def _blocks(cfg: dict) -> int:
    """h of the B2S6 unit: the mixer's ``blocks`` when set, else the b2s6 mixer's declared default."""
    mixer = cfg["model"]["mixer"]
    if "blocks" in mixer:
        return int(mixer["blocks"])
    return int(inspect.signature(registry.get("mixer", "b2s6")).parameters["blocks"].default)


def config_fields(cfg: dict, variant: str, train_examples: int) -> dict:
    """The Table 4 fields of one task's paper-scale config (see the module docstring)."""
    batch = int(_required(cfg, "train.batch", variant))
    per_epoch = math.ceil(train_examples / batch)
    steps = int(_required(cfg, "train.steps", variant))
    epochs = steps / per_epoch
    return {
        "Depth": int(_required(cfg, "model.n_layers", variant)),
        "#Features": int(_required(cfg, "model.d_model", variant)),
        "Norm": NORMS[_required(cfg, "model.norm", variant)],
        "Prenorm": bool(_required(cfg, "model.prenorm", variant)),
        "LR": float(_required(cfg, "train.lr", variant)),
        "BS": batch,
        "Epochs": int(epochs) if float(epochs).is_integer() else round(epochs, 3),
        "WD": float(_required(cfg, "train.weight_decay", variant)),
        "h": _blocks(cfg),
    }


def _same(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=0.0)
    return str(a) == str(b)


def table4_configs(spec: dict, out: Path) -> None:
    """Writes ``out``/summary.csv: task, field, config (ours), printed (the paper's), match."""
    st = spec["analysis"]["lra_table4"]
    configs = spec["resolved_at"]["paper"][EXPERIMENT]
    rows = []
    for entry in st["tasks"]:
        variant, printed = entry["variant"], entry["printed"]
        if variant not in configs:
            raise ValueError(f"b2s6 E8: Table 4 prints {variant!r}, which experiment {EXPERIMENT} has no variant for")
        ours = config_fields(configs[variant], variant, int(entry["train_examples"]))
        for field in FIELDS:
            rows.append(
                {
                    "task": entry["name"],
                    "field": field,
                    "config": ours[field],
                    "printed": printed[field],
                    "match": int(_same(ours[field], printed[field])),
                }
            )
    write_csv(Path(out) / "summary.csv", rows, checksum=True)  # the claims verify it


def table4(spec: dict, out: Path) -> None:
    """Writes table4.md/.tex/.csv: per task the fields from the configs, p and the cells that differ."""
    rows = pd.read_csv(spec["inputs"]["artefacts"]["table4_configs"][0], keep_default_na=False, dtype=str)
    frame = []
    for task, part in rows.groupby("task", sort=False):
        cells = part.set_index("field")
        row = {"Task": task, **{f: cells.loc[f, "config"] for f in FIELDS}}
        row["p (= #Features / h)"] = str(int(row["#Features"]) // int(row["h"]))
        off = [f"{f} {cells.loc[f, 'config']} (paper {cells.loc[f, 'printed']})" for f in FIELDS]
        off = [o for o, f in zip(off, FIELDS) if cells.loc[f, "match"] != "1"]
        row["as printed in the paper"] = "yes" if not off else "no: " + "; ".join(off)
        frame.append(row)
    caption = (
        "Table 4 (E8): the LRA settings of B2S6 per task, rendered from the paper-scale configs of experiment e7 "
        f"(what the paper-scale runs train with; shown at scale `{spec['scale']}` too), each cell compared with "
        "the paper's printed Table 4; epochs = steps / ceil(N_train / BS); p = #Features / h"
    )
    write_table(pd.DataFrame(frame), Path(out) / "table4", caption)
