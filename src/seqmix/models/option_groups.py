"""Option groups the model stacks share (``seqmix.options.OptionGroup``), declared once: ``Stack`` (width, depth
and the mixer of every layer: the decoder LM, the sequence classifier and the LRA classifier) and
``BlockOptions`` (the residual block around each mixer: the decoder LM and the sequence classifier). A config
gives the fields flat (``model: {d_model: 64, n_layers: 2, mixer: {...}, block: gated}``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from ..options import MixerSpec, Opt, OptionGroup, PosInt
from .blocks import BlockKind, MlpHidden, MlpRatio, NormKind


@dataclass(frozen=True, kw_only=True)
class Stack(OptionGroup):
    d_model: PosInt
    n_layers: PosInt
    mixer: MixerSpec
    # read by models.build_model, not by the model: it replaces d_model by the width whose model is closest
    target_params: Annotated[
        int | None,
        Opt(
            minimum=1,
            description="match this trainable parameter count: d_model becomes the even width whose model is "
            "closest to it (models.sizing.width_for_target; the count is reported as the train marker's n_params)",
        ),
    ] = None


@dataclass(frozen=True, kw_only=True)
class BlockOptions(OptionGroup):
    block: BlockKind = "residual_mlp"
    mlp_ratio: MlpRatio = 4.0
    mlp_hidden: MlpHidden = None
    norm: NormKind = "layernorm"

    def hidden(self, d_model: int) -> int:
        """The MLP's hidden width: ``mlp_hidden`` when set, else ``mlp_ratio`` x d_model (0: no MLP)."""
        return int(round(self.mlp_ratio * d_model)) if self.mlp_hidden is None else self.mlp_hidden
