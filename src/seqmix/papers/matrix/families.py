"""Which closed-form memory law each mixer's influence profile is drawn against (``influence_curves``).

This is the matrix paper's own summary of what the other papers derive, keyed by the registered mixer name
(``model.mixer.name`` of a leaf's config), not by the variant label:

- ``ssm``: a (selective) state-space recurrence h_t = A_t h_{t-1} + B_t x_t; its influence decays
  geometrically, I(lag) ~ rho^lag, so the overlay is exp(-r lag) with the leaf's fitted rate r
  (rho = e^-r; ``exp_rate`` is fitted in natural log).
- ``attention``: softmax attention over the causal prefix; with attention weights spread over the prefix the
  influence of one position falls like 1/lag (the overlay, one per panel).
- ``sessa``: Sessa's feedback through attention gives a power law I(lag) ~ lag^-p; the overlay is drawn with
  the fitted exponent p (dashed).
- ``other``: no closed form is drawn (linear attention, the bidirectional wrapper, anything unlisted).
"""

from __future__ import annotations

SSM, ATTENTION, SESSA, OTHER = "ssm", "attention", "sessa", "other"

MIXER_FAMILY: dict[str, str] = {
    # state-space recurrences: geometric decay rho^lag
    "s4d": SSM,
    "s6": SSM,
    "mamba": SSM,
    "mamba2": SSM,
    "linear_ssm": SSM,
    "b2s6": SSM,
    "b2s6_real": SSM,
    "b2s6_nobias": SSM,
    # softmax attention and its positional variants: 1/lag
    "softmax_attention": ATTENTION,
    "mha": ATTENTION,
    "nope": ATTENTION,
    "rope": ATTENTION,
    "rope_qkv": ATTENTION,
    "alibi": ATTENTION,
    "so2_random_qk": ATTENTION,
    "so2_random_qkv": ATTENTION,
    "so2_learned_qk": ATTENTION,
    "so2_learned_qkv": ATTENTION,
    "path": ATTENTION,
    "sessa_nofb": ATTENTION,  # Sessa without its feedback branch is a gated single-read attention
    # Sessa: power law lag^-p
    "sessa": SESSA,
}


def family_of(mixer_name: str) -> str:
    """The family of a registered mixer name (``other`` when unlisted)."""
    return MIXER_FAMILY.get(str(mixer_name), OTHER)
