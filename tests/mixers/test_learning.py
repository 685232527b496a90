"""Learning smoke test: every causal mixer, inside the decoder LM, learns the tiny associative-recall task.

200 AdamW steps (lr 3e-3, batch 32, d_model 32, 2 layers, 1 thread) on assoc_recall's example_options
(pairs=4, keys=16, values=8); the held-out cross-entropy at the query positions must fall below
``BOUND[name] * ln(8)`` (chance = ln 8 = 2.08 nats). The bound is 0.75 chance for mixers that can look
tokens up by content at this budget (attention family, Sessa, S4D/S6/B2S6 units) and looser for those that
are slower to start at this size (Mamba-1/Mamba2 blocks, measured ~0.87 chance) or have no input-dependent
routing (the heads paper's linear SSM and factorized attention, ~0.95 chance): the test shows the model uses
the context, it is not a benchmark.
"""

from __future__ import annotations

import pytest
import torch

from seqmix import registry
from seqmix.models.lm import DecoderLM
from seqmix.tasks.assoc_recall import AssocRecall
from seqmix.training.optim import param_groups

# every registered causal mixer with its own small options (seqmix.mixers.base.Mixer clause 2)
OPTIONS = {
    n: dict(registry.get_mixer(n).example_options)
    for n in registry.names("mixer")
    if getattr(registry.get_mixer(n), "causal", False)
}
BOUND = {name: 0.75 for name in OPTIONS}
BOUND.update({"mamba": 0.92, "mamba2": 0.92, "linear_ssm": 0.97, "factorized_linear_attention": 0.97})
SLOW = {"path", "b2s6", "b2s6_nobias", "b2s6_real", "mamba", "s6"}


def train_once(name: str, steps: int = 200) -> tuple[float, float]:
    torch.set_num_threads(1)
    task = AssocRecall(**AssocRecall.example_options)
    torch.manual_seed(0)
    block = "gated" if name.startswith("sessa") else "residual_mlp"
    model = DecoderLM(**task.model_inputs(), d_model=32, n_layers=2, mixer={"name": name, **OPTIONS[name]}, block=block)
    opt = torch.optim.AdamW(param_groups(model, 3e-3, 0.0))
    for step in range(steps):
        x, y = task.batch(0, step, 0, 32)
        loss = task.loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        xt, yt = task.test_set()
        return float(task.loss(model(xt), yt)), task.chance_loss


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in OPTIONS])
def test_learns_associative_recall(name):
    loss, chance = train_once(name)
    assert loss < BOUND[name] * chance, f"{name}: held-out loss {loss:.3f} >= {BOUND[name]} x chance {chance:.3f}"
