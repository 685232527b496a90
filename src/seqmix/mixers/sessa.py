"""Sessa: attention inside a feedback loop (sessa spec §2.1-2.3).

Mixer, on a_bar: (B, T, D):
    f       = MHA_RoPE(a_bar)                   forward branch: causal softmax over j <= t, RoPE (interleaved
                                                pairs, base 10000) on q_f, k_f; heads concatenated, out_proj
                                                (no bias) when heads > 1
    alpha   = softmax_{j<t}(D^-1/2 q_b[t] . k_b[j])   feedback branch: ONE head of full width D, no positional
                                                encoding, strictly past; row 0 is empty and set to 0
    gamma_t = gamma_max tanh(gamma_bias + a_bar_t . w_gamma)       gamma_bias init 1.0, gamma_max = 0.999
    s       = (I - B_fb)^{-1} f,  B_fb[t, j] = gamma_t alpha[t, j]    (seqmix.ops.feedback_solve; alpha and the
                                                solve in one autograd Function that saves only alpha)
``feedback=False`` (registered as ``sessa_nofb``) drops proj_fb and gamma and returns s = f (the Sec. 5.2
ablation; fewer parameters, not re-matched, as in the paper).

Block (``SessaBlock``, any mixer inside): y = x + (mixer(GELU(a)) * g) W_out + b_out, (a, g) = LN(x) W_in + b_in.
It is the Sessa decoder layer and, with another mixer, the spec's ``macro=shared`` baselines (§2.4, §2.5).
"""

from __future__ import annotations

import math
from typing import Annotated, ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from ..ops import feedback_solve as fs_ops
from ..ops import rotation_attention as ra_ops
from ..ops.dispatch import BackendOf
from ..ops.rotary import reference as rotary
from ..options import Opt, PosFloat, PosInt
from ..registry import register_mixer
from .base import check_divides, check_input, check_positive_int, register_preset


@register_mixer("sessa")
class SessaMixer(nn.Module):
    example_options: ClassVar[dict] = {}  # Mixer clause 2
    # the forward branch runs the rotation-attention op only where its kernel runs (else SDPA, which the op's
    # automatic choice there, "reference", names too); the feedback branch always calls its op
    backend = BackendOf(select=lambda m: (ra_ops.OP, fs_ops.ATTENTION_OP) if m.feedback else (ra_ops.OP,))
    causal = True
    native_block = "gated"  # the Sessa block is its own (models.blocks, block: native)
    # checked on every leaf before any job (config.leaf_rules): heads split the width into heads of even width
    # (RoPE rotates pairs of channels)
    divides: ClassVar[dict] = {"heads": "d_model / 2"}

    def __init__(
        self,
        d_model: int,
        *,
        layer_idx: int = 0,
        seq_len: int | None = None,
        heads: PosInt = 4,
        gamma_max: Annotated[float, Opt(exclusive_minimum=0, exclusive_maximum=1)] = 0.999,
        feedback: bool = True,
        rope_base: PosFloat = 10000.0,
    ):
        super().__init__()
        check_positive_int(d_model=d_model, heads=heads)
        check_divides("heads", heads, "d_model", d_model)
        dh = d_model // heads
        if dh % 2:
            raise ValueError(f"head_dim = d_model / heads = {dh} must be even for RoPE")
        if not 0 < gamma_max < 1:
            raise ValueError(f"gamma_max must lie in (0, 1), got {gamma_max!r}")
        self.d_model, self.heads, self.head_dim, self.gamma_max, self.feedback = d_model, heads, dh, gamma_max, feedback
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=True)
        self.out_proj = nn.Linear(d_model, d_model, bias=False) if heads > 1 else nn.Identity()
        self.register_buffer("omega", rotary.rope_frequencies(dh, rope_base), persistent=False)
        if feedback:
            self.proj_fb = nn.Linear(d_model, 2 * d_model, bias=True)
            self.w_gamma = nn.Linear(d_model, 1, bias=False)
            self.gamma_bias = nn.Parameter(torch.tensor(1.0))

    # ------------------------------------------------------------------ pieces
    def _rope_qk(self, q: torch.Tensor, k: torch.Tensor, T: int, dtype: torch.dtype):
        """q and k (B, H, T, d_h) rotated by RoPE (interleaved), as the torch path of the forward branch does."""
        cos, sin = rotary.cos_sin(rotary.rope_angles(T, self.omega), dtype)
        return rotary.rotate(q, cos, sin, "interleaved"), rotary.rotate(k, cos, sin, "interleaved")

    def _forward_qkv(self, a: torch.Tensor):
        """(q, k, v) of the forward branch, q and k rotated by RoPE: (B, H, T, d_h) each."""
        Bsz, T, _ = a.shape
        q, k, v = self.qkv(a).view(Bsz, T, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        return (*self._rope_qk(q, k, T, a.dtype), v)

    def forward_branch(self, a: torch.Tensor) -> torch.Tensor:
        """f = out_proj(causal RoPE multi-head attention of a): (B, T, D). Through the rotation-attention kernel
        where it runs (CUDA); elsewhere rotate + SDPA, as always."""
        Bsz, T, D = a.shape
        q, k, v = self.qkv(a).view(Bsz, T, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        if ra_ops.OP.backend_on(a.device) in ("fused", "triton"):
            o = ra_ops.rotation_attention(q, k, v, ra_ops.rope_steps(T, self.omega), layout="interleaved")
            return self.out_proj(o.transpose(1, 2).reshape(Bsz, T, D))
        q, k = self._rope_qk(q, k, T, a.dtype)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out_proj(o.transpose(1, 2).reshape(Bsz, T, D))

    def attention_weights(self, a: torch.Tensor) -> torch.Tensor:
        """The forward branch's causal attention probabilities on a: (B, H, T, T), zero above the diagonal
        (sessa spec §3.6 D7; ``forward_branch`` applies these to v)."""
        q, k, _ = self._forward_qkv(a)
        T = a.shape[1]
        future = torch.ones(T, T, dtype=torch.bool, device=a.device).triu(1)
        logits = (q @ k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        return torch.softmax(logits.masked_fill(future, float("-inf")), dim=-1)

    def gamma(self, a: torch.Tensor) -> torch.Tensor:
        """gamma_t in (-gamma_max, gamma_max): (B, T)."""
        return self.gamma_max * torch.tanh(self.gamma_bias + self.w_gamma(a)[..., 0])

    def feedback_weights(self, a: torch.Tensor) -> torch.Tensor:
        """alpha_fb: (B, T, T), softmax over j < t, row 0 all zero."""
        qb, kb = self.proj_fb(a).chunk(2, dim=-1)
        return fs_ops.feedback_alpha(qb, kb, self.d_model**-0.5)

    def forward(self, a: torch.Tensor) -> torch.Tensor:
        """a (= GELU of the block's input branch): (B, T, D) -> s: (B, T, D), causal. The feedback branch
        saves one T x T (alpha) per sequence for backward (ops/feedback_solve/saved_once.py)."""
        check_input(a, self.d_model, "SessaMixer")
        f = self.forward_branch(a)
        if not self.feedback:
            return f
        qb, kb = self.proj_fb(a).chunk(2, dim=-1)
        return fs_ops.feedback_attention_solve(f, self.gamma(a), qb, kb, self.d_model**-0.5)

    # ------------------------------------------------------------------ decoding, O(t D) per step
    def init_state(self, batch: int, dtype=torch.float32, device=None) -> dict:
        e = torch.zeros(batch, 0, self.d_model, dtype=dtype, device=device)
        return {"t": 0, "k": e, "v": e, "kb": e, "s": e}

    def step(self, a_t: torch.Tensor, state: dict):
        """a_t: (B, D) -> (s_t: (B, D), state). Caches rotated k_f, v, k_b and the solved past s."""
        Bsz, D = a_t.shape
        t = state["t"]
        q, k, v = self.qkv(a_t).view(Bsz, 3, self.heads, self.head_dim).unbind(1)  # (B, H, dh)
        cos, sin = rotary.cos_sin(rotary.rope_angles(1, self.omega, offset=t)[0], a_t.dtype)
        q, k = rotary.rotate(q, cos, sin, "interleaved"), rotary.rotate(k, cos, sin, "interleaved")
        K = torch.cat((state["k"], k.reshape(Bsz, 1, D)), 1)
        V = torch.cat((state["v"], v.reshape(Bsz, 1, D)), 1)
        Kh, Vh = K.view(Bsz, t + 1, self.heads, self.head_dim), V.view(Bsz, t + 1, self.heads, self.head_dim)
        att = torch.softmax(torch.einsum("bhd,bjhd->bhj", q, Kh) / math.sqrt(self.head_dim), dim=-1)
        f = self.out_proj(torch.einsum("bhj,bjhd->bhd", att, Vh).reshape(Bsz, D))
        new = {"t": t + 1, "k": K, "v": V, "kb": state["kb"], "s": state["s"]}
        s = f
        if self.feedback:
            qb, kb = self.proj_fb(a_t).chunk(2, dim=-1)
            if t > 0:
                alpha = torch.softmax(torch.einsum("bd,bjd->bj", qb, state["kb"]) * D**-0.5, dim=-1)
                g = self.gamma(a_t[:, None])[:, 0]
                s = f + g[:, None] * torch.einsum("bj,bjd->bd", alpha, state["s"])
            new["kb"] = torch.cat((state["kb"], kb[:, None]), 1)
        new["s"] = torch.cat((state["s"], s[:, None]), 1)
        return s, new


# gamma_max is fixed too: without the feedback branch there is no gamma for it to bound
SessaNoFeedback = register_preset(
    "sessa_nofb",
    SessaMixer,
    "Sessa with the feedback branch removed (s = f): a gated single-read RoPE attention mixer.",
    "SessaNoFeedback",
    feedback=False,
    gamma_max=0.999,
)


class SessaBlock(nn.Module):
    """The Sessa decoder layer around any mixer: x + (mixer(GELU(a)) * g) W_out + b_out, (a, g) = LN(x) W_in + b_in.
    (B, T, D) -> (B, T, D). No separate MLP: the block is itself the gated MLP."""

    def __init__(self, d_model: int, mixer: nn.Module, eps: float = 1e-5):
        super().__init__()
        self.norm = nn.LayerNorm(d_model, eps=eps)
        self.w_in = nn.Linear(d_model, 2 * d_model, bias=True)
        self.mixer = mixer
        self.w_out = nn.Linear(d_model, d_model, bias=True)

    def forward(self, x: torch.Tensor, **kw) -> torch.Tensor:
        a, g = self.w_in(self.norm(x)).chunk(2, dim=-1)
        return x + self.w_out(self.mixer(F.gelu(a), **kw) * g)

    def init_state(self, batch: int, dtype=torch.float32, device=None):
        return self.mixer.init_state(batch, dtype, device)

    def step(self, x_t: torch.Tensor, state):
        a, g = self.w_in(self.norm(x_t)).chunk(2, dim=-1)
        s, state = self.mixer.step(F.gelu(a), state)
        return x_t + self.w_out(s * g), state
