"""What a model or mixer can do beyond ``forward``, as runtime-checkable protocols.

Probes (task metrics, Jacobian diagnostics, the papers' checks) ask ``isinstance(m, LagOperator)`` instead
of reading a registered name or testing attribute strings, so a new mixer gains a probe by implementing the
methods, and a renamed method fails the protocol check instead of silently skipping the probe.

``isinstance`` with a runtime-checkable protocol checks that the members exist, not their signatures; the
signatures below are the contract the probes rely on (tests/test_capabilities.py checks the mixers).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch
from torch import nn


@runtime_checkable
class SoleMixer(Protocol):
    """A model that is one mixer and nothing else (no embedding, norm or residual): what holds for the mixer
    holds for the model, so probes of the mixer's closed forms apply to the model's outputs."""

    def sole_mixer(self) -> nn.Module:
        """The mixer the model consists of."""


@runtime_checkable
class InteractionOperator(Protocol):
    """A multi-head mixer with a materialised input-output operator (heads paper, Def. 4.1)."""

    heads: int

    def interaction_operator(self) -> torch.Tensor:
        """K with y_i = sum_j K[i, j] x_j: (n, n, d_out, d_in)."""


@runtime_checkable
class LagOperator(Protocol):
    """A linear time-invariant mixer whose lag-tau Jacobian has a closed form (heads paper, Thm 5.1 (1))."""

    def lag_operator(self, tau: int) -> torch.Tensor:
        """dy_{i+tau}/dx_i = C A^tau B: (d_out, d_in)."""

    def spectral_radius(self) -> float:
        """rho(A)."""

    def jacobian_bound(self, tau: int) -> float:
        """||C||_2 ||B||_2 ||A||_2^tau, an upper bound on ||lag_operator(tau)||_2."""


@runtime_checkable
class ValueOutputProduct(Protocol):
    """Attention whose value and output maps compose to one matrix (the uniform-attention estimate)."""

    def value_output_product(self) -> torch.Tensor:
        """W_O W_V: (d_out, d_in)."""


@runtime_checkable
class LastOutput(Protocol):
    """A causal mixer that computes only the last position's output, cheaper than the full forward."""

    def forward_last(self, x: torch.Tensor) -> torch.Tensor:
        """x: (B, T, d_in) -> y_{T-1}: (B, d_out), equal to forward(x)[:, -1]."""


@runtime_checkable
class StepMode(Protocol):
    """A causal mixer that runs token by token from a state (recurrent inference)."""

    def init_state(self, batch: int, dtype=torch.float32, device=None):
        """The state before the first token."""

    def step(self, x_t: torch.Tensor, state):
        """x_t: (B, d) -> (y_t: (B, d), next state)."""


@runtime_checkable
class TokenInput(Protocol):
    """A mixer that may read the token ids beside the hidden states (e.g. learned per-token rotation angles);
    it does when ``needs_tokens`` is true."""

    needs_tokens: bool


@runtime_checkable
class RandomAngles(Protocol):
    """A mixer that draws random quantities at every forward from a generator of its own (random accumulated
    rotations); ``reseed`` restarts it, so that an evaluation repeats (rotations spec U17)."""

    def reseed(self, seed: int | None = None) -> None:
        """Restart the generator from ``seed`` (None: the mixer's configured seed)."""


@runtime_checkable
class LayerwiseEdgeAttention(Protocol):
    """A stack of attention layers over a graph's edges that reports its internals (the cascade transformer):
    per-layer bilinear maps and parameter groups, and ``forward(x, internals=True)`` with per-layer tensors."""

    def forward(self, x, internals: bool = False) -> dict:
        """x = (adj (B, n, n), root (B,)) -> {"z": (B, L+1, d), ...}; with ``internals`` also "P" (B, L, n),
        "pre" and "post" (B, L, d)."""

    def attention_maps(self, c: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(W_QK, W_OV) of the layer applied at step c, each (d, d)."""

    def layer_parameters(self) -> list[list[nn.Parameter]]:
        """The parameters of each distinct layer (one list when the layers are tied)."""


@runtime_checkable
class LayerStack(Protocol):
    """A token model built as embedding -> blocks -> head (the decoder LM, the sequence classifier): the
    pieces the influence and gradient-flow probes hook into (sessa spec §3.6 D6, D8)."""

    def token_embedding(self) -> nn.Module:
        """The module that maps token ids (B, T) to the first hidden states e: (B, T, d)."""

    def layers(self) -> nn.ModuleList:
        """The blocks, in order; block l maps (B, T, d) -> (B, T, d)."""

    def mixers(self) -> list[nn.Module]:
        """The mixer of each block, in order (its input is what the routing probes read)."""


@runtime_checkable
class FeedbackRouting(Protocol):
    """Sessa's feedback branch (sessa spec §2.2), evaluated on the mixer's input a: (B, T, D). A mixer built
    without the branch has ``feedback`` False and cannot answer the two methods."""

    feedback: bool
    gamma_max: float

    def gamma(self, a: torch.Tensor) -> torch.Tensor:
        """gamma_t: (B, T)."""

    def feedback_weights(self, a: torch.Tensor) -> torch.Tensor:
        """alpha_fb: (B, T, T), a softmax over j < t per row, row 0 zero."""


@runtime_checkable
class AttentionWeights(Protocol):
    """Causal softmax attention that can return its attention probabilities (without changing ``forward``)."""

    def attention_weights(self, x: torch.Tensor) -> torch.Tensor:
        """x: (B, T, d) -> alpha: (B, H, T, T), row t a distribution over j <= t."""


@runtime_checkable
class SelectiveDecay(Protocol):
    """A selective SSM with a scalar decay per head (Mamba2): h_t = exp(A_h Delta_t) h_{t-1} + ..."""

    def step_sizes(self, u: torch.Tensor) -> torch.Tensor:
        """u: (B, L, d) -> Delta: (B, L, H), the positive step sizes the forward uses."""

    def decay_rates(self) -> torch.Tensor:
        """A: (H,), negative."""
