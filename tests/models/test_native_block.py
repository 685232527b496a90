"""``block: native`` (the sessa spec's macro=native, §2.4-2.5 Option B): each mixer in its own standard block.

Guards: on the old main ``block: native`` was refused (ValueError), so every test here but the last fails
there; the closed forms fail if a native block gains or loses a sub-layer (an MLP on Mamba2, a missing second
norm on the Transformer); the ``gated`` checks fail if the shared layout (what e1/e2/e3 run) changes.
"""

from __future__ import annotations

import pytest
import torch

from seqmix.mixers.sessa import SessaBlock
from seqmix.models.blocks import ResidualBlock, RMSNorm, make_blocks
from seqmix.models.lm import DecoderLM
from seqmix.models.sizing import count_parameters

D = 32
ATTN = {"name": "softmax_attention", "heads": 4, "position": "rope"}
MAMBA2 = {"name": "mamba2", "d_state": 8, "headdim": 16}


def blocks(mixer: dict, block: str, n_layers=1, mlp_hidden=4 * D):
    return make_blocks(D, n_layers, mixer, block, mlp_hidden, "layernorm", None, None)


def transformer_native(D: int) -> int:
    """pre-LN MHA (qkv and out with bias: 4D^2 + 4D) + MLP D -> 4D -> D (8D^2 + 5D) + two LayerNorms (4D)."""
    return 12 * D * D + 13 * D


def mamba2_native(D: int, N: int, headdim: int, G: int = 1, expand: int = 2, d_conv: int = 4) -> int:
    """RMSNorm (D) + Mamba2: in_proj D (2 d_inner + 2GN + H), depthwise conv with bias (d_conv + 1)(d_inner + 2GN),
    dt_bias, A_log, D (3H), gated RMSNorm (d_inner), out_proj d_inner D; d_inner = expand D, H = d_inner / headdim.
    At expand 2, d_conv 4: 6D^2 + (2GN + H) D + 13D + 10GN + 3H."""
    di = expand * D
    H = di // headdim
    return D + D * (2 * di + 2 * G * N + H) + (d_conv + 1) * (di + 2 * G * N) + 3 * H + di + di * D


def test_native_transformer_block_is_pre_ln_attention_plus_gelu_mlp():
    (b,) = blocks(ATTN, "native")
    assert isinstance(b, ResidualBlock)
    assert isinstance(b.norm1, torch.nn.LayerNorm) and isinstance(b.norm2, torch.nn.LayerNorm)
    assert [type(m).__name__ for m in b.mlp] == ["Linear", "GELU", "Linear"]
    assert b.mlp[0].out_features == 4 * D and b.mlp[1].approximate == "none"  # ratio 4, exact (erf) GELU
    assert count_parameters(b) == transformer_native(D)
    assert transformer_native(64) == 12 * 64 * 64 + 13 * 64  # "about 12 D^2" (sessa spec §2.4 Option B)


def test_native_mamba2_block_is_rmsnorm_and_mixer_without_mlp():
    (b,) = blocks(MAMBA2, "native")
    assert isinstance(b, ResidualBlock) and b.mlp is None and isinstance(b.norm1, RMSNorm)
    assert count_parameters(b) == mamba2_native(D, 8, 16)
    assert mamba2_native(D, 8, 16) == 6 * D * D + (2 * 8 + 4) * D + 13 * D + 10 * 8 + 3 * 4


def test_native_sessa_is_its_own_gated_block():
    (b,) = blocks({"name": "sessa", "heads": 4}, "native")
    assert isinstance(b, SessaBlock) and count_parameters(b) == 9 * D * D + 11 * D + 1


@pytest.mark.parametrize("mixer", [ATTN, MAMBA2, {"name": "sessa", "heads": 4}])
def test_native_blocks_run_causally_with_gradients(mixer):
    torch.manual_seed(0)
    model = DecoderLM(seq_len=12, d_model=D, n_layers=2, mixer=mixer, block="native", vocab_size=20)
    tokens = torch.randint(0, 20, (2, 12))
    logits = model(tokens)
    assert logits.shape == (2, 12, 20) and torch.isfinite(logits).all()
    logits.square().mean().backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())
    changed = tokens.clone()
    changed[:, 8:] = (changed[:, 8:] + 1) % 20
    assert torch.allclose(model(changed)[:, :8], logits[:, :8], atol=1e-5)


def test_native_refused_for_a_mixer_without_its_own_block():
    with pytest.raises(ValueError, match=r"model.block: 'native'.*'s6'.*residual_mlp"):
        blocks({"name": "s6", "d_state": 4}, "native")


def test_shared_layout_unchanged():
    """block: gated (macro=shared, what e1/e2/e3 run) is still the Sessa block around each mixer, with the
    counts it had: Transformer 7D^2 + 9D (qkv and out with bias), Sessa 9D^2 + 11D + 1."""
    (t,) = blocks(ATTN, "gated")
    (s,) = blocks({"name": "sessa", "heads": 4}, "gated")
    assert isinstance(t, SessaBlock) and isinstance(s, SessaBlock)
    assert count_parameters(t) == 7 * D * D + 9 * D
    assert count_parameters(s) == 9 * D * D + 11 * D + 1
    (r,) = blocks(ATTN, "residual_mlp")
    assert count_parameters(r) == transformer_native(D)  # the generic block, unchanged (layernorm, 4D MLP)
