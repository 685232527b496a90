"""What the trained-model diagnostics D6-D8 (spec §3.6) share: the trained E1/E2 leaves in float64, a probe
batch with each sequence's target position. The hooks that substitute the embeddings or read the mixers'
inputs live in ``seqmix.diagnostics.hooks`` (shared with the cross-paper influence diagnostic).

Target ("anchor") of a sequence, the position whose hidden state or loss the influence is measured at:
- E1 (SymbolSoup, left-padded to max_tokens): the last position, the ``<label>`` token the classifier reads;
- E2 (Diffuse MQAR, right-padded): the last query's value position (the last target that is not IGNORE).
The lag of a source tau is anchor - tau; pad positions are never sources.
Marks (spec D6: "mark the stylized-block and true-key positions"): E1 the lags from the ends of the two
stylized blocks to the label (``example_stats``), E2 the key-query lag of the anchor's query.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path

import torch

from ...capabilities import LayerStack
from ...results import is_done, leaf_marker
from ...tasks import diffuse_mqar, diffuse_mqar_data, symbolsoup, symbolsoup_data
from ...training.checkpoint import load_checkpoint, load_final_weights
from ...training.loop import build

EXPERIMENTS = ("e1", "e2")
VARIANT_ORDER = ("sessa", "transformer", "mamba2", "sessa_nofb")


@dataclass
class ProbeBatch:
    """tokens, targets: (B, T) int64; anchor: (B,) target positions; valid: (B, T) bool (real tokens at or
    before the anchor); marks: (B, M) lags worth marking (M = 2 for E1, 1 for E2)."""

    tokens: torch.Tensor
    targets: torch.Tensor
    anchor: torch.Tensor
    valid: torch.Tensor
    marks: torch.Tensor

    @property
    def lags(self) -> torch.Tensor:
        """anchor - tau for every (sequence, position tau): (B, T), negative past the anchor."""
        return self.anchor[:, None] - torch.arange(self.tokens.shape[1])[None, :]

    def sources(self) -> torch.Tensor:
        """valid positions at lag >= 0: (B, T) bool."""
        return self.valid & (self.lags >= 0)


def probe_batch(task, n: int) -> ProbeBatch:
    """The first ``n`` sequences of the task's evaluation split (E1 SymbolSoup or E2 Diffuse MQAR)."""
    if isinstance(task, symbolsoup.SymbolSoup):
        x, y = task.split_set(task.eval_split)
        x, y = x[:n], y[:n]
        stats = task.data.stats(task.eval_split)[:n]
        T = x.shape[1]
        anchor = torch.full((len(x),), T - 1)
        return ProbeBatch(x, y, anchor, x != symbolsoup_data.PAD, stats[:, 1:3].clone())
    if isinstance(task, diffuse_mqar.DiffuseMQAR):
        n = min(n, task.sizes[task.eval_split])
        x, y, lags = task.split_set(task.eval_split, 0, n)
        pos = torch.arange(x.shape[1])[None, :].expand_as(y)
        anchor = torch.where(y != diffuse_mqar_data.IGNORE, pos, -1).amax(1)
        valid = (x != diffuse_mqar_data.PAD) & (pos <= anchor[:, None])
        marks = lags.gather(1, anchor[:, None])
        return ProbeBatch(x, y, anchor, valid, marks)
    raise TypeError(f"the Sessa diagnostics know E1 (symbolsoup) and E2 (diffuse_mqar), not {type(task).__name__}")


def trained_leaves(spec: dict, name: str) -> list[tuple[str, dict]]:
    """(experiment, leaf) for every E1/E2 leaf the artefact reads, in the order experiment, variant, seed;
    a leaf that is not trained for its config is an error naming it."""
    out = []
    for exp in EXPERIMENTS:
        for leaf in (spec["inputs"].get("leaves") or {}).get(exp, []):
            marker = leaf_marker(Path(leaf["out_dir"]), "train")
            if not is_done(marker, leaf["hash"]):
                raise SystemExit(f"{name}: {exp}/{leaf['id']} is not trained for this config ({marker})")
            out.append((exp, leaf))
    if not out:
        raise SystemExit(f"{name}: no trained e1/e2 leaves among the artefact's inputs (reads.leaves)")
    rank = {v: i for i, v in enumerate(VARIANT_ORDER)}
    return sorted(out, key=lambda el: (el[0], rank.get(el[1]["config"]["variant"], 99), el[1]["config"]["seed"]))


def leaf_models(leaf: dict, with_init: bool = False) -> tuple[object, list[tuple[str, int, torch.nn.Module]]]:
    """(task, [(stage, step, model in float64, eval mode)]): the final weights, and with ``with_init`` first
    the model as training created it (``training.loop.build``: seeded by the leaf's seed alone) and the
    previous checkpoint when the run kept one (``checkpoint.prev.pt``, at an earlier step)."""
    cfg, out_dir = leaf["config"], Path(leaf["out_dir"])
    steps = int(cfg["train"]["steps"])
    task, model = build(cfg)
    if not isinstance(model, LayerStack):
        raise TypeError(f"{leaf['id']}: the diagnostics need a LayerStack model, got {type(model).__name__}")
    models = []
    if with_init:
        models.append(("init", 0, copy.deepcopy(model)))
        prev = load_checkpoint(out_dir / "checkpoint.prev.pt")
        if prev is not None and 0 < int(prev["step"]) < steps:
            models.append(("checkpoint", int(prev["step"]), _with_weights(model, prev["model"])))
    models.append(("final", steps, _with_weights(model, load_final_weights(out_dir / "model.pt", steps))))
    for _, _, m in models:
        m.double().eval()
    return task, models


def _with_weights(model: torch.nn.Module, state: dict) -> torch.nn.Module:
    out = copy.deepcopy(model)
    out.load_state_dict(state)
    return out


def leaf_keys(exp: str, leaf: dict) -> dict:
    return {"experiment": exp, "variant": leaf["config"]["variant"], "seed": int(leaf["config"]["seed"])}


class Profile:
    """A running mean of curves of varying length against the lag: ``add`` (L,) arrays with NaN where a
    curve has no value; ``mean`` (max L,) with NaN where none had one."""

    def __init__(self):
        self.sums = torch.zeros(0, dtype=torch.float64)
        self.counts = torch.zeros(0, dtype=torch.float64)

    def add(self, curve: torch.Tensor) -> None:
        c = curve.detach().double().cpu()
        if len(c) > len(self.sums):
            pad = len(c) - len(self.sums)
            self.sums = torch.cat([self.sums, torch.zeros(pad, dtype=torch.float64)])
            self.counts = torch.cat([self.counts, torch.zeros(pad, dtype=torch.float64)])
        ok = torch.isfinite(c)
        self.sums[: len(c)] += torch.where(ok, c, 0.0)
        self.counts[: len(c)] += ok.double()

    def mean(self, min_share: float = 0.5) -> torch.Tensor:
        """The mean at the lags where at least ``min_share`` as many curves have a value as at the best-covered
        lag (so the far end is not one long sequence alone); NaN elsewhere."""
        enough = self.counts >= min_share * float(self.counts.max()) if len(self.counts) else self.counts > 0
        return torch.where(enough & (self.counts > 0), self.sums / self.counts.clamp_min(1), float("nan"))
