"""The LRA backbone of the b2s6 spec (§2.5, S4-code-base style), registered as ``lra_classifier``.

    inputs: (B, L) int64 token ids (``vocab_size`` set; PAD = ``pad_id``, right-padded)
            or (B, L, d_in) float pixels (Linear encoder; no padding)
            or (B, 2, L) int64 document pairs (``n_documents: 2``, LRA Retrieval)
    -> logits (B, num_classes)

Per layer (``LRABlock``, residual):

    z = Norm(x) if prenorm else x
    z = Mixer(z) + D * z                 (Mixer: the configured unit, wrapped in ``bidirectional`` by default)
    z = Dropout(GELU(z))
    z = Dropout(GLU(Linear_{d->2d}(z)))
    x = x + z
    x = Norm(x) if not prenorm           (Norm: BatchNorm1d over channels, or LayerNorm)

Encoder: Embedding(vocab, d) for tokens, Linear(d_in, d) for pixels (``token_embedding()`` of
``capabilities.LayerStack``; ``layers()`` are the blocks). With ``prenorm`` a final norm follows the
last block (as the S4 code base does). Decoder: mean over the valid (non-PAD) positions, then Linear(d, classes).
Retrieval (``n_documents: 2``): both documents pass through the same encoder and blocks (shared weights); the
pooled features a, b are combined as [a, b, a*b, a-b] and an MLP Linear(4d, h) - GELU - Linear(h, classes) gives
the logits (the standard LRA retrieval head).

Padding: the valid length of each token sequence is its count of non-PAD ids; PAD must only trail (right
padding), so the bidirectional wrapper flips exactly the valid prefix. BatchNorm statistics (the batch's in
training, and the running ones they update) are taken over the valid positions only (``mask_padding``, default
true), so a sequence's logits do not depend on how much padding its batch carries; padded positions leave the
norm as 0 (nothing reads them: the scan runs forward over the valid prefix first and the backward direction
flips that prefix only, and pooling skips them). ``mask_padding: false`` keeps the S4 code base's statistics
over every position, pads included. Inputs without padding (pixels, or ``pad_id: null``) are unchanged by the
option. The D skip lives in the block, so give the mixer no skip of its own (the b2s6/s4d/s6 units default to
none).
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

import torch
import torch.nn.functional as F
from torch import nn

from .. import registry
from ..mixers.base import build_mixer
from ..options import Opt, OptPosInt, grouped
from .blocks import mixer_kwargs
from .option_groups import Stack

LRANorm = Literal["batchnorm", "layernorm"]
Dropout = Annotated[float, Opt(minimum=0, maximum=1)]


class ChannelBatchNorm(nn.Module):
    """BatchNorm1d over the channels of (B, L, d) inputs (statistics over batch and time).

    ``valid`` (B, L) bool, in training: the batch statistics and the running-statistics update use the valid
    positions only (the running variance gets their unbiased variance, as BatchNorm1d's does); invalid
    positions come out as 0. In eval mode the running statistics normalise every position, as without mask."""

    def __init__(self, d: int):
        super().__init__()
        self.bn = nn.BatchNorm1d(d)

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        if valid is None or not self.training or bool(valid.all()):
            return self.bn(x.transpose(1, 2)).transpose(1, 2)
        bn = self.bn
        momentum = bn.momentum
        if bn.track_running_stats:
            bn.num_batches_tracked.add_(1)
            if momentum is None:  # BatchNorm's cumulative average
                momentum = 1.0 / float(bn.num_batches_tracked)
        kept = F.batch_norm(
            x[valid], bn.running_mean, bn.running_var, bn.weight, bn.bias, True, momentum or 0.0, bn.eps
        )  # (N_valid, d): BatchNorm1d's own arithmetic on the valid tokens
        return x.new_zeros(x.shape).index_put((valid,), kept)


def apply_norm(norm: nn.Module, x: torch.Tensor, valid: torch.Tensor | None) -> torch.Tensor:
    """``norm`` on (B, L, d); ``valid`` (B, L) reaches a BatchNorm only (LayerNorm is per position)."""
    return norm(x, valid) if isinstance(norm, ChannelBatchNorm) else norm(x)


def make_lra_norm(kind: str, d: int) -> nn.Module:
    if kind == "batchnorm":
        return ChannelBatchNorm(d)
    if kind == "layernorm":
        return nn.LayerNorm(d)
    raise ValueError(f"model.norm: expected 'batchnorm' or 'layernorm', got {kind!r}")


class LRABlock(nn.Module):
    """One residual layer of the LRA backbone (module docstring): (B, L, d) -> (B, L, d)."""

    def __init__(self, d_model: int, mixer: nn.Module, norm: str, prenorm: bool, dropout: float, skip: bool):
        super().__init__()
        self.mixer, self.prenorm = mixer, prenorm
        self.norm = make_lra_norm(norm, d_model)
        self.D = nn.Parameter(torch.ones(d_model)) if skip else None
        self.drop = nn.Dropout(dropout)
        self.out = nn.Sequential(nn.Linear(d_model, 2 * d_model), nn.GLU(dim=-1))

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None, **kw) -> torch.Tensor:
        """x (B, L, d); ``valid`` (B, L) bool: the non-PAD positions the BatchNorm statistics use (None: all)."""
        z = apply_norm(self.norm, x, valid) if self.prenorm else x
        y = self.mixer(z, **kw)
        if self.D is not None:
            y = y + self.D * z
        z = self.drop(self.out(self.drop(nn.functional.gelu(y))))
        x = x + z
        return x if self.prenorm else apply_norm(self.norm, x, valid)


def pair_features(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """[a, b, a*b, a-b]: (B, d), (B, d) -> (B, 4d), the LRA retrieval combination."""
    return torch.cat((a, b, a * b, a - b), dim=-1)


def valid_lengths(tokens: torch.Tensor, pad_id: int) -> torch.Tensor:
    """(B, L) right-padded ids -> (B,) counts of non-PAD ids; ValueError when a PAD precedes a real token."""
    real = tokens != pad_id
    n = real.sum(-1)
    prefix = torch.arange(tokens.shape[-1], device=tokens.device)[None, :] < n[:, None]
    if not torch.equal(real, prefix):
        raise ValueError(
            f"lra_classifier: token inputs must be right-padded with pad_id={pad_id} (task option pad_side: "
            "right); found PAD before a real token"
        )
    return n


@registry.register_model("lra_classifier")
class LRAClassifier(nn.Module):
    mixer_width: ClassVar[str] = "d_model"  # the width its mixers are built at (config.leaf_rules)

    @grouped
    def __init__(
        self,
        d_out: int | None = None,
        seq_len: int | None = None,
        *,
        stack: Stack,
        bidirectional: Annotated[bool, Opt(description="wrap the mixer in 'bidirectional' (b2s6 spec §2.5)")] = True,
        norm: LRANorm = "batchnorm",
        prenorm: bool = False,
        dropout: Dropout = 0.0,
        skip: Annotated[bool, Opt(description="the block's per-channel D skip")] = True,
        vocab_size: OptPosInt = None,
        d_in: OptPosInt = None,
        pad_id: Annotated[int | None, Opt(minimum=0, description="PAD id of token inputs; null: none")] = 0,
        num_classes: Annotated[int | None, Opt(minimum=2)] = None,
        n_documents: Literal[1, 2] = 1,
        retrieval_hidden: OptPosInt = None,
        mask_padding: Annotated[
            bool, Opt(description="BatchNorm statistics over the non-PAD positions only (module docstring)")
        ] = True,
    ):
        """``d_out``, ``seq_len``, ``vocab_size`` / ``d_in`` and ``n_documents`` come from the task
        (``Task.model_inputs``), the rest from the config; ``retrieval_hidden`` (default d_model) is the
        retrieval MLP's width."""
        super().__init__()
        K = num_classes if num_classes is not None else d_out
        if vocab_size is None and d_in is None:
            raise ValueError("model: lra_classifier needs vocab_size (token ids) or d_in (pixels) from the task")
        if K is None:
            raise ValueError("model.num_classes: give it in the config or build from a task (Task.model_inputs)")
        if n_documents not in (1, 2):
            raise ValueError(f"model.n_documents: expected 1 or 2, got {n_documents!r}")
        if n_documents == 2 and vocab_size is None:
            raise ValueError("model.n_documents: 2 (retrieval) needs token inputs (vocab_size)")
        d_model, mixer = stack.d_model, stack.mixer
        self.tokens = vocab_size is not None
        self.pad_id, self.n_documents, self.prenorm, self.mask_padding = pad_id, n_documents, prenorm, mask_padding
        self.encoder = nn.Embedding(vocab_size, d_model) if self.tokens else nn.Linear(d_in, d_model)
        self.blocks = nn.ModuleList(
            LRABlock(d_model, self._mixer(mixer, d_model, layer, seq_len, bidirectional), norm, prenorm, dropout, skip)
            for layer in range(stack.n_layers)
        )
        self.final_norm = make_lra_norm(norm, d_model) if prenorm else None
        if n_documents == 1:
            self.head = nn.Linear(d_model, K)
        else:
            h = retrieval_hidden or d_model
            self.head = nn.Sequential(nn.Linear(4 * d_model, h), nn.GELU(), nn.Linear(h, K))

    # what the influence and gradient-flow probes hook into (capabilities.LayerStack): the encoder (Embedding of
    # token ids, or Linear of pixels) gives the first hidden states, the blocks follow (the final norm of
    # ``prenorm`` and the pooling come after the last block, in the head)
    def token_embedding(self) -> nn.Module:
        return self.encoder

    def layers(self) -> nn.ModuleList:
        return self.blocks

    def mixers(self) -> list[nn.Module]:
        return [blk.mixer for blk in self.blocks]

    @staticmethod
    def _mixer(spec: dict, d_model: int, layer: int, seq_len: int | None, bidirectional: bool) -> nn.Module:
        opts = dict(spec)
        if bidirectional:
            return build_mixer("bidirectional", d_model, layer_idx=layer, seq_len=seq_len, mixer=opts)
        name = opts.pop("name")
        return build_mixer(name, d_model, layer_idx=layer, seq_len=seq_len, **opts)

    def encode(self, inputs: torch.Tensor) -> torch.Tensor:
        """One document per row: (B, L) ids or (B, L, d_in) pixels -> pooled features (B, d_model)."""
        lengths = None
        if self.tokens and self.pad_id is not None:
            lengths = valid_lengths(inputs, self.pad_id)
        x = self.encoder(inputs)
        tokens = inputs if self.tokens else None
        valid = None
        if lengths is not None:
            valid = torch.arange(x.shape[1], device=x.device)[None, :] < lengths[:, None]  # (B, L)
        stats_mask = valid if self.mask_padding else None
        for blk in self.blocks:
            x = blk(x, stats_mask, **mixer_kwargs(blk.mixer, tokens, lengths))
        if self.final_norm is not None:
            x = apply_norm(self.final_norm, x, stats_mask)
        if valid is None:
            return x.mean(1)
        weights = valid.to(x.dtype)
        return (x * weights[..., None]).sum(1) / lengths.clamp_min(1)[:, None].to(x.dtype)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        """(B, L) / (B, L, d_in), or (B, 2, L) with n_documents 2 -> logits (B, num_classes)."""
        if self.n_documents == 1:
            return self.head(self.encode(inputs))
        if inputs.dim() != 3 or inputs.shape[1] != 2:
            raise ValueError(
                f"lra_classifier (n_documents 2): expected (batch, 2, length) ids, got {tuple(inputs.shape)}"
            )
        B = inputs.shape[0]
        pooled = self.encode(inputs.reshape(2 * B, -1)).reshape(B, 2, -1)  # one pass, shared weights
        return self.head(pair_features(pooled[:, 0], pooled[:, 1]))
