"""Forward hooks that let a diagnostic reach inside a trained model without touching the model's code.

``embeddings_from`` substitutes the first hidden states of a ``capabilities.LayerStack`` model, so that a
gradient with respect to a tensor of ours is one with respect to the model's embeddings; ``captured`` reads a
module's input or output during a forward pass. Both remove their hooks on exit, also when the block raises.
"""

from __future__ import annotations

import contextlib

import torch


@contextlib.contextmanager
def embeddings_from(model: torch.nn.Module, e: torch.Tensor):
    """Within the block, the model's token embedding (``model.token_embedding()``) returns ``e`` (B, T, d)
    instead of its own output, so a gradient with respect to e is one with respect to the embeddings."""
    handle = model.token_embedding().register_forward_hook(lambda _m, _inp, _out: e)
    try:
        yield
    finally:
        handle.remove()


@contextlib.contextmanager
def captured(modules: list[torch.nn.Module], what: str):
    """Collect each module's first input (``what='input'``) or its output (``'output'``) during the block:
    yields a list with one slot per module, filled by the forward passes run inside (None for a module that
    did not run; the last call wins for one that ran more than once)."""
    if what not in ("input", "output"):
        raise ValueError(f"captured: what must be 'input' or 'output', got {what!r}")
    slots: list = [None] * len(modules)
    handles = []
    for i, m in enumerate(modules):
        if what == "input":
            handles.append(m.register_forward_pre_hook(lambda _m, args, i=i: slots.__setitem__(i, args[0])))
        else:
            handles.append(m.register_forward_hook(lambda _m, _a, out, i=i: slots.__setitem__(i, out)))
    try:
        yield slots
    finally:
        for h in handles:
            h.remove()
