"""seqmix.diagnostics.hooks: the embedding substitution and the input/output capture, and their clean-up."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from seqmix.diagnostics.hooks import captured, embeddings_from


class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(5, 3)
        self.blocks = nn.ModuleList([nn.Linear(3, 3), nn.Linear(3, 3)])

    def token_embedding(self):
        return self.embed

    def forward(self, tokens):
        x = self.embed(tokens)
        for blk in self.blocks:
            x = blk(x)
        return x


def test_substitution_and_capture():
    torch.manual_seed(0)
    model = Stack()
    tokens = torch.tensor([[1, 2, 3]])
    e = torch.randn(1, 3, 3, requires_grad=True)
    with embeddings_from(model, e), captured(list(model.blocks), "input") as ins:
        with captured(list(model.blocks), "output") as outs:
            y = model(tokens)
    assert ins[0] is e and torch.equal(ins[1], outs[0]) and outs[1] is y
    (g,) = torch.autograd.grad(y.sum(), e)  # the gradient reaches the substituted tensor
    assert g.shape == e.shape and g.abs().sum() > 0
    assert torch.equal(model(tokens), model.blocks[1](model.blocks[0](model.embed(tokens))))  # hooks gone


def test_hooks_are_removed_when_the_block_raises():
    model = Stack()
    with pytest.raises(RuntimeError, match="boom"):
        with embeddings_from(model, torch.zeros(1, 3, 3)), captured([model.embed], "output"):
            raise RuntimeError("boom")
    assert not model.embed._forward_hooks and not model.embed._forward_pre_hooks
    with pytest.raises(ValueError, match="what"):
        with captured([model.embed], "grad"):
            pass
