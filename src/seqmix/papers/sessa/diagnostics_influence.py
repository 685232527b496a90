"""D6 (influence vs lag) and D8 (training gradient flow) of spec §3.6 on the trained E1/E2 leaves.

D6, per leaf, on the probe batch (``diagnostics_common``): ||dh_anchor^(L) / de_tau||_F for every source tau,
h^(L) the last block's output, by K Hutchinson VJPs (reverse mode: the target is fixed, every source comes at
once), and the gradient saliency ||d loss_anchor / de_tau|| (the cross-entropy at the anchor alone, summed over
sequences so that each sequence's gradient is its own). Both binned by log2 lag.
D8, per leaf and checkpoint (init = the model as training created it, the previous checkpoint when one was
kept, final): ||dL/de_tau|| of the training loss on the probe batch, binned by lag from the anchor, the
gradient norm of every block's parameters and of the embedding, max|s| (the largest mixer output) and
max|gamma| (Sessa's feedback gains).

Summaries are long rows (experiment, variant, seed, [stage], quantity, value): ``far_fraction_*`` is the share
of the influence (summed over sources at lag >= 1) that comes from the far half of each sequence's context
(lag >= half the anchor's number of real sources), averaged over sequences; ``slope_*`` the log-log slope of
the binned profile over lags >= 1.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ...capabilities import FeedbackRouting
from ...diagnostics.hooks import captured, embeddings_from
from ...diagnostics.hutchinson import bin_by_lag, loglog_slope, vjp_source_norms
from .diagnostics_common import ProbeBatch, leaf_keys, leaf_models, probe_batch


def _hidden_at_anchor(model, batch: ProbeBatch):
    """e -> h^(L)[b, anchor_b]: (B, D), the last block's output at each sequence's anchor."""
    rows = torch.arange(len(batch.anchor))

    def target(e: torch.Tensor) -> torch.Tensor:
        with embeddings_from(model, e), captured([model.layers()[-1]], "output") as out:
            model(batch.tokens)
        return out[0][rows, batch.anchor]

    return target


def anchor_loss(logits: torch.Tensor, batch: ProbeBatch) -> torch.Tensor:
    """Cross-entropy at the anchors, summed over sequences: logits (B, C) of a classifier (E1) or (B, T, V)
    of a token model (E2)."""
    if logits.dim() == 3:
        logits = logits[torch.arange(len(batch.anchor)), batch.anchor]
        target = batch.targets.gather(1, batch.anchor[:, None])[:, 0]
    else:
        target = batch.targets
    return F.cross_entropy(logits.double(), target, reduction="sum")


def embedding_gradient(model, batch: ProbeBatch, loss_fn) -> tuple[torch.Tensor, torch.Tensor]:
    """(||d loss / de_tau|| per (sequence, position): (B, T) float64, the loss); every parameter's .grad is
    set too (the embedding's included: its output is kept in the graph, not replaced)."""
    model.zero_grad(set_to_none=True)
    with captured([model.token_embedding()], "output") as emb:
        out = model(batch.tokens)
    emb[0].retain_grad()
    loss = loss_fn(out)
    loss.backward()
    return emb[0].grad.detach().double().norm(dim=-1), loss.detach()


def profile_rows(values: torch.Tensor, batch: ProbeBatch, keys: dict, measure: str) -> tuple[list, list]:
    """(summary rows far_fraction_<measure>, slope_<measure>, value_lag0_<measure>; curve rows per lag bin)."""
    lags, ok = batch.lags, batch.sources()
    curve = [{**keys, "measure": measure, **b} for b in bin_by_lag(values, lags.clamp_min(0), ok)]
    n_src = ok.sum(1).double()
    near = ok & (lags >= 1)
    far = near & (lags.double() >= n_src[:, None] / 2)
    v = values.double()
    total = (v * near).sum(1)
    frac = ((v * far).sum(1) / total)[total > 0]
    far_fraction = float(frac.mean()) if len(frac) else float("nan")
    tail = [b for b in curve if b["lag_lo"] >= 1]
    slope = loglog_slope([b["lag_mid"] for b in tail], [b["mean"] for b in tail])
    lag0 = [b["mean"] for b in curve if b["lag_lo"] == 0]
    summary = [
        {**keys, "quantity": f"far_fraction_{measure}", "value": far_fraction},
        {**keys, "quantity": f"slope_{measure}", "value": slope},
        {**keys, "quantity": f"lag0_{measure}", "value": lag0[0] if lag0 else float("nan")},
    ]
    return summary, curve


def mark_rows(batch: ProbeBatch, keys: dict) -> list[dict]:
    """The median lag of each mark column (E1: the two stylized blocks' ends; E2: the true key)."""
    return [
        {**keys, "quantity": f"mark_lag_{i}", "value": float(batch.marks[:, i].double().median())}
        for i in range(batch.marks.shape[1])
    ]


def influence_leaf(exp: str, leaf: dict, settings: dict) -> tuple[list, list]:
    """D6 for one leaf: (summary rows, curve rows)."""
    task, [(_, _, model)] = leaf_models(leaf)
    batch = probe_batch(task, settings["sequences"])
    keys = leaf_keys(exp, leaf)
    gen = torch.Generator().manual_seed(int(settings["seed"]))
    e0 = model.token_embedding()(batch.tokens).detach()
    infl = vjp_source_norms(_hidden_at_anchor(model, batch), e0, settings["probes"], gen)
    sal, _ = embedding_gradient(model, batch, lambda out: anchor_loss(out, batch))
    summary, curves = profile_rows(infl, batch, keys, "influence")
    s2, c2 = profile_rows(sal, batch, keys, "saliency")
    return summary + s2 + mark_rows(batch, keys), curves + c2


def _group_norm(params) -> float:
    sq = sum(float(p.grad.double().pow(2).sum()) for p in params if p.grad is not None)
    return sq**0.5


def gradient_flow_leaf(exp: str, leaf: dict, settings: dict) -> tuple[list, list]:
    """D8 for one leaf: (summary rows, curve rows), one set per checkpoint (``stage``: init / checkpoint /
    final, with its ``step``)."""
    task, models = leaf_models(leaf, with_init=True)
    batch = probe_batch(task, settings["sequences"])
    summary, curves = [], []
    for stage, step, model in models:
        keys = {**leaf_keys(exp, leaf), "stage": stage, "step": step}
        mixers = model.mixers()
        with captured(mixers, "input") as inputs, captured(mixers, "output") as outputs:
            grad_e, loss = embedding_gradient(model, batch, lambda out: task.loss(out, batch.targets))
        s, c = profile_rows(grad_e, batch, keys, "loss_gradient")
        summary += s
        curves += c
        summary.append({**keys, "quantity": "loss", "value": float(loss)})
        summary.append(
            {**keys, "quantity": "grad_norm_embedding", "value": _group_norm(model.token_embedding().parameters())}
        )
        for i, blk in enumerate(model.layers()):
            summary.append({**keys, "layer": i, "quantity": "grad_norm_layer", "value": _group_norm(blk.parameters())})
        summary.append({**keys, "quantity": "max_abs_s", "value": max(float(o.detach().abs().max()) for o in outputs)})
        with torch.no_grad():
            gammas = [m.gamma(a) for m, a in zip(mixers, inputs) if isinstance(m, FeedbackRouting) and m.feedback]
        if gammas:
            summary.append({**keys, "quantity": "max_abs_gamma", "value": max(float(g.abs().max()) for g in gammas)})
    return summary, curves
