"""E7 (Tables 2-3, b2s6 spec E7): the Long Range Arena numbers as long rows, ``lra_results/summary.csv``.

Rows (columns ``source, quantity, model, task, value, std, seeds, data``):

- ``printed`` / ``accuracy``: the paper's Tables 2-3 (test accuracy %, the literature rows quoted by the
  paper and its B2S6 row), from the ``lra_literature`` settings of the config (spec E7; "−" cells have no row);
- ``printed`` / ``avg_recomputed`` and ``avg_gap``: the mean of a row's six printed columns and its distance
  from the printed Avg. (spec E7's data-quality note: within 0.005 everywhere but S7, 71.84 against 71.82);
- ``ours`` / ``accuracy``: our runs of E7, per unit (S4D, S6, B2S6) and task, the mean over seeds in %, the
  sample std (ddof 1; empty for one seed), the seed count and the task's data source; task ``Avg.`` is the
  unweighted mean over the tasks run at this scale (5 at cpu, no Path-X), with the smallest seed count;
- ``ours`` / ``abs_gap_b2s6_s4d``: |B2S6 - S4D| in points on the image-like tasks run (Image, Pathfinder,
  Path-X), the spec §6 reading "B2S6 ≈ S4D on the image/path tasks".

``data`` names each task's data source from the resolved config (``data_source``), so a row of ours on
substitute data is never mistaken for LRA's.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ...report.tables import write_csv

EXPERIMENT = "e7"
UNITS = {"s4d": "S4D", "s6": "S6", "b2s6": "B2S6"}
IMAGE_LIKE = ("image", "pathfinder", "pathx")
AVG = "Avg."
REAL_SOURCES = {"lra", "imdb", "aan", "cifar10"}  # the tasks' options that read the real LRA / CIFAR files


def _text_source(task: dict, what: str) -> str:
    src = task.get("source", "auto")
    return {
        "procedural": f"procedural {what} (ours, L {task.get('max_len')})",
        "installed": f"{what} over installed text (ours, L {task.get('max_len')})",
        "auto": f"{what} over installed text, else procedural (ours, L {task.get('max_len')})",
    }[src]


def data_source(task: dict) -> str:
    """What a task config trains on, in words (b2s6 spec §7): the real set or the named substitute."""
    name, src = task["name"], task.get("source")
    if name == "lra_listops":
        if src == "lra":
            return "LRA ListOps (release TSV)"
        return f"ListOps generator (ours, depth <= {task.get('max_depth', 4)}, L <= {task.get('max_len', 256)})"
    if name == "lra_text":
        return "IMDb bytes" if src == "imdb" else _text_source(task, "marker-word sentiment")
    if name == "lra_retrieval":
        return "AAN pairs (LRA release)" if src == "aan" else _text_source(task, "same-source document pairs")
    if name == "lra_image":
        size = task.get("image_size")
        px = f", {size}x{size}" if size else ""
        if src == "cifar10":
            return f"CIFAR-10 grayscale{px}"
        return {"digits": "scikit-learn digits", "fashion-mnist": "Fashion-MNIST"}.get(
            src or "auto", "Fashion-MNIST, else scikit-learn digits"
        ) + f" (substitute{px})"
    if name == "lra_pathfinder":
        r = task.get("resolution", 32)
        return f"LRA Pathfinder {r}x{r}" if src == "lra" else f"Pathfinder generator (ours, {r}x{r})"
    raise ValueError(f"b2s6 E7: no data-source description for task {name!r}")


def is_substitute(task: dict) -> bool:
    return task.get("source") not in REAL_SOURCES


def task_names(lit: dict) -> dict[str, str]:
    """{e7 variant: the paper's column name}, in the paper's column order."""
    if len(lit["variants"]) != len(lit["tasks"]):
        raise ValueError("analysis.lra_literature: variants and tasks must pair up one to one")
    return dict(zip(lit["variants"], lit["tasks"]))


def printed_rows(lit: dict) -> list[dict]:
    """The paper's Tables 2-3 as rows, with each row's recomputed average and its gap to the printed one."""
    tasks = list(lit["tasks"])
    rows = []
    for entry in lit["rows"]:
        model, values = entry["model"], entry["values"]
        if len(values) != len(tasks) + 1:
            raise ValueError(
                f"analysis.lra_literature.rows.{model}: {len(values)} values, expected {len(tasks) + 1} "
                f"({', '.join(tasks)}, {AVG})"
            )
        for task, v in zip([*tasks, AVG], values):
            if v is not None:
                rows.append({"source": "printed", "quantity": "accuracy", "model": model, "task": task, "value": v})
        if None not in values:
            mean = sum(values[:-1]) / len(tasks)
            rows.append({"source": "printed", "quantity": "avg_recomputed", "model": model, "task": AVG, "value": mean})
            rows.append({"source": "printed", "quantity": "avg_gap", "model": model, "value": abs(mean - values[-1])})
    return rows


def our_rows(summary: pd.DataFrame, configs: dict, task_names: dict) -> list[dict]:
    """Per unit and task run: mean accuracy % over seeds, std, seeds, data source; then Avg. and the gaps."""
    rows, means = [], {}
    for variant, label in task_names.items():
        if variant not in configs:
            continue  # not run at this scale (Path-X below paper scale)
        data = data_source(configs[variant]["task"])
        for unit, model in UNITS.items():
            acc = summary[(summary["variant"] == variant) & (summary["sweep_value"] == unit)]["accuracy"] * 100
            if acc.empty:
                continue
            means.setdefault(unit, {})[variant] = (float(acc.mean()), int(acc.size))
            std = float(acc.std(ddof=1)) if acc.size > 1 else math.nan
            rows.append(_ours(model, label, float(acc.mean()), std, int(acc.size), data))
    for unit, by_task in means.items():
        values = [m for m, _ in by_task.values()]
        seeds = min(n for _, n in by_task.values())
        rows.append(_ours(UNITS[unit], AVG, sum(values) / len(values), math.nan, seeds, f"{len(values)} tasks"))
    for variant in IMAGE_LIKE:
        if variant in means.get("b2s6", {}) and variant in means.get("s4d", {}):
            gap = abs(means["b2s6"][variant][0] - means["s4d"][variant][0])
            rows.append({"source": "ours", "quantity": "abs_gap_b2s6_s4d", "task": task_names[variant], "value": gap})
    return rows


def _ours(model: str, task: str, mean: float, std: float, seeds: int, data: str) -> dict:
    return {
        "source": "ours",
        "quantity": "accuracy",
        "model": model,
        "task": task,
        "value": mean,
        "std": std,
        "seeds": seeds,
        "data": data,
    }


def lra_results(spec: dict, out: Path) -> None:
    """Writes ``out``/summary.csv (module docstring) from e7's summary and resolved configs."""
    lit = spec["analysis"]["lra_literature"]
    summary = pd.read_csv(spec["inputs"]["summaries"][EXPERIMENT])
    rows = printed_rows(lit) + our_rows(summary, spec["resolved"][EXPERIMENT], task_names(lit))
    write_csv(Path(out) / "summary.csv", rows, checksum=True)  # the claims verify it
