"""Mamba blocks: the Mamba-1 block with a swappable state-space unit (``mamba``; b2s6 spec §2.7) and Mamba2 with
scalar-identity SSD (``mamba2``; sessa spec §2.5), chunked (default) or recurrent form.

- ``mamba``  : in_proj -> causal depthwise conv (4) -> SiLU -> unit -> * SiLU(z) -> out_proj, the unit one of
               ``seqmix.mixers.ssm`` (s6 | s4d | b2s6). Default unit: S6 with Mamba's options (low-rank dt,
               per-channel A, D skip).
- ``mamba2`` : [z, xBC, dt] = in_proj(u); xBC = SiLU(conv(xBC)); SSD with a scalar A per head;
               y = out_proj(RMSNorm(y * SiLU(z))).
"""

from __future__ import annotations

from typing import ClassVar, Literal

import torch
import torch.nn.functional as F
from torch import nn

from ..ops import ssd as ssd_ops
from ..ops.dispatch import BackendOf
from ..options import PosFloat, PosInt
from ..registry import register_mixer
from .base import check_divides, check_input, check_positive_int
from .ssm import B2S6, S4D, S6, _inv_softplus, _log_uniform


class _CausalDepthwiseConv(nn.Module):
    """Depthwise causal conv1d over (B, L, ch), kernel k, left padding k-1; ``step`` keeps the last k-1 inputs."""

    def __init__(self, ch: int, k: int):
        super().__init__()
        self.k = k
        self.conv = nn.Conv1d(ch, ch, k, groups=ch, padding=k - 1, bias=True)

    def forward(self, x):
        if x.shape[1] == 0:  # conv1d refuses an empty length; the output is as empty as the input
            return x + self.conv.bias
        return self.conv(x.transpose(1, 2))[..., : x.shape[1]].transpose(1, 2)

    def step(self, x_t, buf):
        """x_t: (B, ch); buf: (B, ch, k-1) -> (y_t (B, ch), new buf)."""
        window = torch.cat((buf, x_t[..., None]), dim=-1)  # (B, ch, k)
        y = (window * self.conv.weight[:, 0]).sum(-1) + self.conv.bias
        return y, window[..., 1:]


_UNITS = {"s6": S6, "s4d": S4D, "b2s6": B2S6}


@register_mixer("mamba")
class MambaBlock(nn.Module):
    """Mamba-1 mixer: y = out_proj(unit(SiLU(conv(x W_x))) * SiLU(x W_z)), d_inner = expand * d_model."""

    example_options: ClassVar[dict] = {"unit_options": {"d_state": 4}}  # Mixer clause 2

    causal = True
    native_block = "pre_norm"  # its standard block (models.blocks, block: native): x + mixer(RMSNorm x)

    def __init__(
        self,
        d_model: int,
        *,
        layer_idx: int = 0,
        seq_len: int | None = None,
        expand: PosInt = 2,
        d_conv: PosInt = 4,
        unit: Literal["s6", "s4d", "b2s6"] = "s6",
        unit_options: dict | None = None,
    ):
        super().__init__()
        check_positive_int(d_model=d_model, expand=expand, d_conv=d_conv)
        if unit not in _UNITS:
            raise ValueError(f"unit must be one of {sorted(_UNITS)}, got {unit!r}")
        self.d_model, self.d_inner = d_model, expand * d_model
        opts = {"s6": {"dt_rank": "auto", "tie_A": False, "skip": True}, "s4d": {"skip": True}, "b2s6": {"skip": True}}[
            unit
        ]
        opts.update(unit_options or {})
        self.in_proj = nn.Linear(d_model, 2 * self.d_inner, bias=False)
        self.conv = _CausalDepthwiseConv(self.d_inner, d_conv)
        self.unit = _UNITS[unit](self.d_inner, layer_idx=layer_idx, seq_len=seq_len, **opts)
        self.out_proj = nn.Linear(self.d_inner, d_model, bias=False)

    @property
    def backend(self) -> str:
        return self.unit.backend

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: (B, L, d_model) -> (B, L, d_model), causal."""
        check_input(x, self.d_model, "MambaBlock")
        u, z = self.in_proj(x).chunk(2, dim=-1)
        return self.out_proj(self.unit(F.silu(self.conv(u))) * F.silu(z))

    def init_state(self, batch: int, dtype=torch.float32, device=None):
        return (
            torch.zeros(batch, self.d_inner, self.conv.k - 1, dtype=dtype, device=device),
            self.unit.init_state(batch, dtype, device),
        )

    def step(self, x_t: torch.Tensor, state):
        """x_t: (B, d_model) -> (y_t, state)."""
        buf, h = state
        u, z = self.in_proj(x_t).chunk(2, dim=-1)
        c, buf = self.conv.step(u, buf)
        y, h = self.unit.step(F.silu(c), h)
        return self.out_proj(y * F.silu(z)), (buf, h)


class _GatedRMSNorm(nn.Module):
    """RMSNorm(y * SiLU(z)) (Mamba2's norm_before_gate=False)."""

    def __init__(self, d: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, y, z):
        y = y * F.silu(z)
        return y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


@register_mixer("mamba2")
class Mamba2(nn.Module):
    """Mamba2 mixer (sessa spec §2.5): [z, xBC, dt] = in_proj(u); xBC = SiLU(conv(xBC)); SSD with a scalar
    A per head; y = out_proj(RMSNorm(y * SiLU(z)))."""

    example_options: ClassVar[dict] = {"headdim": 16, "d_state": 16, "chunk": 8}  # Mixer clause 2
    # checked on every leaf before any job (config.leaf_rules): heads of headdim channels split the inner width,
    # and groups split the heads
    divides: ClassVar[dict] = {"headdim": "expand * d_model", "ngroups": "expand * d_model // headdim"}

    backend = BackendOf(select=lambda m: (ssd_ops.OP,) if m.mode == "chunked" else ())

    causal = True
    native_block = "pre_norm"  # its standard block (models.blocks, block: native): x + mixer(RMSNorm x)

    def __init__(
        self,
        d_model: int,
        *,
        layer_idx: int = 0,
        seq_len: int | None = None,
        d_state: PosInt = 64,
        headdim: PosInt = 32,
        expand: PosInt = 2,
        ngroups: PosInt = 1,
        d_conv: PosInt = 4,
        chunk: PosInt = 64,
        mode: Literal["chunked", "recurrent"] = "chunked",
        dt_min: PosFloat = 1e-3,
        dt_max: PosFloat = 1e-1,
        A_init_range: tuple[PosFloat, PosFloat] = (1.0, 16.0),
    ):
        super().__init__()
        check_positive_int(
            d_model=d_model,
            d_state=d_state,
            headdim=headdim,
            expand=expand,
            ngroups=ngroups,
            d_conv=d_conv,
            chunk=chunk,
        )
        d_inner = expand * d_model
        check_divides("headdim", headdim, "d_inner = expand * d_model", d_inner)
        H = d_inner // headdim
        check_divides("ngroups", ngroups, "nheads = d_inner / headdim", H)
        if mode not in ("chunked", "recurrent"):
            raise ValueError(f"mode must be 'chunked' or 'recurrent', got {mode!r}")
        self.d_model, self.d_inner, self.H, self.P, self.N, self.G = d_model, d_inner, H, headdim, d_state, ngroups
        self.chunk, self.mode = chunk, mode
        self.in_proj = nn.Linear(d_model, 2 * d_inner + 2 * ngroups * d_state + H, bias=False)
        self.conv = _CausalDepthwiseConv(d_inner + 2 * ngroups * d_state, d_conv)
        dt = _log_uniform(H, dt_min, dt_max).clamp(min=1e-4)
        self.dt_bias = nn.Parameter(_inv_softplus(dt))
        self.A_log = nn.Parameter(torch.log(torch.empty(H).uniform_(*A_init_range)))
        self.D = nn.Parameter(torch.ones(H))
        self.norm = _GatedRMSNorm(d_inner)
        self.out_proj = nn.Linear(d_inner, d_model, bias=False)

    def _split(self, zxbcdt):
        di, gn = self.d_inner, self.G * self.N
        return zxbcdt.split([di, di + 2 * gn, self.H], dim=-1)

    def _post(self, xBC):
        di, gn = self.d_inner, self.G * self.N
        x, B, C = xBC.split([di, gn, gn], dim=-1)
        sh = x.shape[:-1]
        return x.reshape(*sh, self.H, self.P), B.reshape(*sh, self.G, self.N), C.reshape(*sh, self.G, self.N)

    def step_sizes(self, u: torch.Tensor) -> torch.Tensor:
        """Delta = softplus(dt_raw + dt_bias): (B, L, H), the step sizes ``forward`` uses on u (sessa spec §3.6
        D7; the state decays by exp(A_h Delta_t) per token)."""
        check_input(u, self.d_model, "Mamba2")
        return F.softplus(self._split(self.in_proj(u))[2] + self.dt_bias)

    def decay_rates(self) -> torch.Tensor:
        """A = -exp(A_log): (H,)."""
        return -torch.exp(self.A_log)

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        """u: (B, L, d_model) -> (B, L, d_model), causal."""
        check_input(u, self.d_model, "Mamba2")
        Bsz, L, _ = u.shape
        z, xBC, dt = self._split(self.in_proj(u))
        x, B, C = self._post(F.silu(self.conv(xBC)))
        dt = F.softplus(dt + self.dt_bias)
        A = -torch.exp(self.A_log)
        if self.mode == "chunked":
            y = ssd_ops.ssd(x, dt, A, B, C, D=self.D, chunk=self.chunk)
        else:
            y = ssd_ops.ssd_recurrent(x, dt, A, B, C, D=self.D)
        return self.out_proj(self.norm(y.reshape(Bsz, L, self.d_inner), z))

    def init_state(self, batch: int, dtype=torch.float32, device=None):
        return (
            torch.zeros(batch, self.conv.conv.in_channels, self.conv.k - 1, dtype=dtype, device=device),
            torch.zeros(batch, self.H, self.P, self.N, dtype=dtype, device=device),
        )

    def step(self, u_t: torch.Tensor, state):
        """u_t: (B, d_model) -> (y_t, state)."""
        buf, h = state
        z, xBC, dt = self._split(self.in_proj(u_t))
        c, buf = self.conv.step(xBC, buf)
        x, B, C = self._post(F.silu(c))
        y, h = ssd_ops.ssd_step(h, x, F.softplus(dt + self.dt_bias), -torch.exp(self.A_log), B, C, self.D)
        return self.out_proj(self.norm(y.reshape(u_t.shape[0], self.d_inner), z)), (buf, h)
