"""The single-layer probe of the B2S6 paper (b2s6 spec §2.4, eq. 5): G(u) = N sigma(Gamma(M u)_L + theta).

    inputs (B, L, d_in) -> outputs (B, d_out)

- M: a linear encoder d_in -> width without bias (``encoder: true``; Figure 3 embeds a scalar sequence), or
  the identity when the input is already ``width`` wide (``encoder: false``; Figure 4, M = I);
- Gamma: one S4D, S6 or B2S6 unit over ``width`` channels; only its last time step is read;
- theta: a bias of size width, sigma = GELU (b2s6 spec §2.4 default), N: a linear decoder width -> d_out (with bias).
``freeze_delta`` stops the gradient of the unit's step parameters (w, b: Figure 6's "S6 with fixed Delta"),
so that the optimiser never sees them. ``square_blocks`` sets a B2S6 unit's h = p = sqrt(width) (Figure 3 holds
h / p fixed while the width is swept).
"""

from __future__ import annotations

from typing import Annotated, ClassVar

import torch
from torch import nn

from .. import registry
from ..mixers.base import build_mixer
from ..options import MixerSpec, Opt, PosInt


@registry.register_model("ssm_probe")
class SSMProbe(nn.Module):
    # what the leaf check reads (config.leaf_rules): the unit's width, and the unit option square_blocks sets
    mixer_width: ClassVar[str] = "width"
    sets_mixer_options: ClassVar[dict] = {"square_blocks": ["blocks"]}

    def __init__(
        self,
        d_in: int,
        d_out: int,
        seq_len: int | None = None,
        *,
        mixer: MixerSpec,
        width: PosInt,
        encoder: Annotated[
            bool, Opt(description="a learned M (d_in -> width); false: M = I, d_in must be width")
        ] = True,
        freeze_delta: Annotated[bool, Opt(description="keep the unit's Delta parameters (w, b) at their init")] = False,
        square_blocks: Annotated[bool, Opt(description="B2S6 with h = p = sqrt(width) blocks (Figure 3)")] = False,
    ):
        super().__init__()
        if not encoder and d_in != width:
            raise ValueError(f"ssm_probe: encoder false (M = I) needs d_in == width, got d_in {d_in}, width {width}")
        opts = dict(mixer)
        if square_blocks:  # Figure 3 holds h = p as d grows (b2s6 spec E1), so h follows the swept width
            h = round(width**0.5)
            if h * h != width or opts.get("name") != "b2s6":
                raise ValueError(
                    f"ssm_probe: square_blocks needs a b2s6 unit and a square width, got {opts.get('name')!r}, {width}"
                )
            opts["blocks"] = h
        self.M = nn.Linear(d_in, width, bias=False) if encoder else nn.Identity()
        self.unit = build_mixer(opts.pop("name"), width, seq_len=seq_len, **opts)
        self.theta = nn.Parameter(torch.zeros(width))
        self.N = nn.Linear(width, d_out)
        if freeze_delta:
            params = getattr(self.unit, "delta_parameters", None)
            if params is None:
                raise ValueError(f"ssm_probe: freeze_delta needs a selective unit (s6, b2s6), got {mixer['name']!r}")
            for p in params():
                p.requires_grad_(False)

    def sole_mixer(self) -> nn.Module:
        """The unit (capabilities.SoleMixer)."""
        return self.unit

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: (B, L, d_in) -> (B, d_out), from the unit's output at the last step."""
        y = self.unit(self.M(x))[:, -1]
        return self.N(torch.nn.functional.gelu(y + self.theta))
