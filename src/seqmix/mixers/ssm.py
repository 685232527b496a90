"""State-space units: S4D, S6 (Mamba-1 selective scan) and B2S6 (the Mamba blocks built on them: mixers/mamba.py).

Units (b2s6 spec §2.1-2.3) map u: (B, L, d) -> y: (B, L, d) with one diagonal state of size n per channel:
- ``s4d``  : LTI, per-channel step Delta = exp(b), per-channel B, C (complex), A shared. Convolution form
             (FFT, default) and recurrent form (``mode="recurrent"``) through ops.selective_scan.
- ``s6``   : Delta_k = softplus(w . u_k + b) (rank-1; ``dt_rank`` > 1 or "auto" = ceil(d/16) gives Mamba's
             low-rank projection), B_k = B u_k and C_k = u_k^T C shared by all channels, real A.
- ``b2s6`` : h blocks of p = d/h channels; block-wise selective Delta, B, C; a per-channel, input-independent
             bias B_bias in the input matrix; complex (default) or real (``complex=False``); ``bias=False`` is the
             block-only variant. ``optim_hints`` declares the paper's optimiser groups (b2s6 spec §2.9).
Blocks:
- ``mamba``  : the Mamba-1 block, in_proj -> causal depthwise conv (4) -> SiLU -> unit -> * SiLU(z) -> out_proj,
               with the unit swappable (``unit`` = s6 | s4d | b2s6; b2s6 spec §2.7). Default unit: S6 with
               Mamba's options (low-rank dt, per-channel A, D skip).
- ``mamba2`` : Mamba2 with scalar-identity SSD (sessa spec §2.5), chunked (default) or recurrent form.
All use ZOH for A; B is ZOH (``disc="zoh"``, the paper's Algorithm 2) or Euler (Mamba's CUDA code; Mamba2).
Complex parameters are kept as real tensors (..., 2) so that AdamW acts on real and imaginary parts;
A = -exp(log_re) + i im keeps Re A < 0.
"""

from __future__ import annotations

import math
from typing import Annotated, ClassVar, Literal

import torch
import torch.nn.functional as F
from torch import nn

from ..ops import fftconv
from ..ops import selective_scan as ss_ops
from ..ops.dispatch import BackendOf
from ..options import Opt, OptPosInt, PosFloat, PosInt
from ..registry import register_mixer
from .base import check_divides, check_input, check_positive_int, register_preset

Disc = Literal["zoh", "euler"]


def _inv_softplus(x: torch.Tensor) -> torch.Tensor:
    return x + torch.log(-torch.expm1(-x))


def _log_uniform(shape, lo: float, hi: float) -> torch.Tensor:
    return torch.exp(torch.rand(shape) * (math.log(hi) - math.log(lo)) + math.log(lo))


class _DiagA(nn.Module):
    """A = -exp(log_re) (+ i im): (n,) tied across channels, or (d, n) per channel.
    init ``lin``: a_m = -1/2 + i pi m (S4D-Lin; complex); ``real``: a_m = -(m + 1) (S4D-Real, Mamba)."""

    def __init__(self, d: int, n: int, complex_: bool, tie: bool, init: str):
        super().__init__()
        m = torch.arange(n, dtype=torch.float32)
        if init == "lin":
            re, im = torch.full((n,), 0.5), math.pi * m
        elif init == "real":
            re, im = m + 1, torch.zeros(n)
        else:
            raise ValueError(f"A init must be 'lin' or 'real', got {init!r}")
        if not tie:
            re, im = re.repeat(d, 1), im.repeat(d, 1)
        self.complex = complex_
        self.log_re = nn.Parameter(torch.log(re))
        self.im = nn.Parameter(im) if complex_ else None

    def forward(self) -> torch.Tensor:
        re = -torch.exp(self.log_re)
        return torch.complex(re, self.im) if self.complex else re


class _ScanUnit(nn.Module):
    """Common parts of the selective units: the scan call, step decoding and the reported backend."""

    causal = True
    d_model: int
    n: int
    backend = BackendOf(ss_ops.OP)

    def _scan_inputs(self, u: torch.Tensor):
        """(delta (B,L,d), A, B (B,L,G,n), C (B,L,G,n), B_bias or None, D or None)."""
        raise NotImplementedError

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        """u: (B, L, d) -> y: (B, L, d), causal."""
        check_input(u, self.d_model, type(self).__name__)
        delta, A, B, C, Bb, D = self._scan_inputs(u)
        return ss_ops.selective_scan(u, delta, A, B, C, B_bias=Bb, D=D, disc=self.disc, chunk=self.chunk)

    def deltas(self, u: torch.Tensor) -> torch.Tensor:
        """u: (B, L, d) -> Delta: (B, L, d), the step sizes the forward uses (b2s6 spec D5's statistics)."""
        return self._scan_inputs(u)[0]

    def init_state(self, batch: int, dtype=torch.float32, device=None) -> torch.Tensor:
        cdtype = {torch.float32: torch.complex64, torch.float64: torch.complex128}[dtype]
        return torch.zeros(batch, self.d_model, self.n, dtype=cdtype if self.is_complex else dtype, device=device)

    def step(self, u_t: torch.Tensor, state: torch.Tensor):
        """u_t: (B, d) -> (y_t: (B, d), state (B, d, n))."""
        delta, A, B, C, Bb, D = self._scan_inputs(u_t[:, None])
        return ss_ops.selective_scan_step(state, u_t, delta[:, 0], A, B[:, 0], C[:, 0], B_bias=Bb, D=D, disc=self.disc)


def _cplx(shape, std: float) -> torch.Tensor:
    """A complex parameter stored as real (..., 2), real and imaginary parts N(0, std^2)."""
    return torch.randn(*shape, 2) * std


@register_mixer("s4d")
class S4D(_ScanUnit):
    """S4D unit: x_k = exp(Delta A) x_{k-1} + Delta phi1(Delta A) B u_k, y_k = Re(C x_k) (+ D u_k), per channel."""

    example_options: ClassVar[dict] = {}  # Mixer clause 2

    backend = BackendOf(select=lambda m: (fftconv.OP,) if m.mode == "conv" else (ss_ops.OP,))

    def __init__(
        self,
        d_model: int,
        *,
        layer_idx: int = 0,
        seq_len: int | None = None,
        d_state: PosInt = 16,
        complex: bool = True,
        tie_A: bool = True,
        tie_BC: Annotated[bool, Opt(description="one B and C for all channels (S4D-tiedBC)")] = False,
        skip: bool = False,
        mode: Literal["conv", "recurrent"] = "conv",
        dt_min: PosFloat = 1e-3,
        dt_max: PosFloat = 1e-1,
        chunk: OptPosInt = None,
    ):
        super().__init__()
        check_positive_int(d_model=d_model, d_state=d_state)
        if mode not in ("conv", "recurrent"):
            raise ValueError(f"mode must be 'conv' or 'recurrent', got {mode!r}")
        self.d_model, self.n, self.is_complex, self.mode, self.disc, self.chunk = (
            d_model,
            d_state,
            complex,
            mode,
            "zoh",
            chunk,
        )
        self.A = _DiagA(d_model, d_state, complex, tie_A, "lin" if complex else "real")
        nb = 1 if tie_BC else d_model
        if complex:  # S4D default: B = 1, C ~ CN(0, 1)
            self.B = nn.Parameter(torch.stack((torch.ones(nb, d_state), torch.zeros(nb, d_state)), -1))
            self.C = nn.Parameter(_cplx((nb, d_state), math.sqrt(0.5)))
        else:
            self.B = nn.Parameter(torch.ones(nb, d_state))
            self.C = nn.Parameter(torch.randn(nb, d_state))
        self.log_dt = nn.Parameter(torch.log(_log_uniform(d_model, dt_min, dt_max)))
        self.D = nn.Parameter(torch.ones(d_model)) if skip else None

    def _BC(self):
        B = torch.view_as_complex(self.B) if self.is_complex else self.B
        C = torch.view_as_complex(self.C) if self.is_complex else self.C
        return B.expand(self.d_model, self.n), C.expand(self.d_model, self.n)

    def _scan_inputs(self, u):
        Bsz, L, d = u.shape
        delta = torch.exp(self.log_dt).expand(Bsz, L, d)
        Bp, Cp = self._BC()
        zeros = u.new_zeros(1, 1, d, self.n).expand(Bsz, L, d, self.n)  # per-channel B goes in as the bias
        return delta, self.A(), zeros, Cp.expand(Bsz, L, d, self.n), Bp, self.D

    def kernel(self, L: int) -> torch.Tensor:
        """K_m = Re(sum_r C_r Bbar_r exp(m Delta a_r)), m = 0..L-1: (L, d), by a Vandermonde product."""
        dt = torch.exp(self.log_dt)[:, None]  # (d, 1)
        dA = dt * self.A().expand(self.d_model, self.n)  # (d, n)
        Bp, Cp = self._BC()
        CB = Cp * dt * ss_ops.phi1(dA) * Bp  # (d, n)
        m = torch.arange(L, dtype=self.log_dt.dtype, device=dA.device)
        V = torch.exp(dA.unsqueeze(-1) * m)  # (d, n, L)
        K = (CB.unsqueeze(-1) * V).sum(1)
        return (K.real if K.is_complex() else K).transpose(0, 1)

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        """u: (B, L, d) -> y: (B, L, d)."""
        if self.mode == "recurrent":
            return super().forward(u)
        check_input(u, self.d_model, "S4D")
        if u.shape[1] == 0:  # no kernel taps to convolve with: the (B, 0, d) output, as the recurrent mode gives
            return u.clone()
        y = fftconv.causal_conv_fft(u, self.kernel(u.shape[1]).to(u.dtype))
        return y + self.D * u if self.D is not None else y


@register_mixer("s6")
class S6(_ScanUnit):
    """S6 unit: Delta_k = softplus(dt(u_k) + b), B_k = B u_k, C_k = u_k^T C (shared across channels), real A."""

    example_options: ClassVar[dict] = {"d_state": 4}  # Mixer clause 2

    def __init__(
        self,
        d_model: int,
        *,
        layer_idx: int = 0,
        seq_len: int | None = None,
        d_state: PosInt = 16,
        dt_rank: Annotated[int | Literal["auto"], Opt(minimum=1)] = 1,
        tie_A: bool = True,
        disc: Disc = "zoh",
        skip: bool = False,
        dt_min: PosFloat = 1e-3,
        dt_max: PosFloat = 1e-1,
        chunk: OptPosInt = None,
    ):
        super().__init__()
        check_positive_int(d_model=d_model, d_state=d_state)
        if disc not in ("zoh", "euler"):
            raise ValueError(f"disc must be 'zoh' or 'euler', got {disc!r}")
        r = math.ceil(d_model / 16) if dt_rank == "auto" else dt_rank
        check_positive_int(dt_rank=r)
        self.d_model, self.n, self.disc, self.chunk, self.is_complex, self.dt_rank = (
            d_model,
            d_state,
            disc,
            chunk,
            False,
            r,
        )
        self.A = _DiagA(d_model, d_state, False, tie_A, "real")
        self.B_proj = nn.Linear(d_model, d_state, bias=False)
        self.C_proj = nn.Linear(d_model, d_state, bias=False)
        if r == 1:  # the paper's rank-1 Delta projection: one logit per step, broadcast to the d channels
            self.w = nn.Parameter((torch.rand(d_model) * 2 - 1) / math.sqrt(d_model))
        else:
            self.dt_down = nn.Linear(d_model, r, bias=False)
            self.dt_up = nn.Linear(r, d_model, bias=False)
        self.b = nn.Parameter(_inv_softplus(_log_uniform(d_model, dt_min, dt_max)))
        self.D = nn.Parameter(torch.ones(d_model)) if skip else None

    def _scan_inputs(self, u):
        logit = (u @ self.w)[..., None] if self.dt_rank == 1 else self.dt_up(self.dt_down(u))
        delta = F.softplus(logit + self.b)
        return delta, self.A(), self.B_proj(u)[:, :, None], self.C_proj(u)[:, :, None], None, self.D

    def delta_parameters(self) -> list[nn.Parameter]:
        return [self.w, self.b] if self.dt_rank == 1 else [self.dt_down.weight, self.dt_up.weight, self.b]


@register_mixer("b2s6")
class B2S6(_ScanUnit):
    """B2S6 unit: per block j, Delta = softplus(w_j . u^[j] + b_(j,i)), Bin = B_w^[j] u^[j] + B_bias_(j,i),
    C = u^[j]^T C^[j]; x = exp(Delta A) x + Delta phi1(Delta A) Bin u_(j,i); y = Re(C x)."""

    example_options: ClassVar[dict] = {"blocks": 4, "d_state": 4}  # Mixer clause 2
    divides: ClassVar[dict] = {"blocks": "d_model"}  # checked on every leaf before any job (config.leaf_rules)

    def __init__(
        self,
        d_model: int,
        *,
        layer_idx: int = 0,
        seq_len: int | None = None,
        blocks: Annotated[int, Opt(minimum=1, description="h; p = d_model / h")] = 8,
        d_state: PosInt = 16,
        complex: bool = True,
        bias: Annotated[bool, Opt(description="per-channel B_bias (False: block-only variant)")] = True,
        tie_A: bool = True,
        disc: Disc = "zoh",
        skip: bool = False,
        dt_min: PosFloat = 1e-3,
        dt_max: PosFloat = 1e-1,
        chunk: OptPosInt = None,
    ):
        super().__init__()
        check_positive_int(d_model=d_model, blocks=blocks, d_state=d_state)
        check_divides("blocks", blocks, "d_model", d_model)
        if disc not in ("zoh", "euler"):
            raise ValueError(f"disc must be 'zoh' or 'euler', got {disc!r}")
        h, p, n = blocks, d_model // blocks, d_state
        self.d_model, self.h, self.p, self.n, self.is_complex = d_model, h, p, n, complex
        self.disc, self.chunk = disc, chunk
        self.A = _DiagA(d_model, n, complex, tie_A, "lin" if complex else "real")
        lim = 1 / math.sqrt(p)  # nn.Linear default for B_w and C (fan_in p); w ~ U(-1/sqrt p, 1/sqrt p)
        if complex:
            self.B_w = nn.Parameter((torch.rand(h, n, p, 2) * 2 - 1) * lim / math.sqrt(2))
        else:
            self.B_w = nn.Parameter((torch.rand(h, n, p) * 2 - 1) * lim)
        self.C = nn.Parameter((torch.rand(h, p, n) * 2 - 1) * lim)
        self.w = nn.Parameter((torch.rand(h, p) * 2 - 1) * lim)
        self.b = nn.Parameter(_inv_softplus(_log_uniform(d_model, dt_min, dt_max)))
        if bias:
            self.B_bias = nn.Parameter(_cplx((d_model, n), math.sqrt(0.5)) if complex else torch.randn(d_model, n))
        else:
            self.B_bias = None
        self.D = nn.Parameter(torch.ones(d_model)) if skip else None

    def _scan_inputs(self, u):
        Bsz, L, d = u.shape
        ub = u.reshape(Bsz, L, self.h, self.p)
        Bw = torch.view_as_complex(self.B_w) if self.is_complex else self.B_w
        Bk = torch.einsum("blhp,hnp->blhn", ub.to(Bw.dtype), Bw)
        Ck = torch.einsum("blhp,hpn->blhn", ub, self.C)
        logit = torch.einsum("blhp,hp->blh", ub, self.w)  # one logit per block and step
        delta = F.softplus(logit.repeat_interleave(self.p, dim=-1) + self.b)
        Bb = None
        if self.B_bias is not None:
            Bb = torch.view_as_complex(self.B_bias) if self.is_complex else self.B_bias
        return delta, self.A(), Bk, Ck, Bb, self.D

    def delta_parameters(self) -> list[nn.Parameter]:
        return [self.w, self.b]

    lr_ssm = 1e-3  # b2s6 spec §2.9: the learning rate of A and of the B bias

    def optim_hints(self) -> dict[str, dict]:
        """Per-parameter optimizer hints (seqmix.training.optim, b2s6 spec §2.9): A and B_bias at lr_ssm,
        the Delta parameters w, b at min(1e-3, 0.1 lr); none of them decayed. The rest follow the defaults."""
        hints = {n: {"lr": self.lr_ssm, "weight_decay": 0.0} for n, _ in self.A.named_parameters(prefix="A")}
        names = {id(p): n for n, p in self.named_parameters()}
        hints.update(
            {names[id(p)]: {"lr_mult": 0.1, "lr_max": 1e-3, "weight_decay": 0.0} for p in self.delta_parameters()}
        )
        if self.B_bias is not None:
            hints["B_bias"] = {"lr": self.lr_ssm, "weight_decay": 0.0}
        return hints


def _preset(name: str, base, doc: str, **preset):
    return register_preset(name, base, doc, base.__name__ + "_" + name, **preset)


_preset("b2s6_real", B2S6, "B2S6-full-real: real A, B_w, B_bias.", complex=False)
_preset("b2s6_nobias", B2S6, "B2S6-nobias-complex: block-only (no B_bias).", bias=False)
