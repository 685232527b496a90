"""Causal multi-head softmax attention as a bare mixer (heads paper, Exp. II; heads spec §2.3.4), and the
single-head causal softmax layer of Thm 5.1 / Eq. (9) (heads spec §2.3.5).

``mha``: a thin wrapper around ``torch.nn.MultiheadAttention(d, heads, bias=True, batch_first=True)`` with
PyTorch's default init (in_proj Xavier-uniform, out_proj Kaiming-uniform, zero biases), self-attention
y = MHA(x, x, x) under a causal mask; no positional encoding, residual, LayerNorm or MLP, mirroring the
bare linear SSM. ``forward_last`` computes only the last output y_{T-1} (one query against every key),
which is all Exp. II measures: O(T d^2) instead of O(T^2 d), and the causal mask changes nothing for the
last position.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import nn

from ..options import PosInt
from ..registry import register_mixer


@register_mixer("mha")
class CausalMHA(nn.Module):
    causal: ClassVar[bool] = True
    # pure torch: the value backend_report gives a model of no declared backend, so the run tags stay the same
    backend: ClassVar[str] = "torch-reference"
    example_options: ClassVar[dict] = {}  # Mixer clause 2
    divides: ClassVar[dict] = {"heads": "d_model"}  # checked on every leaf before any job (config.leaf_rules)

    def __init__(self, d_model: int, *, layer_idx: int = 0, seq_len: int | None = None, heads: PosInt = 4):
        super().__init__()
        if not isinstance(heads, int) or heads < 1 or d_model % heads:
            raise ValueError(f"heads must be a positive divisor of d={d_model}, got {heads!r}")
        self.d, self.heads = d_model, heads
        self.attn = nn.MultiheadAttention(d_model, heads, bias=True, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: (B, T, d) -> (B, T, d), causal."""
        if x.shape[-1] != self.d:
            raise ValueError(f"expected input (..., T, {self.d}), got {tuple(x.shape)}")
        T = x.shape[1]
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)  # True = not allowed
        return self.attn(x, x, x, attn_mask=mask, need_weights=False)[0]

    def forward_last(self, x: torch.Tensor) -> torch.Tensor:
        """y_{T-1} only: (B, T, d) -> (B, d); equals forward(x)[:, -1]."""
        if x.shape[-1] != self.d:
            raise ValueError(f"expected input (..., T, {self.d}), got {tuple(x.shape)}")
        return self.attn(x[:, -1:], x, x, need_weights=False)[0][:, 0]

    def value_output_product(self) -> torch.Tensor:
        """W_O W_V (d, d): the uniform-attention value path, so ||dy_{T-1}/dx_0||_F is about ||W_O W_V||_F / T
        at initialisation (heads spec §4.5)."""
        W_V = self.attn.in_proj_weight[2 * self.d :]
        return self.attn.out_proj.weight @ W_V


class CausalSoftmaxHead(nn.Module):
    """Eq. (9): y_i = sum_{t <= i} alpha_it V x_t, alpha_i. = softmax_{t <= i}(q_i^T k_t), q = W_Q x, k = W_K x,
    with UNSCALED logits (as in Thm 5.1). Parameters are given, not learned: (W_Q, W_K: r x d, V: p x d)."""

    def __init__(self, W_Q: torch.Tensor, W_K: torch.Tensor, V: torch.Tensor):
        super().__init__()
        self.W_Q, self.W_K, self.V = W_Q, W_K, V

    def weights(self, x: torch.Tensor) -> torch.Tensor:
        """alpha: (L, L) for one sequence x: (L, d)."""
        S = (x @ self.W_Q.T) @ (x @ self.W_K.T).T
        L = x.shape[0]
        S = S.masked_fill(torch.ones(L, L, dtype=torch.bool).triu(1), float("-inf"))
        return torch.softmax(S, dim=-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: (L, d) -> y: (L, p)."""
        return self.weights(x) @ (x @ self.V.T)
