"""Residual blocks shared by the decoder LM and the sequence classifier.

- ``residual_mlp``: x + mixer(Norm x), then x + MLP(Norm x) with MLP = Linear(d, m) - GELU - Linear(m, d)
  (m = 0: no MLP sub-block, e.g. native Mamba stacks).
- ``gated``: the Sessa block around the mixer (seqmix.mixers.sessa.SessaBlock), no separate MLP. With every
  model gated this is the sessa spec's ``macro=shared`` layout (§2.4 Option A, §5 row 1).
- ``native``: each mixer's own standard block, named by its class attribute ``native_block`` (the sessa spec's
  ``macro=native``, §2.4-2.5 Option B):
  ``pre_norm_mlp`` x + mixer(LN x), then x + MLP(LN x) (the Transformer's pre-LN block; MLP hidden from
  ``mlp_ratio``/``mlp_hidden``, 4 D by default), ``pre_norm`` x + mixer(RMSNorm x) with no MLP (the Mamba /
  Mamba2 LM block: the mixer is itself gated), ``gated`` the Sessa block. The model's ``norm`` option does not
  apply inside native blocks (each layout fixes its norm); it still sets the final norm.
Mixers that need token ids (learned per-token rotation angles) get them as ``tokens=``.
"""

from __future__ import annotations

from typing import Annotated, Literal

import torch
from torch import nn

from ..mixers.base import build_mixer
from ..mixers.sessa import SessaBlock
from ..options import Opt

BLOCKS = ("residual_mlp", "gated", "native")  # = typing.get_args(BlockKind)
NATIVE_BLOCKS = ("pre_norm_mlp", "pre_norm", "gated")  # the values a mixer's ``native_block`` may take


class RMSNorm(nn.Module):
    def __init__(self, d: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def make_norm(kind: str, d: int) -> nn.Module:
    if kind == "layernorm":
        return nn.LayerNorm(d)
    if kind == "rmsnorm":
        return RMSNorm(d)
    raise ValueError(f"norm must be 'layernorm' or 'rmsnorm', got {kind!r}")


class ResidualBlock(nn.Module):
    def __init__(self, d_model: int, mixer: nn.Module, mlp_hidden: int, norm: str = "layernorm"):
        super().__init__()
        self.norm1 = make_norm(norm, d_model)
        self.mixer = mixer
        self.mlp = None
        if mlp_hidden:
            self.norm2 = make_norm(norm, d_model)
            self.mlp = nn.Sequential(nn.Linear(d_model, mlp_hidden), nn.GELU(), nn.Linear(mlp_hidden, d_model))

    def forward(self, x: torch.Tensor, **kw) -> torch.Tensor:
        x = x + self.mixer(self.norm1(x), **kw)
        return x + self.mlp(self.norm2(x)) if self.mlp is not None else x


def mixer_kwargs(mixer: nn.Module, tokens: torch.Tensor | None, lengths: torch.Tensor | None) -> dict:
    kw = {}
    if getattr(mixer, "needs_tokens", False):
        kw["tokens"] = tokens
    if lengths is not None and not getattr(mixer, "causal", True):
        kw["lengths"] = lengths
    return kw


def make_blocks(
    d_model: int,
    n_layers: int,
    mixer: dict,
    block: str,
    mlp_hidden: int,
    norm: str,
    seq_len: int | None,
    vocab_size: int | None,
) -> nn.ModuleList:
    """n_layers blocks around the mixer ``mixer`` ({"name": ..., **options}); layer l's mixer gets
    ``layer_idx=l`` and the model's facts (vocab_size), and derives what it needs from them itself."""
    if block not in BLOCKS:
        raise ValueError(f"block must be one of {BLOCKS}, got {block!r}")
    opts = dict(mixer)
    name = opts.pop("name")
    blocks = []
    for layer in range(n_layers):
        m = build_mixer(name, d_model, layer_idx=layer, seq_len=seq_len, model_facts={"vocab_size": vocab_size}, **opts)
        if block == "native":
            blocks.append(native_block(d_model, m, name, mlp_hidden))
        else:
            blocks.append(SessaBlock(d_model, m) if block == "gated" else ResidualBlock(d_model, m, mlp_hidden, norm))
    return nn.ModuleList(blocks)


def native_block(d_model: int, mixer: nn.Module, name: str, mlp_hidden: int) -> nn.Module:
    """The block ``mixer`` declares as its own (``native_block``); see the module docstring."""
    kind = getattr(mixer, "native_block", None)
    if kind not in NATIVE_BLOCKS:
        raise ValueError(
            f"model.block: 'native' needs the mixer to declare its own block, but mixer {name!r} has "
            f"native_block = {kind!r} (expected one of {NATIVE_BLOCKS}); use block 'residual_mlp' or 'gated'"
        )
    if kind == "gated":
        return SessaBlock(d_model, mixer)
    if kind == "pre_norm":
        return ResidualBlock(d_model, mixer, 0, "rmsnorm")
    return ResidualBlock(d_model, mixer, mlp_hidden, "layernorm")


# The typed options every residual stack (decoder LM, sequence classifier) shares: both models' signatures use
# these, so their generated schemas carry the same constraints.
BlockKind = Annotated[
    Literal["residual_mlp", "gated", "native"],
    Opt(
        description="residual_mlp: x + mixer(Norm x), x + MLP(Norm x); gated: the Sessa block around the mixer "
        "(sessa spec macro=shared); native: each mixer's own block (pre-LN attention + MLP for attention, "
        "x + Mamba2(RMSNorm x) for Mamba/Mamba2, the Sessa block for Sessa; sessa spec macro=native)"
    ),
]
NormKind = Literal["layernorm", "rmsnorm"]
MlpRatio = Annotated[float, Opt(minimum=0)]
MlpHidden = Annotated[int | None, Opt(minimum=0)]
