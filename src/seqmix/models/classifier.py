"""Sequence classifier (LRA style; sessa SymbolSoup head): encoder -> blocks -> final norm -> pooling -> head.

    inputs: (B, L) int64 token ids (``vocab_size`` set) or (B, L, d_in) floats (Linear encoder)
    -> logits (B, num_classes)

Pooling: ``mean`` over valid positions (``lengths`` (B,) or all) or ``last`` (the last valid position).
For bidirectional LRA models use the ``bidirectional`` mixer; ``lengths`` reaches it so padding is respected.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

import torch
from torch import nn

from .. import registry
from ..options import Opt, OptPosInt, grouped
from .blocks import make_blocks, make_norm, mixer_kwargs
from .option_groups import BlockOptions, Stack


@registry.register_model("sequence_classifier")
class SequenceClassifier(nn.Module):
    mixer_width: ClassVar[str] = "d_model"  # the width its mixers are built at (config.leaf_rules)

    @grouped
    def __init__(
        self,
        d_out: int | None = None,
        seq_len: int | None = None,
        *,
        stack: Stack,
        blocks: BlockOptions = BlockOptions(),
        pooling: Literal["mean", "last"] = "mean",
        vocab_size: OptPosInt = None,
        d_in: OptPosInt = None,
        num_classes: Annotated[int | None, Opt(minimum=2)] = None,
    ):
        """``d_out`` and ``seq_len`` come from the task (``Task.model_inputs``), the rest from the config."""
        super().__init__()
        V = vocab_size
        d_in = None if V is not None else d_in  # token ids win over a continuous width
        K = num_classes if num_classes is not None else d_out  # a task's d_out is its number of classes
        if V is None and d_in is None:
            raise ValueError("vocab_size or d_in: the classifier needs one (token ids or continuous inputs)")
        if K is None:
            raise ValueError("num_classes: give it in the config or build from a task (Task.model_inputs)")
        if pooling not in ("mean", "last"):
            raise ValueError(f"pooling must be 'mean' or 'last', got {pooling!r}")
        self.pooling = pooling
        d_model = stack.d_model
        self.encoder = nn.Embedding(V, d_model) if V is not None else nn.Linear(d_in, d_model)
        hidden = blocks.hidden(d_model)
        self.blocks = make_blocks(d_model, stack.n_layers, stack.mixer, blocks.block, hidden, blocks.norm, seq_len, V)
        self.norm = make_norm(blocks.norm, d_model)
        self.head = nn.Linear(d_model, K)

    # what the influence and gradient-flow probes hook into (capabilities.LayerStack)
    def token_embedding(self) -> nn.Module:
        return self.encoder

    def layers(self) -> nn.ModuleList:
        return self.blocks

    def mixers(self) -> list[nn.Module]:
        return [blk.mixer for blk in self.blocks]

    def forward(self, inputs: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        """inputs: (B, L) ids or (B, L, d_in); lengths: (B,) valid lengths or None -> logits (B, num_classes)."""
        x = self.encoder(inputs)
        tokens = inputs if isinstance(self.encoder, nn.Embedding) else None
        for blk in self.blocks:
            x = blk(x, **mixer_kwargs(blk.mixer, tokens, lengths))
        x = self.norm(x)
        B, L, _ = x.shape
        n = torch.full((B,), L, device=x.device) if lengths is None else lengths.to(x.device)
        if self.pooling == "last":
            return self.head(x[torch.arange(B, device=x.device), n - 1])
        valid = (torch.arange(L, device=x.device)[None, :] < n[:, None]).to(x.dtype)
        return self.head((x * valid[..., None]).sum(1) / n[:, None].to(x.dtype))
