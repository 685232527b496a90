"""E9 (paper App. G, Figure 7 and its table): language models of Mamba blocks whose unit Gamma is S6, B2S6 or
S4D (spec §2.7), validation perplexity at every 1/11 of the run and tokens/s per model.

One analysis (one job: the tiny DAG's budget) writes, under ``e9_lm/``:

- ``figure7.png/.pdf/.csv``: our validation perplexity against the step (mean over seeds), beside the paper's
  11 x 3 numbers;
- ``e9_lm.md/.tex/.csv`` (Figure 7's table): the 11 points of both side by side, then tokens/s, B2S6's time
  overhead over S6 (the paper: 2.7% slower; a reported number, not a claim) and the parameter counts;
- ``summary.csv``: per leaf the final validation perplexity (the last in-training point, at the last step),
  tokens/s and the parameter count, which the e9-* claims read.

Ours are per byte on the offline byte corpus (a substitute, spec §7) unless the run read SlimPajama; the
paper's are per GPT-NeoX BPE token on SlimPajama-6B, so the absolute perplexities are not comparable, only the
ordering and the relative gaps are.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ...report.plots import legend_outside, paper_values, save_figure
from ...report.tables import write_csv, write_table
from ...results import is_done, leaf_marker, read_leaf_output
from ...training.loop import build, build_task

UNITS = {"s6": "S6", "b2s6": "B2S6", "s4d": "S4D"}
# App. G's table (spec E9): step -> (S6, B2S6, S4D) perplexity, one point per 1/11 epoch of SlimPajama-6B
PAPER_PPL = {
    2620: (61.5441, 62.6133, 64.1203),
    5241: (42.7838, 44.3846, 46.5118),
    7862: (34.1740, 35.0440, 39.3496),
    10483: (29.7074, 30.3787, 35.3028),
    13104: (27.0171, 27.3891, 32.5946),
    15725: (25.2265, 25.2668, 30.6639),
    18346: (23.9789, 23.9370, 29.2052),
    20967: (23.0044, 22.8394, 28.0314),
    23588: (22.2368, 22.1322, 27.0897),
    26209: (21.6068, 21.5206, 26.3221),
    28830: (21.0785, 20.9773, 25.6661),
}
PAPER_OVERHEAD = "2.7% slower than S6"


def _leaves(spec: dict) -> list[dict]:
    leaves = spec["inputs"]["leaves"]["e9"]
    for leaf in leaves:
        marker = leaf_marker(Path(leaf["out_dir"]), "train")
        if not is_done(marker, leaf["hash"]):
            raise SystemExit(f"e9: {leaf['id']} is not trained for this config ({marker})")
    return leaves


def curve_rows(spec: dict) -> list[dict]:
    """One row per leaf and in-training evaluation: variant, seed, step, point (= 11 step / steps), val_ppl."""
    rows = []
    for leaf in _leaves(spec):
        cfg = leaf["config"]
        diag = read_leaf_output(Path(leaf["out_dir"]) / "history.json").get("diagnostics") or {}
        steps = int(cfg["train"]["steps"])
        for step, ppl in zip(diag.get("step", []), diag.get("val_ppl", [])):
            if step == 0:  # the model at initialisation: not one of the 11 points
                continue
            rows.append(
                {
                    "variant": cfg["variant"],
                    "seed": cfg["seed"],
                    "step": step,
                    "point": 11 * step / steps,
                    "val_ppl": ppl,
                }
            )
    return rows


def throughput_rows(spec: dict) -> list[dict]:
    """Per leaf: trained tokens per second of training time (in-training evaluation excluded)."""
    rows = []
    for leaf in _leaves(spec):
        cfg, done = leaf["config"], read_leaf_output(leaf_marker(Path(leaf["out_dir"]), "train"))
        tokens = int(done["steps"]) * int(cfg["train"]["batch"]) * int(cfg["task"]["segment_len"])
        seconds = float(done["seconds"]) - float(done.get("diagnostics_seconds") or 0.0)
        rows.append({"variant": cfg["variant"], "seed": cfg["seed"], "tokens_per_s": tokens / max(seconds, 1e-9)})
    return rows


def _recorded(spec: dict, key: str) -> set:
    """The values of ``key`` in the leaves' train markers (what each run recorded where it trained)."""
    return {read_leaf_output(leaf_marker(Path(leaf["out_dir"]), "train")).get(key) for leaf in _leaves(spec)}


def data_source(spec: dict) -> str:
    """The corpus the runs read (the task's own label, e.g. "installed text: cpython-stdlib (substitute)"): as
    each leaf's train marker recorded it where it trained (a GPU box or a node may hold other files than the
    machine drawing the table); for older markers, the label the task gives here."""
    found = _recorded(spec, "data_source") - {None}
    if not found:
        return str(build_task(_leaves(spec)[0]["config"]).data_source)
    return " / ".join(sorted(found))


def devices(spec: dict) -> str:
    """Where the leaves trained, from their train markers ("cpu", "cuda", ...; "unrecorded" for older ones)."""
    return ", ".join(sorted({d or "unrecorded" for d in _recorded(spec, "device")}))


def draw_figure7(df: pd.DataFrame, source: str, out: Path) -> None:
    """Ours on the left; the paper's App. G numbers on a panel of their own (other data and units)."""
    fig, (ax, ax_p) = plt.subplots(1, 2, figsize=(11, 3.6))
    for i, (variant, label) in enumerate(UNITS.items()):
        sub = df[df["variant"] == variant] if len(df) else df
        if len(sub):
            m = sub.groupby("step")["val_ppl"].mean()
            ax.plot(m.index, m.values, "o-", ms=3, color=f"C{i}", label=f"ours: {label}")
        paper = [v[i] for v in PAPER_PPL.values()]
        paper_values(ax_p, list(PAPER_PPL), paper, line=True, color=f"C{i}", label=f"paper: {label}")
    ax.set_title(f"ours: {source}, perplexity per byte", fontsize=9)
    ax_p.set_title("paper (App. G): SlimPajama-6B, per BPE token", fontsize=9)
    for a in (ax, ax_p):
        a.set_xlabel("step")
        a.set_yscale("log")
    ax.set_ylabel("validation perplexity")
    fig.suptitle("Figure 7 (E9): Mamba-block language models with S6, B2S6 and S4D units", fontsize=10, y=1.03)
    legend_outside(fig)
    save_figure(fig, out / "figure7", df)


def _fmt(v: float) -> str:
    return "—" if v is None or not np.isfinite(v) else f"{v:.4g}"


def table_rows(curves: pd.DataFrame, speed: pd.Series, params: dict[str, int]) -> list[dict]:
    """The paper's 11 x 3 perplexities beside ours (mean over seeds), then tokens/s and parameter counts."""
    ours = curves.groupby(["step", "variant"])["val_ppl"].mean().unstack() if len(curves) else pd.DataFrame()
    our_steps, paper_steps = list(ours.index), list(PAPER_PPL)
    rows = []
    for i in range(max(len(our_steps), len(paper_steps))):
        step = our_steps[i] if i < len(our_steps) else None
        row = {"point": f"{i + 1}/11", "step (ours)": "—" if step is None else str(step)}
        for v, label in UNITS.items():
            row[f"{label} (ours)"] = _fmt(ours.loc[step, v] if step is not None and v in ours else None)
        row["step (paper)"] = str(paper_steps[i]) if i < len(paper_steps) else "—"
        for j, label in enumerate(UNITS.values()):
            row[f"{label} (paper)"] = f"{PAPER_PPL[paper_steps[i]][j]:.4f}" if i < len(paper_steps) else "—"
        rows.append(row)
    extra = {
        "tokens/s": {f"{label} (ours)": _fmt(speed.get(v, np.nan)) for v, label in UNITS.items()},
        "parameters": {f"{label} (ours)": str(params.get(v, "—")) for v, label in UNITS.items()},
    }
    overhead = 100 * (speed["s6"] / speed["b2s6"] - 1) if "s6" in speed and "b2s6" in speed else np.nan
    extra["time per token vs S6"] = {"B2S6 (ours)": f"{overhead:+.1f}%", "B2S6 (paper)": PAPER_OVERHEAD}
    return rows + [
        {"point": name, **{k: "—" for k in rows[0] if k != "point"}, **cells} for name, cells in extra.items()
    ]


def e9_lm(spec: dict, out: Path) -> None:
    """Figure 7, its table and the final values per leaf (see the module docstring)."""
    curves = pd.DataFrame(curve_rows(spec))
    speed_rows = throughput_rows(spec)
    first = {leaf["config"]["variant"]: leaf["config"] for leaf in reversed(_leaves(spec))}
    params = {v: sum(p.numel() for p in build(cfg)[1].parameters()) for v, cfg in first.items()}
    summary = []
    for r in speed_rows:
        mine = curves[(curves["variant"] == r["variant"]) & (curves["seed"] == r["seed"])] if len(curves) else curves
        last = mine.sort_values("step").iloc[-1] if len(mine) else None
        summary.append(
            {
                **r,
                "final_step": int(last["step"]) if last is not None else None,
                "val_ppl": float(last["val_ppl"]) if last is not None else float("nan"),
                "parameters": params[r["variant"]],
            }
        )
    write_csv(out / "summary.csv", summary, checksum=True)  # the claims verify it
    source = data_source(spec)
    draw_figure7(curves, source, out)
    speed = pd.DataFrame(speed_rows).groupby("variant")["tokens_per_s"].mean()
    caption = (
        f"E9 (Figure 7's table): validation perplexity at every 1/11 of training. Ours: {source}, byte-level "
        "(vocabulary 256), per byte; the paper: SlimPajama-6B with a BPE tokenizer, per token. Different data and "
        "tokenizer: the absolute perplexities are not comparable, only the ordering of the units and their "
        f"relative gaps. tokens/s: training throughput per model on the device it trained on ({devices(spec)}; the "
        "paper's 2.7% needs a fused GPU kernel; a reported number here, not a claim)."
    )
    write_table(pd.DataFrame(table_rows(curves, speed, params)), out / "e9_lm", caption)
