"""Decoder language model: token embedding (no absolute positions) -> n_layers blocks (seqmix.models.blocks)
-> final norm -> linear head (tied to the embedding by default).

    tokens: (B, L) int64 -> logits: (B, L, vocab)

Built from a mixer name + sizes: ``DecoderLM(**task.model_inputs(), d_model=64, n_layers=2, mixer={"name":
"sessa", "heads": 4},
block="gated")``. Optimizer groups come from ``seqmix.training.optim.param_groups``: the
embedding (and the head tied to it) and the norms are not decayed; mixers add their own hints (B2S6).
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import nn

from .. import registry
from ..options import OptPosInt, grouped
from .blocks import make_blocks, make_norm, mixer_kwargs
from .option_groups import BlockOptions, Stack


@registry.register_model("decoder_lm")
class DecoderLM(nn.Module):
    requires_causal_mixer: ClassVar[bool] = True  # a non-causal mixer would see the token it predicts
    mixer_width: ClassVar[str] = "d_model"  # the width its mixers are built at (config.leaf_rules)

    @grouped
    def __init__(
        self,
        seq_len: int | None = None,
        *,
        stack: Stack,
        blocks: BlockOptions = BlockOptions(),
        tie_embeddings: bool = True,
        vocab_size: OptPosInt = None,
    ):
        """``seq_len`` (and ``vocab_size`` when the config leaves it null) come from the task
        (``Task.model_inputs``)."""
        super().__init__()
        V = vocab_size
        if V is None:
            raise ValueError("vocab_size: give it in the config or build from a token task (Task.model_inputs)")
        d_model = stack.d_model
        self.vocab_size, self.d_model = V, d_model
        self.mlp_hidden = blocks.hidden(d_model)
        self.embed = nn.Embedding(V, d_model)
        nn.init.normal_(self.embed.weight, std=0.02)
        self.blocks = make_blocks(
            d_model, stack.n_layers, stack.mixer, blocks.block, self.mlp_hidden, blocks.norm, seq_len, V
        )
        self.norm = make_norm(blocks.norm, d_model)
        self.head = nn.Linear(d_model, V, bias=False)
        if tie_embeddings:
            self.head.weight = self.embed.weight

    # what the influence and gradient-flow probes hook into (capabilities.LayerStack)
    def token_embedding(self) -> nn.Module:
        return self.embed

    def layers(self) -> nn.ModuleList:
        return self.blocks

    def mixers(self) -> list[nn.Module]:
        return [blk.mixer for blk in self.blocks]

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """tokens: (B, L) int64 -> logits (B, L, vocab)."""
        if tokens.dim() != 2 or tokens.dtype not in (torch.int64, torch.int32):
            raise ValueError(f"tokens: expected (batch, length) integer ids, got {tuple(tokens.shape)} {tokens.dtype}")
        x = self.embed(tokens)
        for blk in self.blocks:
            x = blk(x, **mixer_kwargs(blk.mixer, tokens, None))
        return self.head(self.norm(x))
