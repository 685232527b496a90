"""Causal multi-head softmax attention and its positional variants (rotations paper M0-M7; sessa §2.4),
plus PaTH attention (accumulated Householder transforms), the anchor of the accumulated-transport family.

    q, k, v = x W_qkv + b ;  heads of width d_h = d_model / heads
    logits_ij = q_i . k_j / sqrt(d_h) (+ ALiBi bias) ,  j <= i ;  out = concat_h(softmax @ v) W_o + b_o

Positional mechanisms (``position``):
- ``nope``: none (M0).
- ``rope``: Theta_i = i omega, omega_b = base^(-2b/d_h) (M1; M2 with ``rotate_values``).
- ``alibi``: bias -m_h (i - j), m_h = 2^(-8h/H) (M7).
- ``so2_random``: steps psi_{t,b} ~ U(-s f_b, s f_b), f_b = omega_b, redrawn at every forward from the
  module's own generator (M3; M4 with ``rotate_values``); ``random_scale`` s (1 in the paper; 0 gives NoPE).
  ``angles_per_head`` False (default, the paper's text) shares the angles across heads; ``value_path``
  ``separate`` (default, rotations spec U11) draws independent steps for the value rotation, ``same`` reuses them.
- ``so2_learned``: psi_t = omega + pi tanh(g_t) (M5; M6 with ``rotate_values``), g_t = E[token_t] (a per-token
  table, with ``token_angles`` (set by the so2_learned_* presets) when ``vocab_size`` is known: the model
  fills it in, and passes ``tokens``) or g_t = x_t W_g (hidden-state dependent otherwise); E / W_g start at
  zero, so the variant equals RoPE at initialisation.
Backends: on CUDA with the rotation-attention Triton kernel registered, every position runs through that op
(``steps``, ALiBi slopes, the layout; no T x T tensor, so ``query_block`` is moot) and ``backend`` says "triton".
Elsewhere the torch paths run, unchanged, and it says "reference": one SDPA call, or with ``query_block`` (None:
never) sequences longer than it in query blocks against all earlier keys (``blocked_attention``; the same
outputs, the ALiBi bias built per block, memory linear in T where one call materialises the (H, T, T) bias).
Per layer: ``layer_idx`` offsets ``angle_seed`` (layer l draws its random steps from seed + 7919 l).
Accumulated angles are EXCLUSIVE prefix sums in float64 (seqmix.ops.rotary). Direction convention (one
for all variants; see ops/rotary/reference.py): q, k (and v) at position i are rotated by R(+Theta_i) and the
output by R(-Theta_i) before W_o, so score_ij = q_i^T R(Theta_j - Theta_i) k_j and the transported value is
R(Theta_j - Theta_i) v_j: the paper's P_{j->i} = A_i^{-1} A_j on both paths.
"""

from __future__ import annotations

import math
import typing
from typing import Annotated, ClassVar, Literal

import torch
import torch.nn.functional as F
from torch import nn

from ..ops import path_attention as path_ops
from ..ops import rotation_attention as ra_ops
from ..ops.dispatch import BackendOf
from ..ops.path_attention import path_attention
from ..ops.rotary import reference as rotary
from ..options import NonNegInt, Opt, OptPosInt, PosFloat, PosInt
from ..registry import register_mixer
from .base import check_divides, check_input, check_positive_int, register_preset
from .blocked_attention import alibi_bias, causal_attention

Position = Literal["nope", "rope", "alibi", "so2_random", "so2_learned"]
POSITIONS = typing.get_args(Position)


def alibi_slopes(heads: int) -> torch.Tensor:
    """m_h = 2^(-8h/H), h = 1..H."""
    return torch.tensor([2.0 ** (-8.0 * h / heads) for h in range(1, heads + 1)], dtype=torch.float64)


@register_mixer("softmax_attention")
class SoftmaxAttention(nn.Module):
    example_options: ClassVar[dict] = {}  # Mixer clause 2
    # what forward runs on the module's device: the op's kernel where ``uses_kernel``, else plain torch (SDPA or
    # the query-blocked path), which the op's automatic choice off CUDA ("reference") names as well
    backend = BackendOf(select=lambda m: (ra_ops.OP,) if m.head_dim % 2 == 0 else ())
    causal = True
    native_block = "pre_norm_mlp"  # its standard block (models.blocks, block: native): pre-LN + MLP
    # checked on every leaf before any job (config.leaf_rules): heads split the width, into heads of even width
    # where a position rotates pairs of channels
    divides: ClassVar[dict] = {
        "heads": "d_model / 2 if position == 'rope' or position == 'so2_random' or position == 'so2_learned' "
        "else d_model"
    }

    def __init__(
        self,
        d_model: int,
        *,
        layer_idx: int = 0,
        seq_len: int | None = None,
        heads: PosInt = 4,
        position: Position = "rope",
        rotate_values: bool = False,
        angles_per_head: bool | None = None,
        value_path: Literal["separate", "same"] = "separate",
        random_scale: Annotated[float, Opt(minimum=0)] = 1.0,
        angle_seed: NonNegInt = 12345,
        token_angles: Annotated[
            bool,
            Opt(
                description="so2_learned: a per-token angle table when "
                "vocab_size is known (else angles from the hidden state)"
            ),
        ] = False,
        vocab_size: OptPosInt = None,
        rope_base: PosFloat = 10000.0,
        layout: Literal["half", "interleaved"] = "half",
        bias: bool = True,
        query_block: Annotated[
            int | None,
            Opt(minimum=1, description="attend sequences longer than this in blocks of this many queries"),
        ] = None,
    ):
        super().__init__()
        check_positive_int(d_model=d_model, heads=heads)
        if query_block is not None:
            check_positive_int(query_block=query_block)
        check_divides("heads", heads, "d_model", d_model)
        if position not in POSITIONS:
            raise ValueError(f"position must be one of {POSITIONS}, got {position!r}")
        dh = d_model // heads
        rotates = position in ("rope", "so2_random", "so2_learned")
        if rotates and dh % 2:
            raise ValueError(f"head_dim = d_model / heads = {dh} must be even for rotations (position={position!r})")
        if rotate_values and not rotates:
            raise ValueError(f"rotate_values needs a rotation position, got position={position!r}")
        if value_path not in ("separate", "same"):
            raise ValueError(f"value_path must be 'separate' or 'same', got {value_path!r}")
        self.d_model, self.heads, self.head_dim = d_model, heads, dh
        self.position, self.rotate_values, self.layout = position, rotate_values, layout
        self.value_path, self.random_scale = value_path, float(random_scale)
        self.query_block = query_block
        # per head by default for learned angles (one table per layer, V x H*B: spec U12), shared for random (U10)
        self.angles_per_head = (position == "so2_learned") if angles_per_head is None else angles_per_head
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.out = nn.Linear(d_model, d_model, bias=bias)
        self.register_buffer("omega", rotary.rope_frequencies(dh, rope_base), persistent=False)
        if position == "alibi":
            self.register_buffer("slopes", alibi_slopes(heads), persistent=False)
        # random rotation steps are i.i.d. across layers (rotations spec M3/M4): each layer draws from its own
        # stream, offset from the configured seed by a prime times its index
        self.angle_seed = angle_seed + 7919 * layer_idx
        self._gen: torch.Generator | None = None
        n_ang = (heads if self.angles_per_head else 1) * (dh // 2)
        self.vocab_size, self.token_angles = vocab_size, token_angles
        self.needs_tokens = position == "so2_learned" and token_angles and vocab_size is not None
        if position == "so2_learned":
            if self.needs_tokens:
                self.angle_table = nn.Parameter(torch.zeros(vocab_size, n_ang))
            else:
                self.angle_proj = nn.Linear(d_model, n_ang, bias=False)
                nn.init.zeros_(self.angle_proj.weight)

    # ------------------------------------------------------------------ angles
    def reseed(self, seed: int | None = None) -> None:
        """Restart the random-angle generator (so2_random), e.g. per evaluation length (spec U17)."""
        self._gen = torch.Generator(device="cpu")
        self._gen.manual_seed(self.angle_seed if seed is None else seed)

    def _random_steps(self, Bsz: int, T: int) -> torch.Tensor:
        if self._gen is None:
            self.reseed()
        nh = self.heads if self.angles_per_head else 1
        u = torch.rand(Bsz, nh, T, self.head_dim // 2, generator=self._gen, dtype=torch.float64)
        return ((2 * u - 1) * self.random_scale * self.omega.cpu()).to(self.omega.device)

    def _learned_steps(self, x: torch.Tensor, tokens: torch.Tensor | None) -> torch.Tensor:
        """psi_t = omega + pi tanh(g_t): float64 (B, H or 1, T, d_h/2)."""
        Bsz, T, _ = x.shape
        if self.needs_tokens:
            if tokens is None:
                raise ValueError("so2_learned with vocab_size needs tokens=(batch, length) token ids")
            g = self.angle_table[tokens]
        elif tokens is not None:  # the ids would be ignored: the angles come from the hidden state
            raise ValueError(
                f"so2_learned got tokens= but has no per-token angle table (token_angles={self.token_angles}, "
                f"vocab_size={self.vocab_size}): set token_angles: true with vocab_size, or pass no tokens"
            )
        else:
            g = self.angle_proj(x)
        nh = self.heads if self.angles_per_head else 1
        g = g.reshape(Bsz, T, nh, self.head_dim // 2).transpose(1, 2)
        return self.omega + math.pi * torch.tanh(g.to(torch.float64))

    def steps(self, x: torch.Tensor, tokens: torch.Tensor | None = None) -> tuple[torch.Tensor | None, ...]:
        """(psi for q/k, psi_v for v): angle steps, float64 (B or 1, H or 1, T, d_h/2); psi_v is psi itself
        when the value path shares the angles, None when values do not rotate; (None, None) for nope/alibi.
        so2_random draws from the module's generator (q/k steps first, then separate value steps)."""
        Bsz, T, _ = x.shape
        if self.position == "rope":
            psi = ra_ops.rope_steps(T, self.omega)
        elif self.position == "so2_random":
            psi = self._random_steps(Bsz, T)
            if self.rotate_values and self.value_path == "separate":
                return psi, self._random_steps(Bsz, T)
        elif self.position == "so2_learned":
            psi = self._learned_steps(x, tokens)
        else:
            return None, None
        return psi, (psi if self.rotate_values else None)

    def angles(self, x: torch.Tensor, tokens: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(Theta for q/k, Theta for v or None): float64, (B or 1, H or 1, T, d_h/2), wrapped: the exclusive
        prefix sums of ``steps`` (RoPE's i omega directly, as the torch path always had it)."""
        if self.position == "rope":
            th = rotary.rope_angles(x.shape[1], self.omega)[None, None]
            return th, (th if self.rotate_values else None)
        psi, psi_v = self.steps(x, tokens)
        if psi is None:
            return None, None
        th = rotary.accumulate_angles(psi)
        if psi_v is None or psi_v is psi:
            return th, (th if psi_v is not None else None)
        return th, rotary.accumulate_angles(psi_v)

    # ------------------------------------------------------------------ forward
    def attention_weights(self, x: torch.Tensor, tokens: torch.Tensor | None = None) -> torch.Tensor:
        """The attention probabilities ``forward`` applies to x: (B, H, T, T), zero above the diagonal (sessa
        sessa spec §3.6 D7). Not for ``so2_random``: its angles are redrawn at every call, so they would not be
        those of any forward."""
        if self.position == "so2_random":
            raise ValueError("attention_weights: so2_random redraws its angles at every call; no forward to match")
        check_input(x, self.d_model, type(self).__name__)
        Bsz, T, _ = x.shape
        q, k, _ = self.qkv(x).view(Bsz, T, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        th, _ = self.angles(x, tokens)
        if th is not None:
            cos, sin = rotary.cos_sin(th, x.dtype)
            q, k = rotary.rotate(q, cos, sin, self.layout), rotary.rotate(k, cos, sin, self.layout)
        logits = (q @ k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        if self.position == "alibi":
            logits = logits + alibi_bias(T, self.slopes, x.device, logits.dtype)
        else:
            future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
            logits = logits.masked_fill(future, float("-inf"))
        return torch.softmax(logits, dim=-1)

    def uses_kernel(self, device: torch.device) -> bool:
        """Whether forward on ``device`` goes through the rotation-attention op: its automatic choice there is a
        fast backend (fused or Triton, by the measured table on CUDA) and the head dim is even (rotations pair
        columns; an odd last column of a nope/alibi head has no partner, so those keep the torch path)."""
        return self.head_dim % 2 == 0 and ra_ops.OP.backend_on(device) in ("fused", "triton")

    def forward(self, x: torch.Tensor, tokens: torch.Tensor | None = None) -> torch.Tensor:
        """x: (B, T, d_model) -> (B, T, d_model), causal. ``tokens`` (B, T): only for learned per-token angles."""
        check_input(x, self.d_model, type(self).__name__)
        Bsz, T, _ = x.shape
        q, k, v = self.qkv(x).view(Bsz, T, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        if self.uses_kernel(x.device):
            psi, psi_v = self.steps(x, tokens)
            slopes = self.slopes if self.position == "alibi" else None
            o = ra_ops.rotation_attention(q, k, v, psi, psi_v, slopes, layout=self.layout)
        else:
            o = self._torch_attention(q, k, v, x, tokens)
        return self.out(o.transpose(1, 2).reshape(Bsz, T, self.d_model))

    def _torch_attention(self, q, k, v, x: torch.Tensor, tokens: torch.Tensor | None) -> torch.Tensor:
        """The plain torch path: rotate, SDPA (or the query-blocked path), rotate back. q, k, v: (B, H, T, d_h)
        -> (B, H, T, d_h)."""
        th, thv = self.angles(x, tokens)
        if th is not None:
            cos, sin = rotary.cos_sin(th, x.dtype)
            q = rotary.rotate(q, cos, sin, self.layout)
            k = rotary.rotate(k, cos, sin, self.layout)
        if thv is not None:
            cv, sv = rotary.cos_sin(thv, x.dtype)  # the same tensors rotate v and the output back (pitfall 2)
            v = rotary.rotate(v, cv, sv, self.layout)
        slopes = self.slopes if self.position == "alibi" else None
        o = causal_attention(q, k, v, slopes=slopes, query_block=self.query_block, bias_dtype=x.dtype)
        if thv is not None:
            o = rotary.rotate(o, cv, sv, self.layout, inverse=True)  # before W_o (spec U23)
        return o


def _variant(name: str, doc: str, **preset):
    """Register a named preset of SoftmaxAttention (the names a config or the cross-paper matrix uses)."""
    return register_preset(
        name, SoftmaxAttention, doc, "".join(p.capitalize() for p in name.split("_")) + "Attention", **preset
    )


_variant("nope", "M0: causal softmax attention without positional encoding.", position="nope")
_variant("rope", "M1: RoPE on q and k.", position="rope")
_variant("rope_qkv", "M2: RoPE on q, k and v (output rotated back).", position="rope", rotate_values=True)
_variant("alibi", "M7: ALiBi distance bias.", position="alibi")
_variant("so2_random_qk", "M3: random accumulated SO(2) rotations of q, k.", position="so2_random")
_variant(
    "so2_random_qkv", "M4: random accumulated SO(2) rotations of q, k, v.", position="so2_random", rotate_values=True
)
_variant(
    "so2_learned_qk",
    "M5: learned token-dependent accumulated rotations of q, k.",
    position="so2_learned",
    token_angles=True,
)
_variant(
    "so2_learned_qkv",
    "M6: learned token-dependent accumulated rotations of q, k, v.",
    position="so2_learned",
    rotate_values=True,
    token_angles=True,
)


@register_mixer("path")
class PaTHAttention(nn.Module):
    """PaTH attention: logits q_i^T H_i..H_{j+1} k_j with H_t = I - beta_t w_t w_t^T (see
    ops/path_attention). w_t = normalize(x_t W_w) per head, beta_t = 2 sigmoid(x_t W_beta + b) in (0, 2).
    (The PaTH paper also runs a short convolution before normalising w; left out here.)
    ``blocked_from``: sequences longer than this take the softmax one chunk of queries at a time
    (``path_attention_blocked``: no T x T logits, memory linear in T without autograd; the same outputs)."""

    example_options: ClassVar[dict] = {"chunk": 8}  # Mixer clause 2
    divides: ClassVar[dict] = {"heads": "d_model"}  # checked on every leaf before any job (config.leaf_rules)

    backend = BackendOf(path_ops.OP)

    causal = True

    def __init__(
        self,
        d_model: int,
        *,
        layer_idx: int = 0,
        seq_len: int | None = None,
        heads: PosInt = 4,
        chunk: PosInt = 32,
        bias: bool = True,
        blocked_from: Annotated[
            int | None,
            Opt(minimum=1, description="sequences longer than this run the chunk-blocked softmax"),
        ] = None,
    ):
        super().__init__()
        check_positive_int(d_model=d_model, heads=heads, chunk=chunk)
        if blocked_from is not None:
            check_positive_int(blocked_from=blocked_from)
        self.blocked_from = blocked_from
        check_divides("heads", heads, "d_model", d_model)
        self.d_model, self.heads, self.head_dim, self.chunk = d_model, heads, d_model // heads, chunk
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.w_proj = nn.Linear(d_model, d_model, bias=False)
        self.beta_proj = nn.Linear(d_model, heads, bias=True)
        self.out = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: (B, T, d_model) -> (B, T, d_model), causal."""
        check_input(x, self.d_model, "PaTHAttention")
        Bsz, T, _ = x.shape
        q, k, v = self.qkv(x).view(Bsz, T, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        w = F.normalize(self.w_proj(x).view(Bsz, T, self.heads, self.head_dim).transpose(1, 2), dim=-1, eps=1e-6)
        beta = 2 * torch.sigmoid(self.beta_proj(x)).transpose(1, 2)  # (B, H, T)
        if self.blocked_from is not None and T > self.blocked_from:
            o = path_ops.path_attention_blocked(q, k, v, w, beta, chunk=self.chunk)
        else:
            o = path_attention(q, k, v, w, beta, chunk=self.chunk)
        return self.out(o.transpose(1, 2).reshape(Bsz, T, self.d_model))
