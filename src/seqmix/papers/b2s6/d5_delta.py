"""D5 (spec "Extra diagnostics"): Delta statistics and forget events of the trained E3 (copy-me) models.

A forget event at step k in channel i: Delta_k^(i) min_m |Re a_m| > ``threshold`` (5: even the slowest mode's
memory shrinks by e^-5 in that one step). A block forgets when every channel of it does (its whole memory is
wiped); S6 and S4D are one block of d channels (one Delta logit, resp. an input-independent Delta), B2S6 has h.
Per trained leaf, on the first ``samples`` test inputs:

- ``forget_fraction`` (all steps, all channels) and ``forget_fraction_last`` (the last step, the only large
  input of copy-me), per model; ``block_forget_fraction_last`` per block (``block`` column);
- ``all_blocks_forget_last``: the fraction of inputs whose last step makes every block forget at once, beside
  ``predicted_all_blocks`` = 2^-h: Thm 5's reading, with a large isotropic u_L each block's logit w^[j] . u_L^[j]
  is positive with probability 1/2, independently over blocks (disjoint coordinates);
- the histogram of log10(Delta min_m |Re a_m|) over all steps and channels -> d5_delta.csv / the figure.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch

from ...capabilities import SoleMixer
from ...mixers.ssm import B2S6
from ...report.plots import legend_outside, save_figure
from ...report.tables import write_csv
from ...results import is_done, leaf_marker
from ...training.loop import load_trained

VARIANTS = ("s4d", "s6", "b2s6")
BINS = np.linspace(-6.0, 4.0, 41)  # log10(Delta min |Re a|)


def forget_events(delta: torch.Tensor, min_rate: float, blocks: int, threshold: float) -> dict[str, torch.Tensor]:
    """delta: (B, L, d) -> {"channel": (B, L, d), "block": (B, L, h), "all": (B, L)} boolean forget events;
    a block forgets when all its d / h channels do."""
    channel = delta * min_rate > threshold
    Bsz, L, d = channel.shape
    block = channel.reshape(Bsz, L, blocks, d // blocks).all(-1)
    return {"channel": channel, "block": block, "all": block.all(-1)}


def event_rows(events: dict[str, torch.Tensor], blocks: int) -> list[dict]:
    """The fractions of the module docstring, one row each (``block`` set on the per-block rows)."""
    last = {k: v[:, -1] for k, v in events.items()}
    rows = [
        {"quantity": "forget_fraction", "value": float(events["channel"].double().mean())},
        {"quantity": "forget_fraction_last", "value": float(last["channel"].double().mean())},
        {"quantity": "all_blocks_forget", "value": float(events["all"].double().mean())},
        {"quantity": "all_blocks_forget_last", "value": float(last["all"].double().mean())},
        {"quantity": "any_block_forget_last", "value": float(last["block"].any(-1).double().mean())},
        {"quantity": "predicted_all_blocks", "value": 2.0**-blocks},
    ]
    per_block = last["block"].double().mean(0)
    rows += [{"quantity": "block_forget_fraction_last", "block": j, "value": float(v)} for j, v in enumerate(per_block)]
    return rows


def unit_deltas(model: torch.nn.Module, x: torch.Tensor) -> tuple[torch.Tensor, torch.nn.Module]:
    """(Delta (B, L, d) of the model's unit on the inputs x, the unit): its input is captured by a hook."""
    if not isinstance(model, SoleMixer):
        raise TypeError(f"d5_delta: needs a single-unit probe (SoleMixer), got {type(model).__name__}")
    unit, seen = model.sole_mixer(), []
    handle = unit.register_forward_pre_hook(lambda _m, args: seen.append(args[0]))
    try:
        with torch.no_grad():
            model(x)
            return unit.deltas(seen[0]), unit
    finally:
        handle.remove()


def leaf_statistics(leaf: dict, st: dict) -> tuple[list[dict], np.ndarray]:
    """(rows of one trained E3 leaf, the histogram counts of log10(Delta min |Re a|))."""
    cfg, out_dir = leaf["config"], Path(leaf["out_dir"])
    if not is_done(leaf_marker(out_dir, "train"), leaf["hash"]):
        raise SystemExit(f"d5_delta: e3/{leaf['id']} is not trained for this config ({leaf_marker(out_dir, 'train')})")
    task, model = load_trained(cfg, out_dir)
    x, _ = task.test_set()
    delta, unit = unit_deltas(model, x[: st["samples"]])
    A = unit.A().detach()
    min_rate = float((A.real if A.is_complex() else A).abs().min())
    blocks = unit.h if isinstance(unit, B2S6) else 1
    events = forget_events(delta, min_rate, blocks, st["threshold"])
    keys = {"variant": cfg["variant"], "sigmas": str(cfg["task"]["sigmas"]), "seed": int(cfg["seed"]), "blocks": blocks}
    rows = [{**keys, **r} for r in event_rows(events, blocks)]
    rows.append({**keys, "quantity": "median_delta", "value": float(delta.median())})
    # in float64: the float32 product underflows to 0, which the 1e-300 floor cannot lift in float32 (log10(0)
    # warned and gave -inf; -300 falls below the first bin the same way, so the counts are unchanged)
    scaled = (delta * min_rate).flatten().double().numpy()
    counts, _ = np.histogram(np.log10(np.maximum(scaled, 1e-300)), bins=BINS)
    return rows, counts


def draw(hists: dict[str, np.ndarray], rows: list[dict], threshold: float, out: Path) -> list[dict]:
    """Histograms per model and the last-step all-blocks forget fraction per cell; returns the drawn data."""
    fig, (ax_h, ax_f) = plt.subplots(1, 2, figsize=(11, 3.6))
    centres = 0.5 * (BINS[1:] + BINS[:-1])
    data = []
    for variant in VARIANTS:
        if variant not in hists:
            continue
        share = hists[variant] / max(1, hists[variant].sum())
        ax_h.step(centres, share, where="mid", label=variant)
        data += [{"panel": "histogram", "variant": variant, "x": c, "value": v} for c, v in zip(centres, share)]
    ax_h.axvline(np.log10(threshold), color="k", ls=":", lw=1)
    ax_h.set_yscale("log")
    ax_h.set_xlabel(r"$\log_{10}(\Delta_k \min_m |\mathrm{Re}\, a_m|)$ (all steps and channels)")
    ax_h.set_ylabel("share")
    cells = sorted({r["sigmas"] for r in rows})
    for i, variant in enumerate(VARIANTS):
        vals = [r for r in rows if r["variant"] == variant and r["quantity"] == "all_blocks_forget_last"]
        y = [np.mean([r["value"] for r in vals if r["sigmas"] == c] or [np.nan]) for c in cells]
        ax_f.bar(np.arange(len(cells)) + (i - 1) * 0.27, np.maximum(y, 1e-4), width=0.27, label=variant)
        data += [{"panel": "all_blocks_forget_last", "variant": variant, "x": c, "value": v} for c, v in zip(cells, y)]
        pred = [r["value"] for r in rows if r["variant"] == variant and r["quantity"] == "predicted_all_blocks"]
        if pred and variant != "s4d":
            ax_f.axhline(pred[0], ls="--", lw=0.8, color=f"C{i}")
    ax_f.set_yscale("log")
    ax_f.set_xticks(range(len(cells)), [c.replace("_", ", ") for c in cells], rotation=30, fontsize=7)
    ax_f.set_xlabel(r"$(\sigma_1, \sigma_2)$")
    ax_f.set_ylabel("all blocks forget at the last step\n(dashed: $2^{-h}$; bars at 1e-4: none)")
    fig.suptitle("D5: Delta statistics and forget events of the trained E3 models", fontsize=10, y=1.03)
    fig.tight_layout()
    legend_outside(fig)
    save_figure(fig, out / "d5_delta", data)
    return data


def d5_delta(spec: dict, out: Path) -> None:
    st = spec["analysis"]["d5_delta"]
    rows, hists = [], {}
    for leaf in spec["inputs"]["leaves"]["e3"]:
        leaf_rows, counts = leaf_statistics(leaf, st)
        rows += leaf_rows
        variant = leaf["config"]["variant"]
        hists[variant] = hists.get(variant, 0) + counts
    write_csv(out / "summary.csv", rows, checksum=True)  # the claims verify it
    draw(hists, rows, st["threshold"], out)
